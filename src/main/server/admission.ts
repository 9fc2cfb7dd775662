/**
 * Admission of page requests, bounded by what the server can finish
 * (issue 16 item 8). Without it every request was accepted and queued
 * (in the worker pool, on the event loop, in socket buffers), so the latency
 * of the ones answered grew with the offered load: 0.1 s at 4 connections,
 * 7 s at 256, with goodput falling as the event loop drowned.
 *
 * - At most `maxInFlight` page requests are in flight at once, from
 *   admission until their response is written (building a page is the
 *   pool's work, sending a cached 1 MB page is the event loop's: both count);
 *   a follow request counts until its snapshot (the tail page) is written,
 *   in a gate of its own (`follows`, maxFollowsInFlight) beside the page slots.
 * - The others wait in one FIFO queue, bounded in time: a request is
 *   answered `overloaded` (503 + Retry-After) at once when the wait it would
 *   face (its place in the queue times the smoothed in-flight time, over
 *   `maxInFlight`) is past half the bound, and when it has waited the whole
 *   bound without being admitted.
 * - The bound is `queueFactor` times the smoothed in-flight time (so it
 *   follows what pages cost here), within [minQueueMs, maxQueueMs]; an
 *   admitted request's latency is then about (1 + queueFactor / 2) times the
 *   in-flight time, whatever the offered load, and the gate holds about
 *   maxInFlight x (1 + queueFactor / 2) requests before it sheds (the sizing
 *   is options.ts's IN_FLIGHT_PER_THREAD and QUEUE_FACTOR). Until a page
 *   has been timed the bound is maxQueueMs. When a queued request's time is
 *   up, the bound is judged again with the oldest page in flight's time so
 *   far as a floor under the estimate (a burst after a quiet spell).
 * - A request whose client leaves while it waits leaves the queue at once
 *   (its place is nobody's: kept, it would count against the bound until its
 *   turn and shed live requests behind it, e.g. the first request after a
 *   load generator closed its connections), and is not counted as shed. A
 *   slot given back before any work was done records no in-flight time (a
 *   ~0 ms sample would lower the bound and shed the next burst early).
 */
import { AdmittedTimes } from './admitted-times.js';
import { PagerError } from '../../core/errors.js';

export interface AdmissionOptions {
  /** Page requests in flight at once. */
  maxInFlight: number;
  /** Queue bound, in units of the smoothed in-flight time. */
  queueFactor: number;
  /** The queue bound never goes below this, ms. */
  minQueueMs: number;
  /** Nor above this, ms. */
  maxQueueMs: number;
  /** Most requests waiting at once, whatever the time bound says. */
  maxQueue: number;
  retryAfterSeconds: number;
  /**
   * Follow snapshots' own gate: at most this many in flight, with their own queue (bound
   * `followQueueFactor` in-flight times), beside the page slots instead of in them. Sharing the
   * page slots, 16 of them cost attaches past capacity 19% of their snapshots and twice the p99
   * (docs/benchmarks.md, proof second round of the fourteenth session): a snapshot's send is
   * main-thread work that more slots only queue inside. Absent: follows share the page slots.
   */
  maxFollowsInFlight?: number;
  followQueueFactor?: number;
}

/** Gives the slot back; `unused`: no work was done in it, so its time is no sample of a page's. */
export type Release = (unused?: boolean) => void;

interface Waiter {
  resolve: (release: Release) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
  done: boolean;
  /** Undoes the abort listener of the request's signal. */
  forget: () => void;
}

/** Weight of one sample in the smoothed in-flight time. */
const ALPHA = 0.1;

export class Admission {
  private inFlight = 0;
  private readonly queue: Waiter[] = [];
  private head = 0;
  /** Live waiters (timed-out ones stay in the array until passed over). */
  private waiting = 0;
  /** Smoothed in-flight time of admitted requests, ms. */
  private smoothedMs: number;
  admitted = 0;
  shed = 0;
  /** Of `shed`, those that waited out the queue's time bound (the rest were shed at once). */
  shedWaited = 0;

  /** When each request in flight was admitted, oldest first. */
  private readonly started = new AdmittedTimes();
  /** No page timed yet: the smoothed time is a guess, not a measurement. */
  private timed = false;

  /**
   * Integrals over time, seconds, brought up to date at every change of the
   * slots held or the queue: slots held (its rate is the mean slots held),
   * and time with a slot free and nobody waiting for it (the gate dry).
   * Sampled from outside, the gate is seen only when the event loop gets to
   * the sampler, which may favour its quiet moments; these see every moment.
   */
  private slotSecondsSoFar = 0;
  private drySecondsSoFar = 0;
  private lastChange = performance.now();

  /** The gate follow requests go through (their own, or this one when they share the page slots). */
  readonly follows: Admission;

  constructor(private readonly o: AdmissionOptions) {
    this.smoothedMs = 0;
    this.follows =
      o.maxFollowsInFlight === undefined
        ? this
        : new Admission({ ...o, maxInFlight: o.maxFollowsInFlight, queueFactor: o.followQueueFactor ?? o.queueFactor, maxFollowsInFlight: undefined });
  }

  get queued(): number {
    return this.waiting;
  }

  get running(): number {
    return this.inFlight;
  }

  /** Requests let in flight at once (the configured size, for /metrics). */
  get maxInFlight(): number {
    return this.o.maxInFlight;
  }

  /** The current time bound of the queue, ms. */
  get boundMs(): number {
    // Until a page is timed nothing says what a page costs here: the first burst on a fresh
    // server waits up to the upper bound (guessing "quick" shed the 16 requests of a
    // fresh server's first burst after 20 ms, while its first pages were still being built).
    if (!this.timed) return this.o.maxQueueMs;
    return Math.min(this.o.maxQueueMs, Math.max(this.o.minQueueMs, this.o.queueFactor * this.smoothedMs));
  }

  /**
   * The bound with the in-flight time so far of the oldest page in flight as
   * a floor under the estimate: what a queued request's time limit is
   * judged by when it is reached.
   */
  get liveBoundMs(): number {
    const oldest = this.started.oldest();
    const age = oldest === undefined ? 0 : performance.now() - oldest;
    if (!this.timed && age === 0) return this.o.maxQueueMs;
    return Math.min(this.o.maxQueueMs, Math.max(this.boundMs, this.o.queueFactor * age));
  }

  /** Slot-seconds held so far. */
  get slotSeconds(): number {
    this.account();
    return this.slotSecondsSoFar;
  }

  /** Seconds so far with a slot free and nobody waiting. */
  get drySeconds(): number {
    this.account();
    return this.drySecondsSoFar;
  }

  /** Bring the integrals up to now; called before the slots held or the queue change. */
  private account(): void {
    const now = performance.now();
    const dt = (now - this.lastChange) / 1000;
    this.lastChange = now;
    this.slotSecondsSoFar += this.inFlight * dt;
    if (this.inFlight < this.o.maxInFlight && this.waiting === 0) this.drySecondsSoFar += dt;
  }

  /** Smoothed in-flight time, ms. */
  get serviceMs(): number {
    return this.smoothedMs;
  }

  /** The wait a request that joins the queue now is expected to face, ms (0 until a page is timed). */
  private expectedWaitMs(): number {
    return this.timed ? ((this.queued + 1) * this.smoothedMs) / this.o.maxInFlight : 0;
  }

  /**
   * Whether a request asking now is shed at once (acquire() would reject it
   * without queuing it): no slot free and the queue full, or the wait it
   * would face past half the bound. Queued only when the expected wait is
   * within half the bound: the other half is slack for the estimate (a burst
   * whose first pages are still in flight, a slow page ahead), so a request
   * let into the queue is not shed later by a wait it was expected to survive.
   * The server asks this before the framework sees a request (fast-shed.ts).
   */
  shedsAtOnce(): boolean {
    if (this.inFlight < this.o.maxInFlight && this.queued === 0) return false;
    return this.queued >= this.o.maxQueue || this.expectedWaitMs() > this.boundMs / 2;
  }

  /** A request shed on shedsAtOnce()'s word by the caller: counted as acquire() counts its own. */
  countShed(): void {
    this.shed++;
  }

  private overloaded(why: string): PagerError {
    this.shed++;
    return new PagerError('overloaded', `server is overloaded (${why}); retry shortly`, { retryAfter: this.o.retryAfterSeconds });
  }

  /**
   * Resolves with a release function once admitted (call it exactly when the
   * response is done), or rejects with `overloaded`; or with the signal's
   * reason once `signal` aborts while the request waits (the client left).
   */
  /**
   * acquire()'s immediate case without a promise: a release function when a slot is free and
   * nobody waits, else null (the caller then asks acquire(), which queues or sheds).
   */
  tryAcquire(): Release | null {
    return this.inFlight < this.o.maxInFlight && this.queued === 0 ? this.admit() : null;
  }

  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    if (this.inFlight < this.o.maxInFlight && this.queued === 0) return Promise.resolve(this.admit());
    if (this.shedsAtOnce()) return Promise.reject(this.overloaded(`${this.queued} pages waiting, about ${Math.round(this.expectedWaitMs())} ms to wait`));
    // Whole milliseconds: node keeps one timer list per distinct delay, and the bound follows the
    // smoothed in-flight time, a new fraction after every page: each queued request's timer made a
    // list of its own (a list object, a priority-queue entry) instead of joining the last one's.
    const bound = Math.ceil(this.boundMs);
    const self = this;
    const queuedAt = performance.now();
    return new Promise((resolve, reject) => {
      const left = () => {
        if (w.done) return;
        w.done = true;
        self.account();
        self.waiting--;
        clearTimeout(w.timer);
        reject(signal?.reason);
      };
      const w: Waiter = {
        resolve,
        reject,
        done: false,
        forget: () => signal?.removeEventListener('abort', left),
        timer: setTimeout(function expire(this: void) {
          if (w.done) return;
          // The bound as it stands now: pages in flight longer than the estimate say it was low
          // (the first burst after a quiet spell, whose pages take several times a lone page's
          // time), so a request queued on it waits for them rather than being shed for it.
          const waited = performance.now() - queuedAt;
          const now = self.liveBoundMs;
          if (waited + 1 < now) {
            w.timer = setTimeout(expire, Math.ceil(now - waited));
            return;
          }
          w.done = true;
          self.account();
          self.waiting--;
          w.forget();
          self.shedWaited++;
          reject(self.overloaded(`waited ${Math.round(waited)} ms without a free slot`));
        }, bound),
      };
      signal?.addEventListener('abort', left, { once: true });
      this.queue.push(w);
      this.account();
      this.waiting++;
    });
  }

  private admit(): Release {
    this.account();
    this.inFlight++;
    this.admitted++;
    const t0 = performance.now();
    const key = this.started.add(t0);
    let released = false;
    return (unused = false) => {
      if (released) return;
      released = true;
      this.account();
      this.inFlight--;
      this.started.release(key);
      if (unused) {
        this.next();
        return;
      }
      const ms = performance.now() - t0;
      // The first sample is the estimate (an EWMA started from a guess takes ~20 pages to forget it).
      if (this.timed) this.smoothedMs += ALPHA * (ms - this.smoothedMs);
      else {
        this.smoothedMs = ms;
        this.timed = true;
      }
      this.next();
    };
  }

  private next(): void {
    while (this.inFlight < this.o.maxInFlight && this.head < this.queue.length) {
      const w = this.queue[this.head++] as Waiter;
      if (w.done) continue;
      w.done = true;
      this.account();
      this.waiting--;
      clearTimeout(w.timer);
      w.forget();
      w.resolve(this.admit());
    }
    // Drop the consumed prefix now and then (amortized O(1) per request).
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}
