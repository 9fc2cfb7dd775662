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
import type { CodedForm } from './page-coding.js';
import type { PageBuffer } from './store-types.js';

/** A page's bytes in the cache: its body and every compressed form kept with it. */
function pageBytes(page: PageBuffer): number {
  let n = page.body.length;
  for (const f of page.forms?.values() ?? []) n += f.body.length;
  return n;
}

/**
 * Compressed forms (`PageBuffer.forms`) live with their body and count in
 * the same byte budget: a page asked in a coding is asked so again (every
 * browser sends the same Accept-Encoding), and compressing it again would
 * cost more than building it.
 */
export class PageCache {
  private readonly entries = new Map<string, { page: PageBuffer; bytes: number }>();
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
    /** Told of each page it stops keeping (the page service counts the cache as a holder of the body: body-pool.ts). */
    private readonly onEvict: (page: PageBuffer) => void = () => {},
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
    return hit.page;
  }

  /** A page just built; `newest`: it is its session's newest page. Whether it was kept (it may be evicted at once, onEvict says so). */
  set(key: string, page: PageBuffer, newest = false): boolean {
    const n = pageBytes(page);
    if (this.maxBytes <= 0 || n > this.maxEntryBytes || this.entries.has(key)) return false;
    if (!newest && !this.seenBefore(key)) return false;
    this.entries.set(key, { page, bytes: n });
    this.bytes += n;
    this.evict();
    return true;
  }

  /** A compressed form of the page kept under `key` (when that is still `page`), counted in the budget. */
  addForm(key: string, page: PageBuffer, form: CodedForm): void {
    const e = this.entries.get(key);
    if (e === undefined || e.page !== page || page.forms?.has(form.encoding) === true) return;
    const n = form.body.length;
    if (e.bytes + n > this.maxEntryBytes) return;
    (page.forms ??= new Map()).set(form.encoding, form);
    e.bytes += n;
    this.bytes += n;
    this.evict();
  }

  /** Least recently used first, until the bytes fit. */
  private evict(): void {
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= v.bytes;
      this.onEvict(v.page);
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
