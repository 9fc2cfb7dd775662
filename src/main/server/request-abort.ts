/**
 * A page request's abort, as the direct page path (fast-page.ts) needs it:
 * the handler timeout and a client that leaves abort it, and the page build
 * reads it (store-types.ts PageSignal). Node's AbortSignal is an EventTarget,
 * and making one a request was ~1-1.7% of the main thread's CPU at 16
 * connections (a CPU profile: createAbortSignal), for a signal that almost
 * never aborts and that nothing listens to unless the page waits for room
 * (decode-budget.ts) or for an admission slot. So the AbortController and its
 * signal are made only when something listens, asks for the signal, or aborts:
 * until then the request is simply not aborted.
 */
import type { PageSignal } from '../store-types.js';

export class RequestAbort implements PageSignal {
  private controller: AbortController | null = null;

  get aborted(): boolean {
    return this.controller !== null && this.controller.signal.aborted;
  }

  get reason(): unknown {
    return this.controller === null ? undefined : this.controller.signal.reason;
  }

  /** The request's AbortSignal (made now when nothing asked for it before). */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    return this.controller.signal;
  }

  throwIfAborted(): void {
    if (this.controller !== null) this.controller.signal.throwIfAborted();
  }

  /** As AbortController#abort: the first abort holds (with no reason, an AbortError). */
  abort(reason?: unknown): void {
    this.controller ??= new AbortController();
    this.controller.abort(reason);
  }

  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void {
    this.signal.addEventListener(type, listener, options);
  }

  removeEventListener(type: 'abort', listener: () => void): void {
    this.controller?.signal.removeEventListener(type, listener);
  }
}
