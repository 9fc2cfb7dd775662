/**
 * Reads of fixed-size record files (the derived projections under
 * `sessions/index/<id>/`), which are optional: a file that does not exist
 * or is too short reads as null, never as an error.
 */
import type { PositionalReader, RangeRead } from './positional-reader.js';

/** Whether typed arrays are little endian here, as the record files are (every platform Node ships for but s390x): typed views then read records in place. */
export const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The unsigned 32-bit little-endian integer at b[o] (any alignment, any byte order of the machine). */
export function u32(b: Uint8Array, o: number): number {
  return ((b[o] as number) | ((b[o + 1] as number) << 8) | ((b[o + 2] as number) << 16)) + (b[o + 3] as number) * 2 ** 24;
}

/** Bytes the page path has read from projection record files (the bounded-read guard counts them). */
export const projectionReadStats = { bytes: 0 };

/** Records [first, first + count) of `recordBytes` bytes each, by record number, in one read; null when missing or shorter. */
export async function readRecordsAt(read: RangeRead, recordBytes: number, first: number, count: number): Promise<Buffer | null> {
  const out = await read(first * recordBytes, (first + count) * recordBytes).catch(() => null);
  if (out === null) return null;
  projectionReadStats.bytes += out.length;
  return out.length === count * recordBytes ? out : null;
}

/**
 * Records [first, first + count) of `recordBytes` bytes each written into
 * `dest` (exactly that long), in one read: whether they were all there.
 * Through the reader's readInto when it has one, else read and copied.
 */
export async function readRecordsInto(file: PositionalReader, recordBytes: number, first: number, dest: Uint8Array): Promise<boolean> {
  const pos = first * recordBytes;
  let got: number;
  try {
    if (file.readInto !== undefined) got = await file.readInto(pos, dest);
    else {
      const b = await file.read(pos, dest.length);
      dest.set(b.subarray(0, dest.length));
      got = b.length;
    }
  } catch {
    return false;
  }
  projectionReadStats.bytes += got;
  return got === dest.length;
}
