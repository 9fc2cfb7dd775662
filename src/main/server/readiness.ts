/**
 * Liveness and readiness (SPEC section 6). The server listens before its
 * warm-up (workers starting, the page path's JIT warm-up, the demo corpus),
 * so a port clash fails at once and probes see it come up:
 *
 *   GET /livez              200 as soon as it listens (the process is up)
 *   GET /readyz, /healthz   503 `overloaded` + Retry-After while warming up,
 *                           then 200 (ready to serve at full speed)
 *
 * Requests are served while it warms (more slowly): readiness is a hint for
 * load balancers and orchestrators, not a gate.
 */
import type { FastifyInstance } from 'fastify';
import { PagerError } from '../../core/errors.js';

export type ReadinessState = 'warming' | 'ready' | 'failed';

export class Readiness {
  private current: ReadinessState;
  private why: string;
  private readonly since = performance.now();
  /** Milliseconds from construction to ready (null until then). */
  readyAfterMs: number | null = null;
  private readonly listeners: (() => void)[] = [];

  /** `ready`: true for a server that has nothing to warm up (the library default). */
  constructor(ready = true) {
    this.current = ready ? 'ready' : 'warming';
    this.why = ready ? '' : 'warming up';
    if (ready) this.readyAfterMs = 0;
  }

  get state(): ReadinessState {
    return this.current;
  }

  get reason(): string {
    return this.why;
  }

  markReady(): void {
    if (this.current !== 'warming') return;
    this.current = 'ready';
    this.why = '';
    this.readyAfterMs = performance.now() - this.since;
    for (const fn of this.listeners.splice(0)) fn();
  }

  /** Call `fn` once ready (at once if it is). */
  onReady(fn: () => void): void {
    if (this.current === 'ready') fn();
    else this.listeners.push(fn);
  }

  markFailed(reason: string): void {
    this.current = 'failed';
    this.why = reason;
  }

  /** Ready when `work` resolves, failed when it rejects. */
  follow(work: Promise<unknown>): Promise<void> {
    return work.then(
      () => this.markReady(),
      (err: unknown) => {
        this.markFailed(`warm-up failed: ${(err as Error)?.message ?? String(err)}`);
        throw err;
      },
    );
  }
}

/** /livez, /readyz and /healthz, without auth (root context). */
export function readinessRoutes(app: FastifyInstance, readiness: Readiness, retryAfterSeconds: number): void {
  app.get('/livez', async () => ({ status: 'ok' }));
  const ready = async () => {
    if (readiness.state === 'ready') return { status: 'ok' };
    throw new PagerError('overloaded', readiness.state === 'warming' ? 'not ready: warming up (requests are served, more slowly)' : `not ready: ${readiness.reason}`, {
      retryAfter: retryAfterSeconds,
      status: readiness.state,
    });
  };
  app.get('/readyz', ready);
  app.get('/healthz', ready);
}
