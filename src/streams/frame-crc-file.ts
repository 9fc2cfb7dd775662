/**
 * The frame-checksum projection: `sessions/index/<id>/frames.crc2`, a
 * derived, rebuildable file (SPEC section 3) that the writer appends one
 * 16-byte record to for every frame it writes:
 *
 *   0  4  offset, low 32 bits   (little endian)
 *   4  4  offset, high bits
 *   8  4  frame length in bytes
 *  12  4  chained CRC-32 (IEEE, zlib.crc32): of the frame's bytes, starting
 *         from the previous record's CRC when that record's frame ends where
 *         this one begins, else from 0
 *
 * Why: a JSONL frame carries no checksum, so a page must validate every byte
 * of it in JS to catch damage. A frame whose bytes still match the CRC the
 * writer computed is exactly what the writer wrote (JSON.stringify of a
 * validated record), so the page path may skip per-member validation for it.
 * Chaining makes the check of a whole slice one native CRC call over its
 * bytes, compared with its last record: per-frame calls (version 1 of this
 * file, `frames.crc32`, now ignored) cost a tail page more than the CRC
 * itself. When a chain does not match, each frame is checked on its own
 * (from its predecessor's record), so one changed frame does not slow its
 * neighbours down. Any mismatch, missing or stale record simply sends the
 * frame down the fully validating path: the projection can speed pages up,
 * never change them. Deleting it loses nothing.
 */
import { crc32 } from 'node:zlib';
import { keepShape } from '../core/shape-keeper.js';
import type { PositionalReader, RangeRead } from './positional-reader.js';
import { LITTLE_ENDIAN, projectionReadStats, readRecordsAt, u32 } from './record-file.js';
import { META_CONTINUES, META_RECORD_BYTES, META_ROW, metaChainHolds } from './frame-meta-file.js';

export const CRC_RECORD_BYTES = 16;
export const CRC_FILE_NAME = 'frames.crc2';
/** The unchained first version's file: ignored by readers, removed by writers. */
export const CRC_FILE_NAME_V1 = 'frames.crc32';

/** Where a chain stands: the end offset and CRC of the last record. */
export interface CrcLink {
  end: number;
  crc: number;
}

/**
 * Chained records for frames laid out back to back in `bytes` from log
 * offset `offset` (frame lengths in `lengths`), continuing `prev` when it
 * ends at `offset`. Returns the records and the new chain end.
 */
export function chainCrcRecords(bytes: Uint8Array, offset: number, lengths: readonly number[], prev: CrcLink | null): { records: Buffer; link: CrcLink | null } {
  const out = Buffer.allocUnsafe(lengths.length * CRC_RECORD_BYTES);
  let link = prev;
  let at = 0;
  lengths.forEach((len, i) => {
    const o = i * CRC_RECORD_BYTES;
    const start = offset + at;
    const crc = crc32(bytes.subarray(at, at + len), link !== null && link.end === start ? link.crc : 0);
    out.writeUInt32LE(start % 2 ** 32, o);
    out.writeUInt32LE(Math.floor(start / 2 ** 32), o + 4);
    out.writeUInt32LE(len, o + 8);
    out.writeUInt32LE(crc, o + 12);
    link = { end: start + len, crc };
    at += len;
  });
  return { records: out, link };
}

export function recordOffset(b: Uint8Array, i: number): number {
  const o = i * CRC_RECORD_BYTES;
  return u32(b, o) + u32(b, o + 4) * 2 ** 32;
}

function recordLength(b: Uint8Array, i: number): number {
  return u32(b, i * CRC_RECORD_BYTES + 8);
}

function recordCrc(b: Uint8Array, i: number): number {
  return u32(b, i * CRC_RECORD_BYTES + 12);
}

/** Where the chain stands after the last whole record of a projection file of `size` bytes, or null. */
export async function lastCrcLink(file: Pick<PositionalReader, 'read'>, size: number): Promise<CrcLink | null> {
  if (size < CRC_RECORD_BYTES) return null;
  const rec = await file.read(size - (size % CRC_RECORD_BYTES) - CRC_RECORD_BYTES, CRC_RECORD_BYTES);
  if (rec.length < CRC_RECORD_BYTES) return null;
  return { end: recordOffset(rec, 0) + recordLength(rec, 0), crc: recordCrc(rec, 0) };
}

/** Number of records whose offset is below `offset` (records are offset-sorted). */
function recordsBelow(records: Uint8Array, offset: number): number {
  let lo = 0;
  let hi = Math.floor(records.byteLength / CRC_RECORD_BYTES);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (recordOffset(records, mid) < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The records a slice of frames [start, end) needs: those of its frames,
 * preceded by the record just before them (the chain's starting value).
 */
export function sliceCrcRecords(records: Uint8Array, start: number, end: number): Uint8Array | null {
  const first = Math.max(0, recordsBelow(records, start) - 1);
  const stop = recordsBelow(records, end);
  return stop > first ? records.subarray(first * CRC_RECORD_BYTES, stop * CRC_RECORD_BYTES) : null;
}

/**
 * The records for frames in [start, end) plus the one before them, by
 * binary search over the (offset-sorted) file: O(log n) small reads plus
 * one read of the range. Null when the file is missing or yields nothing.
 */
export async function readCrcRecords(file: PositionalReader, start: number, end: number, maxRecords: number): Promise<Buffer | null> {
  return (await readCrcRecordsFrom(file, start, end, maxRecords))?.records ?? null;
}

/** As readCrcRecords, with the record number of the first record read (row metadata is read by the same numbers). */
export async function readCrcRecordsFrom(file: PositionalReader, start: number, end: number, maxRecords: number): Promise<{ records: Buffer; first: number } | null> {
  const n = Math.floor(file.size / CRC_RECORD_BYTES);
  if (n === 0) return null;
  const offsetAt = async (i: number): Promise<number> => {
    const rec = await file.read(i * CRC_RECORD_BYTES, CRC_RECORD_BYTES);
    projectionReadStats.bytes += rec.length;
    return rec.length < CRC_RECORD_BYTES ? Infinity : recordOffset(rec, 0);
  };
  // First record with offset >= start, then one back for the chain's starting value.
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((await offsetAt(mid)) < start) lo = mid + 1;
    else hi = mid;
  }
  const first = Math.max(0, lo - 1);
  const count = Math.min(n - first, maxRecords + 1);
  if (count <= 0) return null;
  const out = await file.read(first * CRC_RECORD_BYTES, count * CRC_RECORD_BYTES);
  projectionReadStats.bytes += out.length;
  const got = Math.floor(out.length / CRC_RECORD_BYTES);
  const keep = recordsBelow(out.subarray(0, got * CRC_RECORD_BYTES), end);
  return keep === 0 ? null : { records: out.subarray(0, keep * CRC_RECORD_BYTES), first };
}

/**
 * Records [first, first + count) by record number, in one read: for a
 * session whose projection has one record per frame from the header on
 * (every session this writer created), record k is frame k's, so a span
 * planned from the frame index needs no binary search. The caller checks
 * that assumption against a known frame offset. Null when the file is
 * missing or shorter. (The page path reads them slice by slice into each
 * slice's own buffer instead: record-file.ts readRecordsInto.)
 */
export function readCrcRecordsAt(read: RangeRead, first: number, count: number): Promise<Buffer | null> {
  return readRecordsAt(read, CRC_RECORD_BYTES, first, count);
}

const NO_META = new Uint8Array(0);

/**
 * CrcCursor.pin (and seed) when the slice is not pinned. Not an integer on purpose, as
 * frame-claim.ts NO_CLAIM: CRCs are uint32, half past V8's small-integer range, and a field
 * first holding a small integer changed representation (a new map) on the first such CRC,
 * deoptimizing the decode loop optimized for the old one.
 */
export const NOT_PINNED = -0.5;

/** trustedLength's answer for a frame proven changed since the writer wrote it. */
export const CHANGED = -2;

/**
 * Row metadata the cursor may use: one record per checksum record, aligned
 * for the views, on a little-endian machine, and an unbroken chain (seeded
 * by the record before the slice when the records start with it).
 */
function usableMeta(meta: Uint8Array, n: number, u: Uint32Array, start: number): boolean {
  if (!LITTLE_ENDIAN || meta.byteOffset % 8 !== 0 || meta.byteLength !== n * META_RECORD_BYTES) return false;
  const seeded = (u[0] as number) + (u[1] as number) * 2 ** 32 < start;
  return metaChainHolds(meta, seeded);
}

/** Records as 32-bit words (offset low, offset high, length, CRC per record), without a copy when the layout allows. */
function recordWords(records: Uint8Array): Uint32Array {
  const words = Math.floor(records.byteLength / CRC_RECORD_BYTES) * 4;
  if (LITTLE_ENDIAN && records.byteOffset % 4 === 0) return new Uint32Array(records.buffer, records.byteOffset, words);
  const out = new Uint32Array(words);
  const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
  for (let w = 0; w < words; w++) out[w] = view.getUint32(w * 4, true);
  return out;
}

/**
 * Flag in `ok` the records whose frames in `bytes` (read from log offset
 * `start`) match. Usually one CRC call over the slice settles it; otherwise
 * each chain of adjacent records inside the slice is checked with one CRC
 * call over its bytes, and a chain that does not match frame by frame.
 * Why the O(1) first step: this runs once per slice, so the warm-up cannot
 * make its per-record loop hot, and on the first real page (~7,500 records
 * a slice) that loop ran interpreted while its compilation waited for a CPU.
 */
function markTrusted(u: Uint32Array, ok: Uint8Array, bytes: Uint8Array, start: number): boolean {
  const n = ok.length;
  const end = start + bytes.byteLength;
  // The common case in O(1) JS: the writer's unbroken chain over the whole slice. The last
  // record's CRC equals one CRC of all the bytes from the first in-slice record on only if
  // every record between continued the chain (a restart would have seeded it with 0).
  const first = (u[0] as number) + (u[1] as number) * 2 ** 32 < start ? 1 : 0;
  if (first < n) {
    const from = (u[4 * first] as number) + (u[4 * first + 1] as number) * 2 ** 32;
    const to = (u[4 * n - 4] as number) + (u[4 * n - 3] as number) * 2 ** 32 + (u[4 * n - 2] as number);
    if (from === start && to <= end && crc32(bytes.subarray(0, to - start), chainSeed(u, first)) === u[4 * n - 1]) {
      ok.fill(1, first, n);
      return true;
    }
  }
  let i = 0;
  while (i < n) {
    const off = (u[4 * i] as number) + (u[4 * i + 1] as number) * 2 ** 32;
    let stop = off + (u[4 * i + 2] as number);
    if (off < start || stop > end) {
      i++;
      continue;
    }
    // A chain: records i..j, each frame ending where the next begins, all inside the slice.
    let j = i;
    while (j + 1 < n) {
      const next = (u[4 * j + 4] as number) + (u[4 * j + 5] as number) * 2 ** 32;
      const nextStop = next + (u[4 * j + 6] as number);
      if (next !== stop || nextStop > end) break;
      j++;
      stop = nextStop;
    }
    if (crc32(bytes.subarray(off - start, stop - start), chainSeed(u, i)) === u[4 * j + 3]) ok.fill(1, i, j + 1);
    else {
      for (let k = i, o = off; k <= j; o += u[4 * k + 2] as number, k++) {
        if (crc32(bytes.subarray(o - start, o - start + (u[4 * k + 2] as number)), chainSeed(u, k)) === u[4 * k + 3]) ok[k] = 1;
      }
    }
    i = j + 1;
  }
  return false;
}

/** A record whose frame is proven changed (ok[k] === KNOWN_BAD). */
const KNOWN_BAD = 2;

/**
 * Among the records whose frames did not match, flag those whose mismatch
 * is proven, so that the frame is damaged and not the record: the CRC the
 * record holds, and the one its check started from, are both named by row
 * metadata whose chain holds (frame-meta-file.ts: `mu`, 10 words a record,
 * the frame's CRC at word 8), and its offset and length agree with the
 * records around it (the next record starts where it ends, or the slice
 * does). Such a frame's bytes are not what the writer wrote: the page that
 * reads it fails. Any other mismatch may be the record's own damage, and
 * only sends the frame down the validating path.
 */
function markKnownBad(u: Uint32Array, ok: Uint8Array, mu: Uint32Array, start: number, end: number): void {
  const n = ok.length;
  if (mu.length < 10 * n) return;
  for (let k = 0; k < n; k++) {
    if (ok[k] !== 0) continue;
    const off = (u[4 * k] as number) + (u[4 * k + 1] as number) * 2 ** 32;
    const stop = off + (u[4 * k + 2] as number);
    if (off < start || stop > end || mu[10 * k + 8] !== u[4 * k + 3]) continue;
    const next = k + 1 < n ? (u[4 * k + 4] as number) + (u[4 * k + 5] as number) * 2 ** 32 : end;
    if (next !== stop) continue;
    // Its check's start: the previous record's CRC (chained), proven the same way; or 0 for the file's first frame.
    if (k === 0) {
      if (off !== 0) continue;
    } else {
      const prevEnd = (u[4 * k - 4] as number) + (u[4 * k - 3] as number) * 2 ** 32 + (u[4 * k - 2] as number);
      if (prevEnd !== off || mu[10 * (k - 1) + 8] !== u[4 * k - 1]) continue;
    }
    ok[k] = KNOWN_BAD;
  }
}

/** The CRC record k's chain starts from: its predecessor's when that frame ends where k's begins, else 0. */
function chainSeed(u: Uint32Array, k: number): number {
  if (k === 0) return 0;
  const prevEnd = (u[4 * k - 4] as number) + (u[4 * k - 3] as number) * 2 ** 32 + (u[4 * k - 2] as number);
  return prevEnd === (u[4 * k] as number) + (u[4 * k + 1] as number) * 2 ** 32 ? (u[4 * k - 1] as number) : 0;
}

/**
 * The frames of one slice that match the writer's records. Built once per
 * slice (markTrusted); the decoder then walks its frames in order and asks
 * `trustedLength(offset)`.
 */
export class CrcCursor {
  private i = 0;
  private readonly n: number;
  private readonly u: Uint32Array;
  private readonly ok: Uint8Array;
  /** Row metadata (frame-meta-file.ts), one record per checksum record, as float64 and uint32 views; empty when absent or broken. */
  private readonly mf: Float64Array;
  private readonly mu: Uint32Array;
  /**
   * When one CRC-32 computed here over all of `bytes` (chained from `seed`) matched the last
   * record, so every byte of the slice is the writer's: that CRC; else NOT_PINNED. Two slices read at
   * the same offset with the same seed and pin hold the same bytes but with probability ~2^-32
   * (workers/claim-memo.ts relies on it).
   */
  readonly pin: number = NOT_PINNED;
  readonly seed: number = NOT_PINNED;

  /**
   * `records` from sliceCrcRecords/readCrcRecords; `bytes` the slice's
   * frames, read from log offset `start`; `meta` the same records' row
   * metadata, used only if its chain holds.
   */
  constructor(records: Uint8Array | undefined, bytes: Uint8Array, start: number, meta?: Uint8Array) {
    this.u = records === undefined ? new Uint32Array(0) : recordWords(records);
    this.n = this.u.length >>> 2;
    this.ok = new Uint8Array(this.n);
    const all = this.n > 0 && markTrusted(this.u, this.ok, bytes, start);
    // markTrusted's one-call case, and it reached the slice's end.
    const u = this.u;
    const n = this.n;
    const lastEnd = n > 0 ? (u[4 * n - 4] as number) + (u[4 * n - 3] as number) * 2 ** 32 + (u[4 * n - 2] as number) : -1;
    const pinned = all && lastEnd === start + bytes.byteLength;
    if (pinned) {
      this.pin = u[4 * n - 1] as number;
      this.seed = chainSeed(u, (u[0] as number) + (u[1] as number) * 2 ** 32 < start ? 1 : 0);
    }
    const m = this.n > 0 && meta !== undefined && usableMeta(meta, this.n, this.u, start) ? meta : NO_META;
    this.mf = new Float64Array(m.buffer, m.byteOffset, m.byteLength / 8);
    this.mu = new Uint32Array(m.buffer, m.byteOffset, m.byteLength / 4);
    if (this.n > 0 && !all) markKnownBad(this.u, this.ok, this.mu, start, start + bytes.byteLength);
    keepShape(this);
  }

  /**
   * The record of the frame trustedLength last accepted, when its row
   * metadata holds and says it is a packed row continuing the previous
   * frame's block; else -1. Read its values with the meta* methods.
   */
  continuingRow(): number {
    const i = this.i;
    const mu = this.mu;
    if (10 * i + 10 > mu.length) return -1;
    return ((mu[10 * i + 7] as number) & (META_ROW | META_CONTINUES)) === (META_ROW | META_CONTINUES) && mu[10 * i + 8] === this.u[4 * i + 3] ? i : -1;
  }

  metaTime0(i: number): number {
    return this.mf[5 * i] as number;
  }

  metaDtSum(i: number): number {
    return this.mf[5 * i + 1] as number;
  }

  /** Where the row's gaps start and end, and its members, in bytes from the frame's first. */
  metaDtStart(i: number): number {
    return this.mu[10 * i + 4] as number;
  }

  metaDtEnd(i: number): number {
    return this.mu[10 * i + 5] as number;
  }

  metaCount(i: number): number {
    return this.mu[10 * i + 6] as number;
  }

  /**
   * The frame at `offset` (frames asked in increasing order) matches its
   * record: its length; CHANGED when it is proven not to (markKnownBad);
   * else -1. The length must also reach exactly the next
   * record's offset: the chain's CRC covers the bytes, not the lengths, and
   * a wrong length would cut the frame wrongly.
   */
  trustedLength(offset: number): number {
    const u = this.u;
    let i = this.i;
    while (i < this.n && (u[4 * i] as number) + (u[4 * i + 1] as number) * 2 ** 32 < offset) i++;
    this.i = i;
    if (i >= this.n || this.ok[i] !== 1 || (u[4 * i] as number) + (u[4 * i + 1] as number) * 2 ** 32 !== offset) return this.untrusted(i, offset);
    const len = u[4 * i + 2] as number;
    if (i + 1 < this.n && (u[4 * i + 4] as number) + (u[4 * i + 5] as number) * 2 ** 32 !== offset + len) return -1;
    return len;
  }

  /** trustedLength's answer for a frame without a matching record at `i`: CHANGED when proven changed, else -1 (apart: rare, and the decode loop inlines trustedLength). */
  private untrusted(i: number, offset: number): number {
    const u = this.u;
    return i < this.n && this.ok[i] === KNOWN_BAD && (u[4 * i] as number) + (u[4 * i + 1] as number) * 2 ** 32 === offset ? CHANGED : -1;
  }
}
