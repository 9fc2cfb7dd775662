/**
 * The listeners of one watched object, and the poll timer that runs while
 * any is there: the file watcher (local/change-watch.ts) and the stat poll
 * (stat-poll-watch.ts) both keep one of these per object. The timer keeps
 * the process alive only while some listener asks it to (a library follower
 * waiting for events), not for the HTTP server's followers, whose sockets do.
 */
export type ChangeListener = () => void;

export class WatchListeners {
  private readonly map = new Map<ChangeListener, { keepAlive: boolean }>();

  constructor(readonly timer: NodeJS.Timeout) {}

  /** Add `fn`; the function returned removes it (once) and calls `onEmpty` when it was the last. */
  add(fn: ChangeListener, keepAlive: boolean, onEmpty: () => void): () => void {
    const entry = { keepAlive };
    this.map.set(fn, entry);
    this.refTimer();
    return () => {
      if (this.map.get(fn) !== entry) return;
      this.map.delete(fn);
      if (this.map.size === 0) onEmpty();
      else this.refTimer();
    };
  }

  /** Tell every listener "it may have changed"; one listener's failure does not concern the others. */
  notify(): void {
    for (const fn of [...this.map.keys()]) {
      try {
        fn();
      } catch {
        // ignored: see above
      }
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private refTimer(): void {
    if ([...this.map.values()].some((l) => l.keepAlive)) this.timer.ref();
    else this.timer.unref();
  }
}
