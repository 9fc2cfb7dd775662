/**
 * Readers of a session's projection files (frame index, checksums, row
 * metadata) kept open between pages: a random page otherwise opened and
 * closed three files for a few small reads (open's path walk, fstat,
 * close: ~3% of the main thread over HTTP, docs/benchmarks.md).
 *
 * A kept reader is used again only for the same session stamp (the view's
 * version) and only while its backend says the object is unchanged since
 * it was opened (`RandomReader.unchanged`: local, one fstat: still linked,
 * same size, same change time). Anything else (a new stamp, a file removed,
 * replaced, written or cut) opens the key again, exactly as a page did
 * before. A backend whose readers cannot tell (memory, S3) gets a fresh
 * reader every time. A reader still in use by a page is closed when that
 * page is done with it.
 *
 * A small file whose kept reader is used again (the file proved unchanged
 * between two pages) once pages have read as many bytes of it as it holds
 * (so not the large checksum file of a session whose tail page alone is
 * asked, which reads a few KB of it a page) is read whole once and its
 * later reads are answered from those bytes, as views: a random page read the frame index, the
 * checksums and the row metadata with ~10-20 positional reads, one of them
 * a 64 KB block of the index, and those reads and their fresh buffers were
 * ~0.09 ms of the main thread's ~0.3 ms a page at 16 pages in flight, plus
 * the collections their buffers caused (docs/benchmarks.md, "proof (tenth
 * session)"). The held bytes live exactly as long as the kept reader (the
 * same stamp and fstat checks before every use), and are bounded: files of
 * at most HOLD_FILE_MAX_BYTES, HOLD_TOTAL_MAX_BYTES in all, least recently
 * used dropped first. Only a reader opened HOLD_AFTER_MS ago or more holds:
 * the fstat check compares the change time seen at open, which has a clock
 * tick's granularity (Linux stamps files from its coarse clock: 1-10 ms),
 * so a write in the very tick of the file's last change could pass it; a
 * reader that reads the file each time still saw such a write, held bytes
 * would not. A file last changed more than a tick before it is held cannot
 * be changed again within that tick. Held bytes are in a SharedArrayBuffer: a page's slice
 * records go to its worker as views of them (page-service.ts heldRecords). Callers must not
 * write into what `read` returns (none does: the records are parsed, copied, or read by a worker).
 */
import type { RandomReader, StorageBackend } from '../../storage/backend.js';
import type { PositionalReader, RangeRead } from '../../streams/positional-reader.js';

interface Kept {
  reader: RandomReader;
  stamp: string;
  /** Pages using it now. */
  users: number;
  /** No longer handed out: closed when its last user is done. */
  retired: boolean;
  /** The whole file's bytes once it was used again (see above), else null. */
  held: Buffer | null;
  /** When it was opened (performance.now()). */
  openedAt: number;
  /** Bytes pages have read through it. */
  readBytes: number;
  /** When it was last handed out, in opens (KeptReaders.clock): the least recently used go first. */
  used: number;
}

/** Objects whose readers are kept at most (three a session): LRU beyond. */
const DEFAULT_MAX_KEPT = 384;
/** Files held whole (see above) are at most this large, and all held bytes at most this many. */
export const HOLD_FILE_MAX_BYTES = 4 * 1024 * 1024;
export const HOLD_TOTAL_MAX_BYTES = 16 * 1024 * 1024;
/** A kept reader holds its file only once it has been open this long (see above): ten ticks of the coarsest clock. */
export const HOLD_AFTER_MS = 100;

export class KeptReaders {
  /**
   * By object key. Recency is each reader's `used`, not the map's order: moving a key to the end
   * (delete, set) on every open rebuilt the map's small table every few opens (three a page), a
   * fresh table the old map held, so it outlived the next scavenge: ~2% of the main thread's sampled
   * allocations that outlived a scavenge (docs/benchmarks.md, "proof (twelfth session)", second round).
   */
  private readonly kept = new Map<string, Kept>();
  private clock = 0;
  opened = 0;
  reused = 0;
  /** Bytes of the files held whole now. */
  heldBytes = 0;

  constructor(
    private readonly storage: StorageBackend,
    private readonly max = DEFAULT_MAX_KEPT,
    private readonly holdFileMax = HOLD_FILE_MAX_BYTES,
    private readonly holdTotalMax = HOLD_TOTAL_MAX_BYTES,
    private readonly holdAfterMs = HOLD_AFTER_MS,
  ) {}

  /**
   * A reader of `key` as the object is now, under the session's `stamp`
   * ('' : never kept); null when it cannot be opened (missing: projections
   * are optional). Its close() hands it back.
   */
  async open(key: string, stamp: string): Promise<PositionalReader | null> {
    const k = this.kept.get(key);
    if (k !== undefined) {
      if (k.stamp === stamp && stamp !== '' && (await k.reader.unchanged?.()) === true && !k.retired) {
        k.used = ++this.clock;
        this.reused++;
        if (k.held === null && k.reader.size <= this.holdFileMax && k.reader.size <= this.holdTotalMax && k.readBytes >= k.reader.size && performance.now() - k.openedAt >= this.holdAfterMs) await this.hold(k);
        return this.lend(k);
      }
      this.retire(key, k);
    }
    let reader: RandomReader;
    try {
      reader = await this.storage.openReader(key);
    } catch {
      return null;
    }
    this.opened++;
    if (stamp === '' || reader.unchanged === undefined) return reader;
    const fresh: Kept = { reader, stamp, users: 0, retired: false, held: null, openedAt: performance.now(), readBytes: 0, used: ++this.clock };
    // Another page opened it meanwhile: one kept reader a key.
    const other = this.kept.get(key);
    if (other !== undefined) this.retire(key, other);
    this.kept.set(key, fresh);
    while (this.kept.size > this.max) {
      const [oldest, o] = this.leastRecentlyUsed();
      this.retire(oldest, o);
    }
    return this.lend(fresh);
  }

  /** Ranged reads of `key` through its kept reader: one open for all of them (null: missing). */
  async ranges(key: string, stamp: string): Promise<{ read: RangeRead; close(): Promise<void> } | null> {
    const r = await this.open(key, stamp);
    if (r === null) return null;
    return { read: (start, end) => r.read(start, Math.max(0, end - start)), close: () => r.close() };
  }

  /** Close every reader (the store closes); readers in use close when handed back. */
  closeAll(): void {
    for (const [key, k] of this.kept) this.retire(key, k);
  }

  get size(): number {
    return this.kept.size;
  }

  /** Read `k`'s file whole and hold it, dropping the least recently used held files past the bound. */
  private async hold(k: Kept): Promise<void> {
    const size = k.reader.size;
    let bytes: Buffer;
    try {
      // Shared memory: a page's slice records are then views of these bytes that go to its worker
      // as they are (no copy: page-service.ts heldRecords); nothing writes into held bytes.
      const shared = Buffer.from(new SharedArrayBuffer(size));
      const got = k.reader.readInto !== undefined ? await k.reader.readInto(0, shared) : (await k.reader.read(0, size)).copy(shared);
      bytes = got === size ? shared : shared.subarray(0, got);
    } catch {
      return;
    }
    // Retired meanwhile (another page saw the file change), or read short: not held.
    if (bytes.length !== size || k.retired || k.held !== null) return;
    if (this.heldBytes + size > this.holdTotalMax) {
      for (const o of [...this.kept.values()].sort((x, y) => x.used - y.used)) {
        if (this.heldBytes + size <= this.holdTotalMax) break;
        this.drop(o);
      }
    }
    k.held = bytes;
    this.heldBytes += size;
  }

  /** The kept reader handed out longest ago (the map is not empty). */
  private leastRecentlyUsed(): [string, Kept] {
    let out: [string, Kept] | undefined;
    for (const e of this.kept) if (out === undefined || e[1].used < out[1].used) out = e;
    return out as [string, Kept];
  }

  private drop(k: Kept): void {
    if (k.held === null) return;
    this.heldBytes -= k.held.length;
    k.held = null;
  }

  private lend(k: Kept): PositionalReader {
    k.users++;
    let done = false;
    const size = k.reader.size;
    return {
      size,
      // As the reader would answer (fewer bytes at the end), from the held bytes when there are any.
      read: (pos, len) => {
        const held = k.held;
        if (held !== null) return Promise.resolve(held.subarray(pos, Math.max(pos, Math.min(size, pos + len))));
        k.readBytes += Math.max(0, len);
        return k.reader.read(pos, len);
      },
      // The same bytes as `read` gives from the held ones, or null while none are held.
      heldView: (pos, len) => {
        const held = k.held;
        return held === null ? null : held.subarray(pos, Math.max(pos, Math.min(size, pos + len)));
      },
      // The same bytes as `read` gives, written into the caller's buffer (copied from the held ones, or read there).
      readInto: async (pos, dest) => {
        const held = k.held;
        if (held !== null) {
          const from = held.subarray(pos, Math.max(pos, Math.min(size, pos + dest.length)));
          dest.set(from);
          return from.length;
        }
        k.readBytes += dest.length;
        const reader = k.reader;
        if (reader.readInto !== undefined) return reader.readInto(pos, dest);
        const got = await reader.read(pos, dest.length);
        dest.set(got);
        return got.length;
      },
      close: async () => {
        if (done) return;
        done = true;
        k.users--;
        if (k.retired && k.users === 0) await k.reader.close();
      },
    };
  }

  private retire(key: string, k: Kept): void {
    if (this.kept.get(key) === k) this.kept.delete(key);
    if (k.retired) return;
    k.retired = true;
    this.drop(k);
    if (k.users === 0) void k.reader.close().catch(() => undefined);
  }
}
