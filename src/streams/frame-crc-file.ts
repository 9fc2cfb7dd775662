/**
 * The frame-checksum projection: `sessions/index/<id>/frames.crc32`, a
 * derived, rebuildable file (SPEC section 3) that the writer appends one
 * 16-byte record to for every frame it writes:
 *
 *   0  4  offset, low 32 bits   (little endian)
 *   4  4  offset, high bits
 *   8  4  frame length in bytes
 *  12  4  CRC-32 (IEEE, zlib.crc32) of the frame's bytes
 *
 * Why: a JSONL frame carries no checksum, so a page must validate every byte
 * of it in JS to catch damage. A frame whose bytes still match the CRC the
 * writer computed is exactly what the writer wrote (JSON.stringify of a
 * validated record), so the page path may skip per-member validation for it;
 * the CRC itself is computed natively at GB/s. Any mismatch, missing or
 * stale record simply sends the frame down the fully validating path: the
 * projection can speed pages up, never change them. Deleting it loses
 * nothing.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { crc32 } from 'node:zlib';

export const CRC_RECORD_BYTES = 16;
export const CRC_FILE_NAME = 'frames.crc32';

/** Records for frames laid out back to back from `offset`, in one buffer. */
export function crcRecords(frames: readonly Uint8Array[], offset: number): Buffer {
  const out = Buffer.allocUnsafe(frames.length * CRC_RECORD_BYTES);
  let at = offset;
  frames.forEach((f, i) => {
    const o = i * CRC_RECORD_BYTES;
    out.writeUInt32LE(at % 2 ** 32, o);
    out.writeUInt32LE(Math.floor(at / 2 ** 32), o + 4);
    out.writeUInt32LE(f.length, o + 8);
    out.writeUInt32LE(crc32(f), o + 12);
    at += f.length;
  });
  return out;
}

function u32(b: Uint8Array, o: number): number {
  return ((b[o] as number) | ((b[o + 1] as number) << 8) | ((b[o + 2] as number) << 16)) + (b[o + 3] as number) * 2 ** 24;
}

export function recordOffset(b: Uint8Array, i: number): number {
  const o = i * CRC_RECORD_BYTES;
  return u32(b, o) + u32(b, o + 4) * 2 ** 32;
}

/**
 * The records of frames starting in [start, end), by binary search over the
 * (offset-sorted) file: O(log n) small reads plus one read of the range.
 * Null when the file is missing or yields nothing usable.
 */
export function readCrcRecords(path: string, start: number, end: number, maxRecords: number): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const n = Math.floor(fstatSync(fd).size / CRC_RECORD_BYTES);
    if (n === 0) return null;
    const rec = Buffer.allocUnsafe(CRC_RECORD_BYTES);
    const offsetAt = (i: number): number => {
      readSync(fd, rec, 0, CRC_RECORD_BYTES, i * CRC_RECORD_BYTES);
      return recordOffset(rec, 0);
    };
    // First record with offset >= start.
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (offsetAt(mid) < start) lo = mid + 1;
      else hi = mid;
    }
    const count = Math.min(n - lo, maxRecords);
    if (count <= 0) return null;
    const out = Buffer.allocUnsafe(count * CRC_RECORD_BYTES);
    const got = readSync(fd, out, 0, out.length, lo * CRC_RECORD_BYTES);
    const whole = Math.floor(got / CRC_RECORD_BYTES);
    // Keep the records inside the range.
    let k = 0;
    while (k < whole && recordOffset(out, k) < end) k++;
    return k === 0 ? null : out.subarray(0, k * CRC_RECORD_BYTES);
  } finally {
    closeSync(fd);
  }
}

/**
 * Walks a slice's records in step with its frames: `matches(offset, bytes)`
 * is true when the next record for that offset has the frame's length and
 * CRC. Records out of order or missing just never match.
 */
export class CrcCursor {
  private i = 0;
  private readonly n: number;

  constructor(private readonly records: Uint8Array | undefined) {
    this.n = records === undefined ? 0 : Math.floor(records.byteLength / CRC_RECORD_BYTES);
  }

  matches(offset: number, frame: Uint8Array): boolean {
    const r = this.records;
    if (r === undefined) return false;
    while (this.i < this.n && recordOffset(r, this.i) < offset) this.i++;
    if (this.i >= this.n || recordOffset(r, this.i) !== offset) return false;
    const o = this.i * CRC_RECORD_BYTES;
    return u32(r, o + 8) === frame.length && u32(r, o + 12) === crc32(frame);
  }
}
