/**
 * Change notification for followers: "the session's entry sidecar may have
 * grown", whoever appended (this process or another one on this machine).
 *
 * One watcher per session, shared by all its listeners and closed a second
 * after the last one leaves (DEFAULT_WATCH_LINGER_MS): `fs.watch` on the entry sidecar (every durable append writes a
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

/**
 * How long a session's watcher outlives its last listener. Browsers' followers come and go
 * (a tab reloaded, a page left and come back to): closing the fs.watch with the last one and
 * arming a new one (two stats, an inotify watch added and removed) for the next was 4% of the
 * server's main thread at 256 followers re-attaching every ~100 ms over 40 sessions
 * (docs/benchmarks.md, rel second round, fourteenth session). A watcher kept so is watching
 * already when the next listener comes, which is all a listener needs (it reads the session's
 * end after it is added).
 */
export const DEFAULT_WATCH_LINGER_MS = 1_000;

interface Watched {
  path: string;
  listeners: WatchListeners;
  watcher: FSWatcher | null;
  /** Inode the watcher is on. */
  ino: number;
  /** size:mtime:ino at the last look ('' when the file was missing). */
  stamp: string;
  /** While the watcher outlives its last listener: the timer that closes it. */
  linger: NodeJS.Timeout | null;
}

function look(path: string): { stamp: string; ino: number } {
  const s = statSync(path, { throwIfNoEntry: false, bigint: false });
  return s === undefined ? { stamp: '', ino: -1 } : { stamp: `${s.size}:${s.mtimeMs}:${s.ino}`, ino: s.ino };
}

export class ChangeWatchers {
  private readonly watched = new Map<string, Watched>();
  private closed = false;

  constructor(
    private readonly pollMs: number = DEFAULT_WATCH_POLL_MS,
    private readonly lingerMs: number = DEFAULT_WATCH_LINGER_MS,
  ) {}

  /** Sessions watched for a listener (tests: none is leaked); watchers outliving their last listener are `lingering`. */
  get size(): number {
    let n = 0;
    for (const w of this.watched.values()) if (w.linger === null) n++;
    return n;
  }

  /** Watchers kept after their last listener left, closing within `lingerMs`. */
  get lingering(): number {
    return this.watched.size - this.size;
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
    if (w !== undefined && w.path !== path) {
      this.drop(key, w);
      w = undefined;
    }
    if (w === undefined) {
      const now = look(path);
      w = { path, listeners: new WatchListeners(setInterval(() => this.poll(key), this.pollMs)), watcher: null, ino: -1, stamp: now.stamp, linger: null };
      this.watched.set(key, w);
      this.arm(w);
    } else if (w.linger !== null) {
      clearTimeout(w.linger);
      w.linger = null;
    }
    const own = w;
    return w.listeners.add(fn, opts.keepAlive === true, () => this.lastLeft(key, own));
  }

  close(): void {
    this.closed = true;
    for (const [key, w] of this.watched) this.drop(key, w);
  }

  /** The last listener left: the watcher closes now, or after `lingerMs` unless another comes. */
  private lastLeft(key: string, w: Watched): void {
    if (this.closed || this.lingerMs <= 0) return this.drop(key, w);
    // Nothing it keeps alive: a library follower's process exits when its last follow ends.
    w.listeners.timer.unref();
    w.linger = setTimeout(() => this.drop(key, w), this.lingerMs);
    w.linger.unref();
  }

  private drop(key: string, w: Watched): void {
    if (w.linger !== null) clearTimeout(w.linger);
    w.linger = null;
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
