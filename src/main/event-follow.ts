/**
 * `store.follow(id, { fromSeq })`: the session's events from `fromSeq` on,
 * as an async iterator that waits for new ones, whoever appends them.
 *
 * It reads from the log by seq, one bounded chunk at a time, and holds
 * nothing else: a notification (an append through this store, or a change
 * of the entry sidecar seen by the session's watcher) only says "look
 * again". So a slow consumer costs one chunk of memory, however far behind
 * it is, and no notification can carry a gap or a duplicate: each chunk
 * starts exactly at the next seq the consumer needs.
 *
 * It ends when the consumer leaves (`break`, `return()`), when the store
 * closes, or when its `signal` aborts; an error (`session_not_found`, a
 * session that needs repair, a corrupt frame) is thrown by `next()` and ends it.
 */
import { PagerError } from '../core/errors.js';
import type { SessionEvent } from '../core/types.js';

export interface FollowOptions {
  /** First seq to yield (default: the session's next seq, i.e. only events appended from now on). At most the next seq. */
  fromSeq?: number;
  /** Ends the iterator when aborted. */
  signal?: AbortSignal;
}

/** What a follower needs of the store. */
export interface FollowSource {
  nextSeq(id: string): Promise<number>;
  /** Events [fromSeq, min(toSeq, next seq)). */
  readEvents(id: string, fromSeq: number, toSeq: number): Promise<SessionEvent[]>;
  /** Appends made through this store, as they become durable. */
  subscribe(id: string, listener: () => void): () => void;
  /** Changes of the session's files by any process. */
  watch(id: string, listener: () => void, opts: { keepAlive: boolean }): () => void;
}

/** Events read from the log per step: what a follower holds at most. */
export const FOLLOW_CHUNK_EVENTS = 256;

/**
 * Reading the session while another process is between writing its entry
 * line and its metadata can, rarely, see a state the next look does not
 * (a line not yet whole): a read failing with `repair_required` is tried
 * again this many times, this far apart, before it is believed.
 */
const SETTLE_TRIES = 4;
const SETTLE_MS = 25;

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

export class EventFollower implements AsyncIterableIterator<SessionEvent> {
  private seq: number | undefined;
  private buffer: SessionEvent[] = [];
  private at = 0;
  private changes = 0;
  private wake: (() => void) | undefined;
  private closed = false;
  private queue: Promise<unknown> = Promise.resolve();
  private stops: (() => void)[] = [];

  constructor(
    private readonly source: FollowSource,
    readonly sessionId: string,
    private readonly opts: FollowOptions,
    private readonly onEnd: (f: EventFollower) => void,
  ) {
    if (opts.fromSeq !== undefined && (!Number.isSafeInteger(opts.fromSeq) || opts.fromSeq < 0)) {
      throw new PagerError('invalid_request', 'fromSeq must be a non-negative integer', { param: 'fromSeq' });
    }
    const signal = opts.signal;
    if (signal !== undefined) {
      if (signal.aborted) this.end();
      else {
        const onAbort = () => this.end();
        signal.addEventListener('abort', onAbort, { once: true });
        this.stops.push(() => signal.removeEventListener('abort', onAbort));
      }
    }
  }

  get ended(): boolean {
    return this.closed;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The next event, waiting for it when the consumer is at the end of the log. */
  next(): Promise<IteratorResult<SessionEvent, undefined>> {
    const run = this.queue.then(() => this.pull());
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Stop following (what `break` in a `for await` calls). */
  async return(): Promise<IteratorReturnResult<undefined>> {
    this.end();
    return DONE;
  }

  /** Stop following; a pending `next()` resolves as done. */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stop of this.stops.splice(0)) stop();
    this.buffer = [];
    this.kick();
    this.onEnd(this);
  }

  private changed = (): void => {
    this.changes++;
    this.kick();
  };

  private kick(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private async pull(): Promise<IteratorResult<SessionEvent, undefined>> {
    if (this.at < this.buffer.length) return { done: false, value: this.buffer[this.at++] as SessionEvent };
    if (this.closed) return DONE;
    try {
      if (this.seq === undefined) await this.start();
      for (;;) {
        if (this.closed) return DONE;
        const seen = this.changes;
        const from = this.seq as number;
        // Up to a chunk past `from`, cut at the committed end: one look at the session per step.
        const events = await this.settled(() => this.source.readEvents(this.sessionId, from, from + FOLLOW_CHUNK_EVENTS));
        if (this.closed) return DONE;
        if (events.length > 0) {
          for (let i = 0; i < events.length; i++) {
            if ((events[i] as SessionEvent).seq !== from + i) throw new PagerError('internal', `read seq ${(events[i] as SessionEvent).seq} where ${from + i} was expected`);
          }
          this.buffer = events;
          this.at = 1;
          this.seq = from + events.length;
          return { done: false, value: events[0] as SessionEvent };
        }
        if (this.changes === seen) await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } catch (err) {
      if (this.closed) return DONE; // the store closed under a read
      this.end();
      throw err;
    }
  }

  /** Listen before the first look at the session's end, so nothing appended after it goes unnoticed. */
  private async start(): Promise<void> {
    this.stops.push(this.source.subscribe(this.sessionId, this.changed));
    this.stops.push(this.source.watch(this.sessionId, this.changed, { keepAlive: true }));
    const end = await this.settled(() => this.source.nextSeq(this.sessionId));
    const from = this.opts.fromSeq ?? end;
    if (from > end) throw new PagerError('invalid_request', `fromSeq ${from} is past the session's next seq ${end}`, { param: 'fromSeq' });
    this.seq = from;
  }

  private settled<T>(read: () => Promise<T>): Promise<T> {
    return settled(read, () => this.closed);
  }
}

/** `read()`, tried again on `repair_required` (SETTLE_TRIES times, SETTLE_MS apart) unless `stop()` says to give up. */
export async function settled<T>(read: () => Promise<T>, stop: () => boolean = () => false): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      if (!(err instanceof PagerError && err.code === 'repair_required') || attempt >= SETTLE_TRIES || stop()) throw err;
      await new Promise((r) => setTimeout(r, SETTLE_MS));
    }
  }
}
