/**
 * The looks followers of one session take at the store, shared between
 * them. Appends by another process reach every stream of the session as one
 * change notification each; each stream then asked the store for the
 * session's end and read the new events itself, so 200 followers made 200
 * stats, opens and reads of the same bytes per append (follow delay p99
 * 0.3-1.3 s at 100 appends/s, docs/benchmarks.md). Now a look (the end, or
 * one range of events) is taken once and its answer given to every stream
 * that asks the same while nothing has changed since: a change notification
 * starts a new generation (once per notification, however many streams it
 * reaches: they are called one after another in one synchronous run), and a
 * look of an older generation is never handed out, so no stream misses an
 * append it was told of. Failed looks are not kept (the callers retry);
 * of the ranges read, the last few are kept.
 */
import type { SessionEvent } from '../../core/types.js';
import type { Store } from '../store-types.js';

/** Ranges of events kept per session and generation (streams at a few positions share them). */
const SHARED_READS_KEPT = 8;

export class SharedLooks {
  private readonly sessions = new Map<string, { gen: number; bumped: boolean; end?: Promise<number>; reads: Map<string, Promise<SessionEvent[]>> }>();

  constructor(private readonly store: Store) {}

  private of(id: string) {
    let s = this.sessions.get(id);
    if (s === undefined) {
      s = { gen: 0, bumped: false, reads: new Map() };
      this.sessions.set(id, s);
    }
    return s;
  }

  /**
   * The session may have changed: looks taken before are stale. Every stream
   * a notification reaches calls this; only the first of one synchronous run
   * starts a generation (`always`: a new stream's own first look).
   */
  changed(id: string, always = false): void {
    const s = this.of(id);
    if (s.bumped && !always) return;
    s.gen++;
    s.end = undefined;
    s.reads.clear();
    s.bumped = true;
    queueMicrotask(() => (s.bumped = false));
  }

  /** Forget a session no stream follows any more. */
  drop(id: string): void {
    this.sessions.delete(id);
  }

  private keep<T>(s: { gen: number }, p: Promise<T>, clear: () => void): Promise<T> {
    const gen = s.gen;
    p.catch(() => {
      if (s.gen === gen) clear();
    });
    return p;
  }

  nextSeq(id: string): Promise<number> {
    const s = this.of(id);
    if (s.end === undefined) {
      const p = this.store.nextSeq(id);
      s.end = p;
      this.keep(s, p, () => {
        if (s.end === p) s.end = undefined;
      });
    }
    return s.end;
  }

  readEvents(id: string, from: number, to: number): Promise<SessionEvent[]> {
    const s = this.of(id);
    const key = `${from}:${to}`;
    let p = s.reads.get(key);
    if (p === undefined) {
      const q = this.store.readEvents(id, from, to);
      p = q;
      s.reads.set(key, q);
      // A stream catching up alone reads chunk after chunk in one generation: keep the last few only.
      if (s.reads.size > SHARED_READS_KEPT) s.reads.delete(s.reads.keys().next().value as string);
      this.keep(s, q, () => {
        if (s.reads.get(key) === q) s.reads.delete(key);
      });
    }
    return p;
  }
}
