/**
 * The row-metadata projection: `sessions/index/<id>/frames.meta`, derived
 * and rebuildable (SPEC section 3), one 40-byte record per frame, appended
 * by the writer together with the frame's checksum record (frames.crc2):
 * record k of both files describes the same frame.
 *
 *   0  8  time0 of the row (float64, little endian)
 *   8  8  sum of its gaps (float64)
 *  16  4  where its gaps start, in bytes from the frame's first byte
 *  20  4  where they end (the `]` after the last gap); in a binary (SPF2)
 *         frame, where its member items start (after the array header)
 *  24  4  its number of members
 *  28  4  flags: ROW (a packed row in the writer's layout), CONTINUES (the
 *         previous frame was a row or delta event of the same block)
 *  32  4  the frame's chained CRC, as in its frames.crc2 record: binds this
 *         record to those bytes
 *  36  4  chain: CRC-32 (zlib.crc32) of this file's bytes from its start up
 *         to this field
 *
 * Why: a tail page is ~15,000 row frames of one block, and reading each
 * row's header and gap list was half of its decode. With this record, a row
 * that continues the block needs none of that: its gaps and members are
 * copied by offset. What the record says is what the trusted-frame scanner
 * read from the frame when the writer wrote it.
 *
 * Integrity: the chain makes a run of records checkable with one native CRC
 * call over their bytes (from the previous record's chain field on), and
 * each record names its frame's CRC, so a record is used only for the
 * frame bytes it was written for, and only once those bytes passed their
 * own checksum. Anything that does not check out is ignored: the frames are
 * scanned as without this file. Deleting it loses nothing.
 */
import { crc32 } from 'node:zlib';
import type { PositionalReader, RangeRead } from './positional-reader.js';
import { sameRunKey, type RunKey } from '../core/chunk-codec.js';
import { readRecordsAt, u32 } from './record-file.js';
import { scanTrustedFrame, TRUSTED_ROW, trustedRow } from './trusted-frame-scanner.js';
import { binaryRow, readWriterRow } from './msgpack-row.js';

export const META_RECORD_BYTES = 40;
export const META_FILE_NAME = 'frames.meta';
/** Flags. */
export const META_ROW = 1;
export const META_CONTINUES = 2;

/** Where the writer's meta chain stands: the last record's chain value and the run key of the last frame (null: not a row). */
export interface MetaLink {
  chain: number | null;
  key: RunKey | null;
}

const BRACE = 0x7b;
const LOWER_A = 0x61;

/** A binary frame's header (frame-codec.ts's BINARY_HEADER_BYTES; not imported, which would load msgpackr with this file). */
const BINARY_HEADER_BYTES = 16;

/** Whether b[at, at + len) is a binary (SPF2) frame whose payload is a packed row in the writer's MessagePack layout (then read into `binaryRow`). */
function binaryWriterRow(b: Uint8Array, at: number, len: number): boolean {
  return len > BINARY_HEADER_BYTES && b[at] === 0x53 && b[at + 1] === 0x50 && b[at + 2] === 0x46 && b[at + 3] === 0x32 && readWriterRow(b, at + BINARY_HEADER_BYTES, at + len);
}

/**
 * Meta records for frames laid out back to back in `bytes` (lengths in
 * `lengths`), whose chained CRCs are `frameCrcs`, continuing `prev`.
 */
export function metaRecords(bytes: Uint8Array, lengths: readonly number[], frameCrcs: readonly number[], prev: MetaLink): { records: Buffer; link: MetaLink } {
  // Four bytes ahead of the records hold the previous chain value, so that every record's chain
  // is one CRC over the 40 bytes before its own chain field (that value, then its payload).
  const buf = Buffer.alloc(4 + lengths.length * META_RECORD_BYTES);
  let { chain, key } = prev;
  if (chain !== null) buf.writeUInt32LE(chain, 0);
  let at = 0;
  for (let i = 0; i < lengths.length; i++) {
    const len = lengths[i] as number;
    const o = 4 + i * META_RECORD_BYTES;
    let nextKey: RunKey | null = null;
    if (binaryWriterRow(bytes, at, len)) {
      // A binary row: where its gap items and member items start (msgpack-row.ts reads them from there).
      const r = binaryRow;
      nextKey = r.key;
      buf.writeDoubleLE(r.time0, o);
      buf.writeDoubleLE(r.dtSum, o + 8);
      buf.writeUInt32LE(r.dtAt - at, o + 16);
      buf.writeUInt32LE(r.membersAt - at, o + 20);
      buf.writeUInt32LE(r.n, o + 24);
      buf.writeUInt32LE(META_ROW | (key !== null && sameRunKey(key, nextKey) ? META_CONTINUES : 0), o + 28);
    } else if (bytes[at] === BRACE && scanTrustedFrame(bytes, at, at + len - 1) === TRUSTED_ROW) {
      const r = trustedRow;
      // Key objects are never changed once handed out (trusted-frame-scanner.ts keyOf): kept as is.
      nextKey = r.key;
      // A packed row (type text-/reasoning-/tool-call-chunks), not a delta event read as a one-member row.
      if (bytes[at + 9] !== LOWER_A) {
        buf.writeDoubleLE(r.time0, o);
        buf.writeDoubleLE(r.dtSum, o + 8);
        buf.writeUInt32LE(r.dtStart - at, o + 16);
        buf.writeUInt32LE(r.dtEnd - at, o + 20);
        buf.writeUInt32LE(r.n, o + 24);
        buf.writeUInt32LE(META_ROW | (key !== null && sameRunKey(key, nextKey) ? META_CONTINUES : 0), o + 28);
      }
    }
    buf.writeUInt32LE(frameCrcs[i] as number, o + 32);
    // Chain: the CRC of the file up to this field, i.e. on from the previous chain field (itself included).
    chain = chain === null ? crc32(buf.subarray(o, o + 36), 0) : crc32(buf.subarray(o - 4, o + 36), chain);
    buf.writeUInt32LE(chain, o + 36);
    key = nextKey;
    at += len;
  }
  return { records: buf.subarray(4), link: { chain, key } };
}

/**
 * Whether records `m` (whole records) hold an unbroken chain: `seeded` when
 * the first is the record before the ones of interest (its chain field then
 * seeds the check), else the first is the file's first record.
 */
export function metaChainHolds(m: Uint8Array, seeded: boolean): boolean {
  const n = Math.floor(m.byteLength / META_RECORD_BYTES);
  if (n === 0 || (seeded && n < 2)) return false;
  const last = u32(m, (n - 1) * META_RECORD_BYTES + 36);
  if (seeded) return crc32(m.subarray(36, (n - 1) * META_RECORD_BYTES + 36), u32(m, 36)) === last;
  return crc32(m.subarray(0, (n - 1) * META_RECORD_BYTES + 36), 0) === last;
}

/** The writer's link from the file's last record (its chain value; the last key is not stored: the next frame is then never marked as continuing). */
export async function lastMetaLink(file: Pick<PositionalReader, 'read'>, size: number): Promise<MetaLink> {
  if (size < META_RECORD_BYTES) return { chain: null, key: null };
  const rec = await file.read(size - (size % META_RECORD_BYTES) - 4, 4);
  return rec.length < 4 ? { chain: null, key: null } : { chain: rec.readUInt32LE(0), key: null };
}

/** Records [first, first + count) by record number, in one read; null when the file is missing or shorter. */
export function readMetaRecordsAt(read: RangeRead, first: number, count: number): Promise<Buffer | null> {
  return readRecordsAt(read, META_RECORD_BYTES, first, count);
}
