/**
 * Appends made by other processes, as the store's followers hear of them
 * over an append bus (append-bus.ts): this store's own durable appends are
 * published, and other processes' messages are turned into the same "look
 * again" notification the file watcher gives (`store.watch`).
 *
 * One bus subscription per watched session, shared by its listeners. A
 * message is acted on once per process, not once per follower: an echo of
 * this store's own append, a duplicate, or one older than what is known is
 * dropped. A network store's reader keeps what it looked up for a short
 * while, so a message first makes the backend forget the session's cached
 * state (`refresh`), then tells the listeners. A message can still arrive
 * before the storage this process reads shows the append: then the
 * committed end is looked at again, 25 ms doubling to about 3 s in all,
 * and the listeners are told once it has caught up. So a follower never
 * waits on a message that came too early; the backstop poll covers one
 * that never came.
 */
import type { AppendBus } from './append-bus.js';

/** Looks at the committed end again after these delays (ms) while it is behind a message. */
const CATCH_UP_MS = [25, 50, 100, 200, 400, 800, 1_600];

interface Watched {
  listeners: Set<() => void>;
  /** The highest nextSeq heard of or published here. */
  known: number;
  /** The committed end seen at the last look (-1: not looked yet). */
  seen: number;
  catchingUp: boolean;
  stop: () => void;
}

export class RemoteAppends {
  private readonly watched = new Map<string, Watched>();
  private closed = false;

  constructor(
    readonly bus: AppendBus,
    /** The session's committed end as this process's storage shows it now. */
    private readonly committedEnd: (id: string) => Promise<number>,
    /** Make the storage forget what it cached of the session (a network store), so the next look is fresh. */
    private readonly refresh: (id: string, at?: string) => Promise<void> = async () => undefined,
  ) {}

  /** Sessions with a bus subscription (tests: none is leaked). */
  get size(): number {
    return this.watched.size;
  }

  /** This store's own append of `id` is durable up to `nextSeq`: tell the others. */
  published(id: string, nextSeq: number, at?: string): void {
    const w = this.watched.get(id);
    if (w !== undefined && nextSeq > w.known) w.known = nextSeq;
    this.bus.publish(id, nextSeq, at);
  }

  /** Call `fn` whenever another process says it appended to `id`. Returns the function that stops it. */
  watch(id: string, fn: () => void): () => void {
    if (this.closed) return () => undefined;
    let w = this.watched.get(id);
    if (w === undefined) {
      const created: Watched = { listeners: new Set(), known: -1, seen: -1, catchingUp: false, stop: () => undefined };
      created.stop = this.bus.subscribe(id, (nextSeq, at) => this.onMessage(id, created, nextSeq, at));
      this.watched.set(id, created);
      w = created;
    }
    const own = w;
    const listener = () => fn();
    own.listeners.add(listener);
    return () => {
      if (!own.listeners.delete(listener) || own.listeners.size > 0) return;
      own.stop();
      if (this.watched.get(id) === own) this.watched.delete(id);
    };
  }

  close(): void {
    this.closed = true;
    for (const w of this.watched.values()) w.stop();
    this.watched.clear();
  }

  private onMessage(id: string, w: Watched, nextSeq: number | undefined, at?: string): void {
    if (this.watched.get(id) !== w) return;
    if (nextSeq === undefined) {
      // Messages may have been lost (a reconnection): look again.
      void this.fresh(id).then(() => fire(w));
      return;
    }
    if (nextSeq <= w.known) return;
    w.known = nextSeq;
    // `at` (where the writer's storage put it): a network store fetches that state directly.
    void this.fresh(id, at).then(() => {
      fire(w);
      void this.catchUp(id, w);
    });
  }

  private fresh(id: string, at?: string): Promise<void> {
    return this.refresh(id, at).catch(() => undefined);
  }

  /** While the storage here shows less than the newest message, look again later, and tell the listeners when it has caught up. */
  private async catchUp(id: string, w: Watched): Promise<void> {
    if (w.catchingUp) return;
    w.catchingUp = true;
    try {
      for (let i = 0; i <= CATCH_UP_MS.length; i++) {
        if (this.closed || this.watched.get(id) !== w) return;
        const end = await this.committedEnd(id).catch(() => -1);
        const before = w.seen;
        w.seen = Math.max(w.seen, end);
        if (end >= w.known) {
          // Caught up after a look that was behind: the listeners' own look may have been too early.
          if (i > 0 && end > before) fire(w);
          return;
        }
        if (i === CATCH_UP_MS.length) return; // The backstop poll takes over.
        await new Promise((r) => setTimeout(r, CATCH_UP_MS[i]).unref());
        await this.fresh(id);
      }
    } finally {
      w.catchingUp = false;
    }
  }
}

function fire(w: Watched): void {
  for (const fn of [...w.listeners]) {
    try {
      fn();
    } catch {
      // One listener's failure does not concern the others.
    }
  }
}
