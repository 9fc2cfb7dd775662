/**
 * Load shedding. Two signals answer `overloaded` 503 + Retry-After instead of
 * letting work queue without bound:
 * - the store's worker queue (pages and follow snapshots go through it);
 * - the event loop's own lag, sustained (LoadMonitor).
 */
import { PagerError } from '../../core/errors.js';
import type { Store } from '../store-types.js';
import type { Readiness } from './readiness.js';

/**
 * Cumulative counters, ms, each an upper bound on the work the event loop's
 * thread has done: the loop's active time (not waiting for I/O) and the
 * process's CPU time (all its threads).
 */
export interface WorkSample {
  activeMs: number;
  cpuMs: number;
}

export function processWork(): WorkSample {
  const cpu = process.cpuUsage();
  return { activeMs: performance.eventLoopUtilization().active, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/**
 * The event loop's lag that says the server cannot keep up with its own
 * work. A timer that should fire every `sampleMs` measures how late it
 * fires; two things keep a stall that is not overload from shedding:
 * - Only the lateness the server's own work accounts for counts. A process
 *   the machine did not run (stopped, paused, starved by other processes on
 *   the cores) fires its timers late too, having done nothing; shedding then
 *   only turns the requests that waited through the stall into 503s
 *   (docs/decisions.md). So an interval's lag counts up to the work done in it,
 *   by both bounds of WorkSample: a thread stopped, or woken but not run, in
 *   its I/O wait is idle; one descheduled inside a callback is active but
 *   uses no CPU.
 * - Only sustained lag counts: the loop was that late at the last two
 *   samples (and a stall in progress counts as the next one). One long
 *   callback or collection is over by the time its lag is seen, and the
 *   requests that waited behind it are served at once after; a loop that
 *   cannot keep up is late at every sample, so it is shed after two (about
 *   a second at the default 500 ms bound) and until a sample is on time.
 */
export class LoadMonitor {
  private timer: NodeJS.Timeout | undefined;
  private last = 0;
  private lastWork: WorkSample = { activeMs: 0, cpuMs: 0 };
  /** Own lag at the sample before the last, and at the last, ms. */
  private previous = 0;
  private latest = 0;
  constructor(
    private readonly sampleMs: number,
    private readonly work: () => WorkSample = processWork,
  ) {}

  start(): void {
    if (this.timer !== undefined) return;
    this.reset();
    this.timer = setInterval(() => this.tick(), this.sampleMs);
    this.timer.unref();
  }

  /** `lag` ms of lateness since the last sample, bounded by the work `w` done since. */
  private own(lag: number, w: WorkSample = this.work()): number {
    return Math.max(0, Math.min(lag, w.activeMs - this.lastWork.activeMs, w.cpuMs - this.lastWork.cpuMs));
  }

  private tick(): void {
    const now = performance.now();
    const w = this.work();
    this.previous = this.latest;
    this.latest = this.own(Math.max(0, now - this.last - this.sampleMs), w);
    this.last = now;
    this.lastWork = w;
  }

  /** Forget the lag seen so far (the warm-up's, once it is done). */
  reset(): void {
    this.previous = 0;
    this.latest = 0;
    this.last = performance.now();
    this.lastWork = this.work();
  }

  /** Sustained event-loop lag of the server's own work, ms. */
  get lagMs(): number {
    return this.lagOver(0);
  }

  /**
   * The lag when it may be over `limitMs`, else a bound at or under it: the
   * work clock (two system calls) is read only for a stall in progress that
   * could take the lag past the limit, not on every request.
   */
  lagOver(limitMs: number): number {
    const sustained = Math.min(this.previous, this.latest);
    // A stall in progress (its sample not taken yet) after a late sample.
    const pending = Math.min(this.latest, Math.max(0, performance.now() - this.last - this.sampleMs));
    return pending <= Math.max(sustained, limitMs) ? sustained : Math.max(sustained, this.own(pending));
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
    const lag = p.monitor.lagOver(p.maxLagMs);
    if (lag > p.maxLagMs) {
      throw new PagerError('overloaded', `server is overloaded (event-loop lag ${Math.round(lag)} ms); retry shortly`, { retryAfter: p.retryAfterSeconds });
    }
  }
}

/** Throw `overloaded` when the worker queue is full (routes that use the pool). */
export function checkPool(p: OverloadPolicy): void {
  // On every page request: the queue's size alone where the store gives it (stats() builds a
  // dozen objects a request for it); the pool's bound is read once.
  const queueSize = p.store.poolQueueSize?.() ?? p.store.stats().pool.queueSize;
  const bound = p.maxPoolQueue ?? poolBound(p);
  if (queueSize >= bound) {
    throw new PagerError('overloaded', `server is overloaded (${queueSize} page tasks queued); retry shortly`, { retryAfter: p.retryAfterSeconds });
  }
}

/** Half the pool's own queue bound (fixed when the pool is made), read once per store. */
const poolBounds = new WeakMap<Store, number>();
function poolBound(p: OverloadPolicy): number {
  let bound = poolBounds.get(p.store);
  if (bound === undefined) {
    bound = Math.max(1, Math.floor(p.store.stats().pool.maxQueue / 2));
    poolBounds.set(p.store, bound);
  }
  return bound;
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
 *
 * The Retry-After the server gave is kept for it, too: a request that comes
 * on a connection sooner than `retryAfterMs` after the connection's last
 * shed answer left, and is shed again, is held the rest of that time as
 * well. Its client is then answered when an honouring client asking at
 * Retry-After would have been, so ignoring it gains nothing and costs the
 * server no more shed answers than honouring does: with the hold alone, an
 * ignoring client was shed about twice as often (at 256 connections ~200
 * against ~90 503s a second, 6-8% of the pages those CPU-seconds would have
 * served: docs/benchmarks.md, rel ninth session). A request that can be
 * admitted is admitted whenever it comes.
 */
export class ShedPacer {
  /** Per connection: sheds in a row, and when its last shed answer's Retry-After is over (now()'s clock, ms). */
  private readonly conns = new WeakMap<object, { streak: number; retryAt: number }>();
  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
    private readonly retryAfterMs = 0,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * The hold for a request on `conn` shed now (and counts it), counted from `at`, when the
   * request came (its answer leaves `at` + the hold; a request that waited in the queue
   * before it was shed came earlier than now); `baseMs`: the first hold on a connection.
   */
  shed(conn: object | undefined, at: number = this.now(), baseMs = this.baseMs): number {
    if (typeof conn !== 'object' || conn === null) return baseMs;
    const t = at;
    const last = this.conns.get(conn);
    const k = last?.streak ?? 0;
    const early = last === undefined || this.retryAfterMs === 0 ? 0 : Math.max(0, last.retryAt - t);
    const hold = early + Math.min(this.maxMs, baseMs * 2 ** Math.min(k, 30));
    this.conns.set(conn, { streak: k + 1, retryAt: t + hold + this.retryAfterMs });
    return hold;
  }

  admitted(conn: object | undefined): void {
    if (typeof conn === 'object' && conn !== null) this.conns.delete(conn);
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
