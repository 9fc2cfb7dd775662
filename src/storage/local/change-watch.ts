/**
 * Change notification for followers: "the session's entry sidecar may have
 * grown", whoever appended (this process or another one on this machine).
 *
 * One watcher per session, shared by all its listeners and closed with the
 * last one: `fs.watch` on the entry sidecar (every durable append writes a
 * line there, after its frames), and a slow poll of the file's stamp as a
 * backstop for what file notification misses (some file systems, a watch
 * limit reached, a file that did not exist yet).
 *
 * The entry sidecar can be replaced by rename (reindex, repair): inotify
 * then keeps watching the old inode, and reports the rename-over only as an
 * attribute change. So on every event, and on every poll, the path's inode
 * is compared with the watched one and the watch is moved to the new file.
 *
 * Listeners are told that something may have changed, never what: they read
 * the session's committed end themselves (the log is canonical), so a missed
 * or duplicated notification costs latency at most, never an event.
 */
import { statSync, watch, type FSWatcher } from 'node:fs';
import { WatchListeners, type ChangeListener } from '../watch-listeners.js';

export type { ChangeListener };

/** The backstop poll: rare enough to cost nothing, frequent enough that a missed notification is a short delay. */
export const DEFAULT_WATCH_POLL_MS = 2_000;

interface Watched {
  path: string;
  listeners: WatchListeners;
  watcher: FSWatcher | null;
  /** Inode the watcher is on. */
  ino: number;
  /** size:mtime:ino at the last look ('' when the file was missing). */
  stamp: string;
}

function look(path: string): { stamp: string; ino: number } {
  const s = statSync(path, { throwIfNoEntry: false, bigint: false });
  return s === undefined ? { stamp: '', ino: -1 } : { stamp: `${s.size}:${s.mtimeMs}:${s.ino}`, ino: s.ino };
}

export class ChangeWatchers {
  private readonly watched = new Map<string, Watched>();
  private closed = false;

  constructor(private readonly pollMs: number = DEFAULT_WATCH_POLL_MS) {}

  /** Sessions with a live watcher (tests: none is leaked). */
  get size(): number {
    return this.watched.size;
  }

  /**
   * Call `fn` whenever the file at `path` may have changed. `keepAlive`: the
   * watch keeps the process running (a library follower waiting for events);
   * otherwise it does not (the HTTP server's own sockets do). Returns the
   * function that stops it; the session's watcher closes with its last listener.
   */
  watch(key: string, path: string, fn: ChangeListener, opts: { keepAlive?: boolean } = {}): () => void {
    if (this.closed) return () => undefined;
    let w = this.watched.get(key);
    if (w === undefined) {
      const now = look(path);
      w = { path, listeners: new WatchListeners(setInterval(() => this.poll(key), this.pollMs)), watcher: null, ino: -1, stamp: now.stamp };
      this.watched.set(key, w);
      this.arm(w);
    }
    const own = w;
    return w.listeners.add(fn, opts.keepAlive === true, () => this.drop(key, own));
  }

  close(): void {
    this.closed = true;
    for (const [key, w] of this.watched) this.drop(key, w);
  }

  private drop(key: string, w: Watched): void {
    w.listeners.stop();
    this.disarm(w);
    if (this.watched.get(key) === w) this.watched.delete(key);
  }

  private disarm(w: Watched): void {
    const fsw = w.watcher;
    w.watcher = null;
    w.ino = -1;
    try {
      fsw?.close();
    } catch {
      // Already closed by its own error.
    }
  }

  /** Watch the file now at the path. A missing file (or a watch limit reached) leaves the poll to notice. */
  private arm(w: Watched): void {
    const { ino } = look(w.path);
    if (ino === -1) return;
    try {
      const fsw = watch(w.path, { persistent: false }, () => this.onEvent(w));
      fsw.on('error', () => {
        if (w.watcher === fsw) this.disarm(w);
        this.fire(w);
      });
      w.watcher = fsw;
      w.ino = ino;
    } catch {
      w.watcher = null;
      w.ino = -1;
    }
  }

  private onEvent(w: Watched): void {
    if (w.watcher === null) return;
    const now = look(w.path);
    w.stamp = now.stamp;
    // Replaced by rename (or removed): move the watch to whatever is at the path now.
    if (now.ino !== w.ino) {
      this.disarm(w);
      this.arm(w);
    }
    this.fire(w);
  }

  private poll(key: string): void {
    const w = this.watched.get(key);
    if (w === undefined) return;
    const now = look(w.path);
    if (now.ino !== w.ino) {
      this.disarm(w);
      this.arm(w);
    }
    if (now.stamp !== w.stamp) {
      w.stamp = now.stamp;
      this.fire(w);
    }
  }

  private fire(w: Watched): void {
    w.listeners.notify();
  }
}
