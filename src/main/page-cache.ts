/**
 * A small LRU of prepared page bodies, bounded by bytes. A page is a pure
 * function of the session's files and the resolved parameters, so it is
 * keyed by both (the session's file stamp or its writer's committed length,
 * and throughSeq, end, maxMessages, maxBytes): any append, repair or
 * reindex changes the stamp and so misses. It serves the common case of
 * many clients attaching to the same session (the same tail page) and of
 * retries.
 *
 * Admission: a session's newest page is kept at once (every client that
 * attaches asks for it); any other page only when it is built a second
 * time while its key is still among the last few thousand built. Pages
 * asked for once (a client scrolling back through history) are most
 * pages, and keeping each of them churned memory for nothing: measured,
 * a 64 MiB cache of one-off typical pages cost every page ~0.2 ms (fresh,
 * unreused memory for each body, see docs/benchmarks.md).
 */
import type { PageBuffer } from './store-types.js';

export class PageCache {
  private readonly entries = new Map<string, PageBuffer>();
  private bytes = 0;
  hits = 0;
  misses = 0;

  /** Keys of pages built once lately, oldest first (a key costs ~100 bytes). */
  private readonly seen = new Map<string, true>();

  constructor(
    private readonly maxBytes: number,
    /** Pages larger than this are not kept (they would evict everything else). */
    private readonly maxEntryBytes = Math.floor(maxBytes / 4),
    /** How many keys of pages built once are remembered. */
    private readonly seenKeys = 4096,
  ) {}

  get size(): number {
    return this.bytes;
  }

  get(key: string): PageBuffer | undefined {
    const hit = this.entries.get(key);
    if (hit === undefined) {
      this.misses++;
      return undefined;
    }
    // Most recently used goes last.
    this.entries.delete(key);
    this.entries.set(key, hit);
    this.hits++;
    return hit;
  }

  /** A page just built; `newest`: it is its session's newest page. */
  set(key: string, page: PageBuffer, newest = false): void {
    const n = page.body.length;
    if (this.maxBytes <= 0 || n > this.maxEntryBytes || this.entries.has(key)) return;
    if (!newest && !this.seenBefore(key)) return;
    this.entries.set(key, page);
    this.bytes += n;
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= v.body.length;
    }
  }

  /** Whether `key` was built lately (and forget it); else remember it. */
  private seenBefore(key: string): boolean {
    if (this.seen.delete(key)) return true;
    this.seen.set(key, true);
    if (this.seen.size > this.seenKeys) this.seen.delete(this.seen.keys().next().value as string);
    return false;
  }
}
