/**
 * Reads of fixed-size record files (the derived projections under
 * `sessions/index/<id>/`), which are optional: a file that cannot be opened
 * or is too short reads as null, never as an error.
 */
import { closeSync, openSync, readSync } from 'node:fs';

/** Whether typed arrays are little endian here, as the record files are (every platform Node ships for but s390x): typed views then read records in place. */
export const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The unsigned 32-bit little-endian integer at b[o] (any alignment, any byte order of the machine). */
export function u32(b: Uint8Array, o: number): number {
  return ((b[o] as number) | ((b[o + 1] as number) << 8) | ((b[o + 2] as number) << 16)) + (b[o + 3] as number) * 2 ** 24;
}

/** Bytes the page path has read from projection record files (the bounded-read guard counts them). */
export const projectionReadStats = { bytes: 0 };

/** `read(fd)` on the file opened for reading, closed after; null when it cannot be opened. */
export function withFile<T>(path: string, read: (fd: number) => T | null): T | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    return read(fd);
  } finally {
    closeSync(fd);
  }
}

/** Records [first, first + count) of `recordBytes` bytes each, by record number, in one read; null when missing or shorter. */
export function readRecordsAt(path: string, recordBytes: number, first: number, count: number): Buffer | null {
  return withFile(path, (fd) => {
    const out = Buffer.allocUnsafe(count * recordBytes);
    const got = readSync(fd, out, 0, out.length, first * recordBytes);
    projectionReadStats.bytes += got;
    return got === out.length ? out : null;
  });
}
