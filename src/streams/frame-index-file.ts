/**
 * The binary frame index: `sessions/index/<id>/frames.idx`, a derived,
 * rebuildable projection (SPEC section 3) of the entry sidecar that the
 * writer keeps beside it: one 32-byte record per frame, in file order,
 *
 *   0  8  seq      (float64, little endian)
 *   8  8  offset   (float64)
 *  16  8  group    (float64; -1 when the frame is not a counted message)
 *  24  4  length   (uint32)
 *  28  4  count    (uint32)
 *
 * The planner walks these typed records instead of parsing JSONL lines (a
 * 15,000-frame tail page spent ~20 ms of its cold time parsing). It is used
 * only when it is whole and agrees with the session at both ends; anything
 * else plans from the JSONL sidecar, which stays the source of truth.
 */
import type { BackwardEntrySource, EntryLines } from '../core/page-planner.js';
import type { EntryLine } from '../core/types.js';
import { entryReadStats } from './entries-file.js';
import { keepShape } from '../core/shape-keeper.js';
import { LITTLE_ENDIAN } from './record-file.js';
import type { PositionalReader } from './positional-reader.js';

export const INDEX_RECORD_BYTES = 32;
export const INDEX_FILE_NAME = 'frames.idx';
const BLOCK_RECORDS = 2048;

/** Index records for entries, in one buffer. */
export function indexRecords(entries: readonly Pick<EntryLine, 'seq' | 'offset' | 'length' | 'count' | 'group'>[]): Buffer {
  const out = Buffer.allocUnsafe(entries.length * INDEX_RECORD_BYTES);
  entries.forEach((e, i) => {
    const o = i * INDEX_RECORD_BYTES;
    out.writeDoubleLE(e.seq, o);
    out.writeDoubleLE(e.offset, o + 8);
    out.writeDoubleLE(e.group ?? -1, o + 16);
    out.writeUInt32LE(e.length, o + 24);
    out.writeUInt32LE(e.count, o + 28);
  });
  return out;
}

/**
 * Records as typed views can read them: 8-byte aligned (Buffer's pool aligns
 * its slices, large reads start at 0: a copy only as a safeguard) and in the
 * machine's byte order (a converted copy on a big-endian machine).
 */
function nativeOrder(b: Buffer): Buffer {
  if (LITTLE_ENDIAN && b.byteOffset % 8 === 0) return b;
  const c = Buffer.allocUnsafeSlow(b.length);
  b.copy(c);
  if (!LITTLE_ENDIAN) {
    for (let o = 0; o < c.length; o += INDEX_RECORD_BYTES) {
      c.subarray(o, o + 24).swap64();
      c.subarray(o + 24, o + 32).swap32();
    }
  }
  return c;
}

/**
 * A block of index records as the planner's EntryLines. Fields are read
 * through typed views of the block: a tail page walks ~15,000 records, and
 * Buffer#readDoubleLE (a byte-wise copy per call) was most of its planning.
 */
class IndexLines implements EntryLines {
  /** Float64 view: seq, offset and group are elements 4k, 4k + 1, 4k + 2 of record k. */
  private readonly f: Float64Array;
  /** Uint32 view: length and count are elements 8k + 6, 8k + 7. */
  private readonly u: Uint32Array;

  constructor(
    b: Buffer,
    /** Record number of b's first record in the file. */
    private readonly first: number,
  ) {
    const n = nativeOrder(b);
    this.f = new Float64Array(n.buffer, n.byteOffset, n.length / 8);
    this.u = new Uint32Array(n.buffer, n.byteOffset, n.length / 4);
    keepShape(this);
  }

  get length(): number {
    return this.f.length >>> 2;
  }

  seq(k: number): number {
    return this.f[4 * k] as number;
  }

  offset(k: number): number {
    return this.f[4 * k + 1] as number;
  }

  group(k: number): number | undefined {
    const g = this.f[4 * k + 2] as number;
    return g >= 0 ? g : undefined;
  }

  fields(k: number, into: Float64Array): void {
    const f = this.f;
    into[0] = f[4 * k] as number;
    into[1] = f[4 * k + 1] as number;
    const g = f[4 * k + 2] as number;
    into[2] = g >= 0 ? g : -1;
  }

  entry(k: number): EntryLine {
    const f = this.f;
    const e: EntryLine = { v: 1, seq: f[4 * k] as number, count: this.u[8 * k + 7] as number, offset: f[4 * k + 1] as number, length: this.u[8 * k + 6] as number, kind: 'frame', schema: 1 };
    const g = f[4 * k + 2] as number;
    if (g >= 0) e.group = g;
    return e;
  }

  isFirst(k: number): boolean {
    return this.first + k === 0;
  }
}

/** The index lines' reader the walk calls once in 32 lines (core/page-planner.ts WALK_ONCE_A_PAGE says why it is exported). */
export const INDEX_ENTRY: (...args: never[]) => unknown = IndexLines.prototype.entry;

/** Records held in memory: `records` starts with record number `first`. */
export interface HeldRecords {
  first: number;
  records: Buffer;
}

/**
 * Where an index file may read its record blocks instead of fresh memory
 * (main/store/block-scratch.ts): a buffer of at least `bytes` bytes, or
 * null; `give` takes it back once the file is closed and no walk reads it.
 */
export interface BlockScratch {
  take(bytes: number): Uint8Array | null;
  give(b: Uint8Array): void;
}

/** Bytes of the largest block an index file reads: a walk's (BLOCK_RECORDS) or findBySeq's (one more, the header). */
export const INDEX_BLOCK_BYTES = (BLOCK_RECORDS + 1) * INDEX_RECORD_BYTES;

/** Blocks smaller than this are read into fresh memory (single records: Buffer's pool serves them). */
const SCRATCH_MIN_BYTES = 4096;

/**
 * The last index file opened, kept alive (core/shape-keeper.ts says why): a
 * page opens one and closes it before the next request, so between requests
 * no instance would be left, and a full collection would free their hidden
 * class and deoptimize the code that reads it (this class's methods, and
 * planResolved, which inlines them). A live instance keeps the hidden class.
 * A plain variable, not keepShape's map: one store a page; written by a
 * function, it lives in the module's context. What it holds once closed is
 * small (its reader; close() drops the blocks).
 */
let lastOpened: FrameIndexFile | null = null;

export class FrameIndexFile {
  /** The block findBySeq read last: the page's walk starts inside it (backwardFrom). */
  private held: HeldRecords | null = null;
  /** Buffers taken from `scratch`, given back by close(). */
  private readonly taken: Uint8Array[] = [];

  private constructor(
    private readonly file: PositionalReader,
    readonly records: number,
    private readonly scratch: BlockScratch | null,
  ) {}

  /**
   * The index behind `file` if it describes exactly this session: `frames`
   * records, the first the header at offset 0, the last ending at
   * `indexedLength` and holding seq `nextSeq - 1`. Null otherwise, and then
   * `file` is closed.
   */
  static async openIfWhole(file: PositionalReader, frames: number, indexedLength: number, nextSeq: number, scratch: BlockScratch | null = null): Promise<FrameIndexFile | null> {
    const f = new FrameIndexFile(file, Math.floor(file.size / INDEX_RECORD_BYTES), scratch);
    lastOpened = f;
    try {
      if (f.records !== frames || frames === 0) throw new Error('size');
      const head = await f.entryAt(0);
      const last = await f.entryAt(frames - 1);
      if (head.offset !== 0 || head.count !== 0 || last.offset + last.length !== indexedLength || last.seq + last.count !== nextSeq) throw new Error('ends');
      return f;
    } catch {
      await f.close();
      return null;
    }
  }

  /**
   * Close the file, giving its scratch buffers back: what was read into
   * them (the blocks, and the views of a walk over them) is not read after
   * this, so the file must outlive its walks (a plan is made before close).
   */
  close(): Promise<void> {
    this.held = null;
    for (const b of this.taken) this.scratch?.give(b);
    this.taken.length = 0;
    return this.file.close();
  }

  /**
   * Records [first, first + n): a view of the file's bytes when the reader holds them all (the kept
   * readers hold small files whole: main/store/kept-readers.ts), else into a scratch buffer when
   * the reader can read into one, else fresh. A held file's block was copied into scratch before:
   * 64 KB a page's walk, ~1-3% of the main thread's time a random page over HTTP.
   */
  private async read(first: number, n: number): Promise<Buffer> {
    const len = n * INDEX_RECORD_BYTES;
    const file = this.file;
    const held = len >= SCRATCH_MIN_BYTES ? (file.heldView?.(first * INDEX_RECORD_BYTES, len) ?? null) : null;
    const dest = held === null && len >= SCRATCH_MIN_BYTES && file.readInto !== undefined ? (this.scratch?.take(len) ?? null) : null;
    let b: Buffer;
    if (held !== null) b = held;
    else if (dest !== null && file.readInto !== undefined) {
      this.taken.push(dest);
      const got = await file.readInto(first * INDEX_RECORD_BYTES, dest.subarray(0, len));
      b = Buffer.from(dest.buffer, dest.byteOffset, got);
    } else b = await this.file.read(first * INDEX_RECORD_BYTES, len);
    // Counted with the sidecar's bytes: the bounded-read guard covers both planners.
    entryReadStats.bytes += b.length;
    entryReadStats.reads++;
    if (b.length !== len) throw new Error('frame index read short');
    return b;
  }

  async entryAt(i: number): Promise<EntryLine> {
    return new IndexLines(await this.read(i, 1), i).entry(0);
  }

  /**
   * Record number of the frame holding `seq` (the last record whose seq <= seq).
   * Probes single records until the range fits one block, then reads that
   * block once and finishes in memory: half the reads of a plain binary search.
   * `within`: records [lo, hi] said to hold it (a network store's sparse
   * index, whose reads are round trips): searched alone once the record at
   * `lo` and the one after `hi` prove the answer lies there (both read at
   * once), else ignored.
   */
  async findBySeq(seq: number, within?: { lo: number; hi: number } | null): Promise<number> {
    let lo = 1; // record 0 is the header
    let hi = this.records - 1;
    if (within != null && Number.isSafeInteger(within.lo) && Number.isSafeInteger(within.hi) && within.lo >= lo && within.lo <= within.hi && within.hi <= hi) {
      const [atLo, afterHi] = await Promise.all([this.seqAt(within.lo), within.hi < hi ? this.seqAt(within.hi + 1) : Number.POSITIVE_INFINITY]);
      if (atLo <= seq && afterHi > seq) {
        lo = within.lo;
        hi = within.hi;
      }
    }
    while (hi - lo >= BLOCK_RECORDS) {
      const mid = (lo + hi + 1) >>> 1;
      if ((await this.seqAt(mid)) <= seq) lo = mid;
      else hi = mid - 1;
    }
    // From the header record on when the range starts just after it: a walk down to the log's start needs it.
    const base = lo === 1 ? 0 : lo;
    const block = await this.read(base, hi - base + 1);
    this.held = { first: base, records: block };
    let a = lo - base;
    let b = hi - base;
    while (a < b) {
      const mid = (a + b + 1) >>> 1;
      if (block.readDoubleLE(mid * INDEX_RECORD_BYTES) <= seq) a = mid;
      else b = mid - 1;
    }
    return base + a;
  }

  private async seqAt(i: number): Promise<number> {
    return (await this.read(i, 1)).readDoubleLE(0);
  }

  /**
   * Records walked backwards from record `from` (inclusive), in blocks. A
   * walk from the record findBySeq just found starts in the block it read
   * (a page's frames are usually all there): that block is not read again.
   */
  backwardFrom(from: number): BackwardEntrySource {
    const held = this.held;
    this.held = null;
    return indexBackward((first, n) => this.read(first, n), from, held);
  }
}

/**
 * A backward walk over index records served by `read(firstRecord, count)`
 * (a file, or memory for the warm-up); `held`: records already in memory,
 * the walk's first block when they hold record `from`.
 */
export function indexBackward(read: (first: number, n: number) => Buffer | Promise<Buffer>, from: number, held: HeldRecords | null = null): BackwardEntrySource {
  let end = from + 1;
  let first = held !== null && held.first <= from && end <= held.first + held.records.length / INDEX_RECORD_BYTES ? held : null;
  return {
    prevBlock: async () => {
      if (end <= 0) return null;
      let start = Math.max(0, end - BLOCK_RECORDS);
      let bytes: Buffer;
      if (first !== null) {
        start = Math.max(start, first.first);
        bytes = first.records.subarray((start - first.first) * INDEX_RECORD_BYTES, (end - first.first) * INDEX_RECORD_BYTES);
        first = null;
      } else bytes = await read(start, end - start);
      const block = new IndexLines(bytes, start);
      end = start;
      return block;
    },
  };
}
