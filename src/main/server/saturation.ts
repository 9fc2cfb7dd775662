/**
 * How long what the event loop handles now may have waited for it: the time
 * since the loop last came out of a wait for I/O (its "busy streak"), and
 * the shed decision for new follows on it (issue 15: attach past capacity).
 *
 * Past capacity of followers (docs/benchmarks.md, rel second round of the
 * thirteenth session: 256 followers re-attaching every 100 ms) the wait was in
 * the kernel's accept queue, before the server had the connection: the
 * admission gate releases a follow's slot in well under a millisecond (its
 * snapshot is one write), and the loop-lag monitor sees timers on time (each
 * iteration is short: one accept, one request, one snapshot). Neither sheds,
 * and the admitted p99 grew 17-20x.
 *
 * Why the streak bounds a request's wait: libuv counts idle time only for a
 * poll that blocked (performance.eventLoopUtilization's `idle`). A connection
 * or request that arrived before the loop last blocked would have woken it at
 * once; so whatever the loop handles now arrived after it last blocked, and
 * has waited at most the time since (a collection, a burst of snapshots ahead
 * of it in one iteration, the iterations before it, all included). Below
 * capacity the loop blocks between bursts and the streak stays short; past it
 * the loop never blocks and the streak grows with the queue.
 *
 * The third round of the thirteenth session shed every new follow while the
 * loop's utilization over the last 50 ms was >= 0.7 (commit f8e9338): it cut
 * the p99 but gave up half the snapshots/s, shedding whole spells at once.
 * Here each new follow is shed with a probability rising with the streak it
 * is seen in: none under `fromMs`, all from `toMs`; so only the follows that
 * waited are turned away, about as many as the queue is over its bound, and
 * the loop comes back to blocking (the streak's end) at once when the load
 * stops.
 *
 * A long streak at low load is a stall (a collection), not a queue: so the
 * loop must also have been busy most of the last ~200 ms (`minUtilization`),
 * unless the streak has already seen a long queue of requests (LONG_QUEUE).
 * Clients that honour Retry-After come back in waves after quiet spells; the
 * guard alone let the first ~100-300 ms of every wave in, the last of it
 * after waiting that long in the kernel's accept queue (the loop accepts one
 * connection an iteration), and then shed the rest of the wave in one block.
 *
 * The streak is wall time: a process the machine did not run inside it counts
 * as busy. A follow that waited through such a stall did wait; shedding it
 * costs a 503 (a fraction of a snapshot) and keeps its client away a hold.
 */
export interface LoopUse {
  idle: number;
}

/** The time constant of the loop's utilization the shed decision also asks for, ms. */
const UTILIZATION_TAU_MS = 200;
/**
 * Requests seen in a streak before any is shed: a loop busy with other work (a process's own
 * writes, a long task) and one request behind it is not a queue of requests, and shedding that
 * one saves nothing (the in-process follow tests' first follows came after such a streak).
 */
const MIN_QUEUE = 4;
/**
 * Requests seen in a streak past which the utilization guard no longer holds the shed back: a
 * stall at low load has a few requests behind it; this many is a queue whatever the loop's
 * recent share of busy time (a wave of returning clients after a quiet spell). Not much less: a
 * burst of about capacity's clients starting together (256 attaching followers within 100 ms)
 * is not overload, and a client shed there that honours Retry-After stays away a second; a wave
 * past capacity (768 followers) has hundreds in one streak.
 */
const LONG_QUEUE = 192;

export class LoopStreak {
  private lastIdle: number;
  private lastLook: number;
  private since: number;
  private enabled = false;
  /** The loop's busy share, averaged over about UTILIZATION_TAU_MS (updated at each look). */
  private busyShare = 0;
  /** Requests looked at in the current streak (this one included). */
  private seen = 0;

  constructor(
    /** No follow is shed in a streak shorter than this, ms; 0 or less: never shed. */
    private readonly fromMs: number,
    /** Every new follow is shed in a streak this long or longer, ms. */
    private readonly toMs: number,
    /**
     * None is shed unless the loop was busy at least this share of about the
     * last 200 ms: one collection or stall at low load makes a long streak
     * with a few follows behind it, served at once after; that is not
     * overload, and shedding them saves nothing.
     */
    private readonly minUtilization: number,
    private readonly use: () => LoopUse = () => performance.eventLoopUtilization(),
    private readonly now: () => number = () => performance.now(),
    private readonly random: () => number = Math.random,
  ) {
    this.lastIdle = this.use().idle;
    this.since = this.now();
    this.lastLook = this.since;
  }

  /** Start deciding (once ready: the warm-up's busy loop is not load). */
  start(): void {
    if (this.fromMs <= 0) return;
    this.lastIdle = this.use().idle;
    this.since = this.now();
    this.lastLook = this.since;
    this.busyShare = 0;
    this.seen = 0;
    this.enabled = true;
  }

  stop(): void {
    this.enabled = false;
  }

  /** Ms since the loop last blocked in its poll, as seen now. */
  streak(): number {
    const idle = this.use().idle;
    const now = this.now();
    const dt = now - this.lastLook;
    if (dt > 0) {
      const a = 1 - Math.exp(-dt / UTILIZATION_TAU_MS);
      this.busyShare += a * (Math.max(0, 1 - (idle - this.lastIdle) / dt) - this.busyShare);
      this.lastLook = now;
    }
    if (idle !== this.lastIdle) {
      // It blocked since the last look: the streak started when that wait ended, at the latest now.
      this.lastIdle = idle;
      this.since = now;
      this.seen = 0;
    }
    this.seen++;
    return now - this.since;
  }

  /** Whether to shed a new follow seen now, in a streak of `s` ms (streak()'s). */
  shed(s: number = this.streak()): boolean {
    if (!this.enabled || s < this.fromMs || this.seen < MIN_QUEUE || (this.busyShare < this.minUtilization && this.seen < LONG_QUEUE)) return false;
    if (s >= this.toMs) return true;
    return this.random() < (s - this.fromMs) / (this.toMs - this.fromMs);
  }
}
