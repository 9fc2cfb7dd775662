/**
 * The stored bytes of pages being built at once, bounded (a weighted FIFO
 * gate in front of the worker pool).
 *
 * Why: a page's memory is held from its first slice's result until the last
 * one is in and the page is assembled (each slice's arena, then the body),
 * about three times the page's stored bytes, and the pool finishes pages no
 * faster when more are started: two workers decode two slices whatever is
 * queued. Without the gate, 16 callers asking a 5 MB tail page at once held
 * 16 pages' results and bodies: peak RSS 530 MB in process, against 185 MB
 * with one such page built at a time, at the same pages/s
 * (docs/benchmarks.md, "Pages in flight bounded by their bytes"). The HTTP
 * server bounds its requests (server/admission.ts); this bounds a store used
 * as a library too, and the pages a server's admitted requests build.
 *
 * Rules: a page is let in when the bytes in flight plus its own fit the
 * budget, or when nothing is in flight (a page larger than the budget is
 * built alone, never refused); in arrival order (a large page waiting at
 * the head is not starved by small ones behind it); a caller whose signal
 * aborts while it waits leaves the queue at once.
 */
import type { PageSignal } from '../store-types.js';

interface Waiter {
  bytes: number;
  resolve: (release: () => void) => void;
  reject: (err: unknown) => void;
  forget: () => void;
}

export class DecodeBudget {
  private inFlight = 0;
  private pages = 0;
  private readonly queue: Waiter[] = [];
  /** Most stored bytes that were in flight at once (tests, metrics). */
  peakBytes = 0;

  constructor(readonly budgetBytes: number) {}

  /** Stored bytes and pages being built now, and pages waiting for room. */
  stats(): { bytes: number; pages: number; waiting: number; peakBytes: number; budgetBytes: number } {
    return { bytes: this.inFlight, pages: this.pages, waiting: this.queue.length, peakBytes: this.peakBytes, budgetBytes: this.budgetBytes };
  }

  /** Waits for room for a page of `bytes` stored bytes; the function returned gives it back (once). */
  acquire(bytes: number, signal?: PageSignal): Promise<() => void> {
    if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
    if (this.queue.length === 0 && this.fits(bytes)) return Promise.resolve(this.enter(bytes));
    return new Promise((resolve, reject) => {
      const w: Waiter = { bytes, resolve, reject, forget: () => undefined };
      if (signal !== undefined) {
        const onAbort = () => {
          const i = this.queue.indexOf(w);
          if (i >= 0) this.queue.splice(i, 1);
          reject(signal.reason);
          // The head may have been the one holding the others back.
          this.drain();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        w.forget = () => signal.removeEventListener('abort', onAbort);
      }
      this.queue.push(w);
    });
  }

  private fits(bytes: number): boolean {
    return this.pages === 0 || this.inFlight + bytes <= this.budgetBytes;
  }

  private enter(bytes: number): () => void {
    this.inFlight += bytes;
    this.pages++;
    if (this.inFlight > this.peakBytes) this.peakBytes = this.inFlight;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.inFlight -= bytes;
      this.pages--;
      this.drain();
    };
  }

  private drain(): void {
    while (this.queue.length > 0 && this.fits(this.queue[0].bytes)) {
      const w = this.queue.shift() as Waiter;
      w.forget();
      w.resolve(this.enter(w.bytes));
    }
  }
}
