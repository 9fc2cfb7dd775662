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
}

/** Objects whose readers are kept at most (three a session): LRU beyond. */
const DEFAULT_MAX_KEPT = 384;

export class KeptReaders {
  /** By object key, least recently used first. */
  private readonly kept = new Map<string, Kept>();
  opened = 0;
  reused = 0;

  constructor(
    private readonly storage: StorageBackend,
    private readonly max = DEFAULT_MAX_KEPT,
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
        // Most recently used last.
        this.kept.delete(key);
        this.kept.set(key, k);
        this.reused++;
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
    const fresh: Kept = { reader, stamp, users: 0, retired: false };
    // Another page opened it meanwhile: one kept reader a key.
    const other = this.kept.get(key);
    if (other !== undefined) this.retire(key, other);
    this.kept.set(key, fresh);
    for (const [oldest, o] of this.kept) {
      if (this.kept.size <= this.max) break;
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

  private lend(k: Kept): PositionalReader {
    k.users++;
    let done = false;
    return {
      size: k.reader.size,
      read: (pos, len) => k.reader.read(pos, len),
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
    if (k.users === 0) void k.reader.close().catch(() => undefined);
  }
}
