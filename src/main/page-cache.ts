/**
 * A small LRU of prepared page bodies, bounded by bytes. A page is a pure
 * function of the session's files and the resolved parameters, so it is
 * keyed by both (the session's file stamp or its writer's committed length,
 * and throughSeq, end, maxMessages, maxBytes): any append, repair or
 * reindex changes the stamp and so misses. It serves the common case of
 * many clients attaching to the same session (the same tail page) and of
 * retries, and costs nothing when pages do not repeat.
 */
import type { PageBuffer } from './store-types.js';

export class PageCache {
  private readonly entries = new Map<string, PageBuffer>();
  private bytes = 0;
  hits = 0;
  misses = 0;

  constructor(
    private readonly maxBytes: number,
    /** Pages larger than this are not kept (they would evict everything else). */
    private readonly maxEntryBytes = Math.floor(maxBytes / 4),
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

  set(key: string, page: PageBuffer): void {
    const n = page.body.length;
    if (this.maxBytes <= 0 || n > this.maxEntryBytes || this.entries.has(key)) return;
    this.entries.set(key, page);
    this.bytes += n;
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= v.body.length;
    }
  }
}
