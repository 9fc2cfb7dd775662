/**
 * Load shedding. Two signals answer `overloaded` 503 + Retry-After instead of
 * letting work queue without bound:
 * - the store's worker queue (pages and follow snapshots go through it);
 * - event-loop lag: a timer that should fire every `sampleMs` measures how
 *   late it fires; the lag is smoothed (it halves each quiet tick), so one
 *   long stall sheds for a few ticks and sustained lag sheds until it clears.
 */
import { PagerError } from '../core/errors.js';
import type { Store } from '../store-types.js';
import type { Readiness } from './readiness.js';

export class LoadMonitor {
  private timer: NodeJS.Timeout | undefined;
  private last = 0;
  private smoothed = 0;
  constructor(private readonly sampleMs: number) {}

  start(): void {
    if (this.timer !== undefined) return;
    this.last = performance.now();
    this.timer = setInterval(() => this.tick(), this.sampleMs);
    this.timer.unref();
  }

  private tick(): void {
    const now = performance.now();
    const lag = Math.max(0, now - this.last - this.sampleMs);
    this.last = now;
    this.smoothed = Math.max(lag, this.smoothed / 2);
  }

  /** Forget the lag seen so far (the warm-up's, once it is done). */
  reset(): void {
    this.smoothed = 0;
    this.last = performance.now();
  }

  /** Smoothed event-loop lag, ms. */
  get lagMs(): number {
    // A stall still in progress (no tick yet) counts too.
    const pending = Math.max(0, performance.now() - this.last - this.sampleMs);
    return Math.max(this.smoothed, pending);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

export interface OverloadPolicy {
  monitor: LoadMonitor;
  store: Store;
  /** 0 disables the lag check. */
  maxLagMs: number;
  /** undefined: half the pool's own queue bound, so we answer 503 before the pool refuses. */
  maxPoolQueue: number | undefined;
  retryAfterSeconds: number;
  /** While warming up, the lag is the warm-up's own (JIT warm-up on this thread): requests are served, not shed for it. */
  readiness?: Readiness;
}

/** Throw `overloaded` when the event loop lags (all guarded routes). */
export function checkLoop(p: OverloadPolicy): void {
  if (p.maxLagMs > 0 && (p.readiness === undefined || p.readiness.state === 'ready')) {
    const lag = p.monitor.lagMs;
    if (lag > p.maxLagMs) {
      throw new PagerError('overloaded', `server is overloaded (event-loop lag ${Math.round(lag)} ms); retry shortly`, { retryAfter: p.retryAfterSeconds });
    }
  }
}

/** Throw `overloaded` when the worker queue is full (routes that use the pool). */
export function checkPool(p: OverloadPolicy): void {
  const pool = p.store.stats().pool;
  const bound = p.maxPoolQueue ?? Math.max(1, Math.floor(pool.maxQueue / 2));
  if (pool.queueSize >= bound) {
    throw new PagerError('overloaded', `server is overloaded (${pool.queueSize} page tasks queued); retry shortly`, { retryAfter: p.retryAfterSeconds });
  }
}

/**
 * How long a shed answer is held, per connection: `baseMs` for the first
 * shed in a row on a connection, twice as long for each next one, up to
 * `maxMs`; an admitted request starts the streak again. A client that
 * ignores Retry-After on a keep-alive connection resends the moment it is
 * answered; held a fixed 500 ms, 256 such connections still made 500
 * requests a second to shed, and on a CPU-starved machine answering those
 * took most of what the server got (measured: ~1 ms each, at a tenth of a
 * core), so the admitted pages waited behind them. Backing off per
 * connection sheds a persistent client geometrically less often; the
 * connections being served keep the slots busy, so goodput holds.
 */
export class ShedPacer {
  private readonly streak = new WeakMap<object, number>();
  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {}

  /** The hold for a request on `conn` shed now (and counts it). */
  shed(conn: object | undefined): number {
    if (typeof conn !== 'object' || conn === null) return this.baseMs;
    const k = this.streak.get(conn) ?? 0;
    this.streak.set(conn, k + 1);
    return Math.min(this.maxMs, this.baseMs * 2 ** Math.min(k, 30));
  }

  admitted(conn: object | undefined): void {
    if (typeof conn === 'object' && conn !== null) this.streak.delete(conn);
  }
}

/**
 * Run a shedding check; when it sheds, answer no sooner than `delayMs` after
 * it started. Clients that ignore Retry-After resend the moment they are
 * answered: an instant 503 invites the next request at once, and answering
 * thousands of them a second takes the event loop from the admitted pages
 * (receive livelock). Held, a connection is shed at most 1000/delayMs times
 * a second, for the price of a timer. Clients that honour Retry-After wait
 * that much longer.
 */
export async function holdShed(check: () => void | Promise<void>, delayMs: number | (() => number)): Promise<void> {
  const t0 = performance.now();
  try {
    await check();
  } catch (err) {
    const left = t0 + (typeof delayMs === 'number' ? delayMs : (err as { code?: unknown }).code === 'overloaded' ? delayMs() : 0) - performance.now();
    if (left > 1 && (err as { code?: unknown }).code === 'overloaded') await new Promise((r) => setTimeout(r, left));
    throw err;
  }
}
