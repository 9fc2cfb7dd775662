/**
 * New follows wait in a queue of the server's own, served a bounded slice of
 * the event loop at a time, and a follow that waited too long there is shed
 * (issue 15: attach past capacity).
 *
 * Why: past capacity of followers the slowest attaches waited in the kernel's
 * accept queue (docs/benchmarks.md: 42 of the slowest 1%'s 46 ms), where no
 * signal of the server sees them. A connection waits there while the loop runs
 * the iteration it is in, and an iteration ran every snapshot whose request
 * had arrived (each a page to frame, code and write), so under load the
 * iterations grew with the queue they made. Here a follow request is only
 * queued when it arrives; a check-phase callback (setImmediate) starts at most
 * `batch` follows and leaves the rest for the next
 * iteration, whose poll does not block while callbacks are pending: the
 * connections and requests that arrived meanwhile are taken in between. The
 * wait moves from the kernel's queue into this one, where it is measured: a
 * follow that waited more than `maxWaitMs` is answered 503 (fast-shed.ts's
 * answer) instead of started.
 *
 * Below capacity the queue is empty at each check phase and a follow is
 * started in the iteration it arrived in. When the load stops the queue
 * drains in one or two iterations (recovery at once).
 */

/** One queued follow: when it was queued, how to start it, how to shed it, whether it is gone. */
export interface QueuedFollow {
  at: number;
  start: () => void;
  shed: () => void;
  gone: () => boolean;
}

export class FollowQueue {
  private items: (QueuedFollow | undefined)[] = [];
  private head = 0;
  private scheduled = false;

  constructor(
    /**
     * At most this many follows are started in one check phase: a follow's page, when prepared,
     * is framed and written in the microtasks after the start returns, so the time a start takes
     * in the callback is not what it costs the loop.
     */
    private readonly batch: number,
    /** A follow that waited longer than this is shed, ms; 0 or less: never shed for its wait. */
    private readonly maxWaitMs: number,
    private readonly now: () => number = () => performance.now(),
    private readonly schedule: (f: () => void) => void = (f) => void setImmediate(f),
  ) {}

  /** Queued follows not yet started or shed. */
  get length(): number {
    return this.items.length - this.head;
  }

  push(start: () => void, shed: () => void, gone: () => boolean): void {
    this.items.push({ at: this.now(), start, shed, gone });
    if (!this.scheduled) {
      this.scheduled = true;
      this.schedule(this.drain);
    }
  }

  /** Start queued follows, oldest first, up to batch of them; shed those that waited too long. */
  readonly drain = (): void => {
    this.scheduled = false;
    let started = 0;
    while (this.head < this.items.length) {
      const f = this.items[this.head] as QueuedFollow;
      this.items[this.head++] = undefined;
      if (f.gone()) continue;
      const now = this.now();
      if (this.maxWaitMs > 0 && now - f.at > this.maxWaitMs) {
        f.shed();
        continue;
      }
      if (started >= this.batch) {
        this.head--;
        this.items[this.head] = f;
        break;
      }
      f.start();
      started++;
    }
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else {
      if (this.head > 1024) {
        this.items = this.items.slice(this.head);
        this.head = 0;
      }
      this.scheduled = true;
      this.schedule(this.drain);
    }
  };
}
