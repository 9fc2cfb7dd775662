/**
 * Change notification through the storage seam, for backends without one
 * of their own (memory; a network store): each watched object's `stat` is
 * polled, and a new `version` (or the object appearing or going) tells the
 * listeners "it may have changed". The local backend has file-change
 * notification instead (local/change-watch.ts), with a slower poll as its
 * backstop; both answer the same calls, so followers do not know which.
 *
 * One poll per watched object, shared by all its listeners and stopped with
 * the last one; a poll still waiting for its stat skips the next tick (a slow
 * network store is never asked twice at once). Listeners are told that
 * something may have changed, never what: they read the session's committed
 * end themselves, so a missed or repeated notice costs latency, never an event.
 */
import type { StorageBackend } from './backend.js';
import { WatchListeners, type ChangeListener } from './watch-listeners.js';

export type { ChangeListener };

/** How often a watched object is stat'ed when the backend has no notification (a follower then hears of an append within about this). */
export const DEFAULT_STAT_POLL_MS = 100;

interface Polled {
  listeners: WatchListeners;
  /** The object's version at the last look ('' when missing; null before the first). */
  version: string | null;
  inFlight: boolean;
}

export class StatPollWatchers {
  private readonly polled = new Map<string, Polled>();
  private closed = false;

  constructor(
    private readonly storage: StorageBackend,
    private readonly pollMs: number = DEFAULT_STAT_POLL_MS,
  ) {}

  /** Objects being polled (tests: none is leaked). */
  get size(): number {
    return this.polled.size;
  }

  /**
   * Call `fn` whenever object `key` may have changed. `keepAlive`: the poll
   * keeps the process running (a library follower waiting for events).
   * Returns the function that stops it.
   */
  watch(key: string, fn: ChangeListener, opts: { keepAlive?: boolean } = {}): () => void {
    if (this.closed) return () => undefined;
    let p = this.polled.get(key);
    if (p === undefined) {
      const made: Polled = { listeners: new WatchListeners(setInterval(() => void this.poll(key, made), this.pollMs)), version: null, inFlight: false };
      p = made;
      this.polled.set(key, p);
      // The version to compare with, at once: a change made right after watch() returns is a change.
      void this.poll(key, p);
    }
    const own = p;
    return p.listeners.add(fn, opts.keepAlive === true, () => this.drop(key, own));
  }

  close(): void {
    this.closed = true;
    for (const [key, p] of this.polled) this.drop(key, p);
  }

  private drop(key: string, p: Polled): void {
    p.listeners.stop();
    if (this.polled.get(key) === p) this.polled.delete(key);
  }

  private async poll(key: string, p: Polled): Promise<void> {
    if (p.inFlight) return;
    p.inFlight = true;
    let version: string;
    try {
      version = (await this.storage.stat(key))?.version ?? '';
    } catch {
      // A store that cannot be reached now: look again at the next tick.
      return;
    } finally {
      p.inFlight = false;
    }
    if (this.polled.get(key) !== p) return;
    const before = p.version;
    p.version = version;
    if (before === null || before === version) return;
    p.listeners.notify();
  }
}
