/**
 * The chained frame-checksum records: which frames a slice may trust. The
 * page-level tests (page-errors.test.ts) prove a bad projection never
 * changes a page; these prove the chain trusts exactly the frames that are
 * unchanged, so one damaged frame does not cost its neighbours their trust.
 */
import { describe, expect, it } from 'vitest';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { join } from 'node:path';
import { MemoryBackend } from '../src/storage/memory/memory-backend.js';
import { chainCrcRecords, CRC_RECORD_BYTES, CrcCursor, readCrcRecords, readCrcRecordsAt, recordOffset, sliceCrcRecords } from '../src/streams/frame-crc-file.js';

function frames(lengths: number[], seed = 1): Buffer {
  const total = lengths.reduce((a, b) => a + b, 0);
  const b = Buffer.alloc(total);
  for (let i = 0; i < total; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

/** Offsets of frames laid out back to back from `base`. */
function offsets(lengths: number[], base: number): number[] {
  const out: number[] = [];
  let at = base;
  for (const l of lengths) {
    out.push(at);
    at += l;
  }
  return out;
}

function trusted(cursor: CrcCursor, offs: number[]): boolean[] {
  return offs.map((o) => cursor.trustedLength(o) > 0);
}

describe('chained frame checksums', () => {
  it('chain across appends: each record continues the previous one, the first starts from 0', () => {
    const lengths = [5, 9, 3];
    const bytes = frames(lengths);
    const first = chainCrcRecords(bytes.subarray(0, 5), 100, [5], null);
    const rest = chainCrcRecords(bytes.subarray(5), 105, [9, 3], first.link);
    const all = chainCrcRecords(bytes, 100, lengths, null);
    expect(Buffer.concat([first.records, rest.records])).toEqual(all.records);
    expect(all.records.readUInt32LE(12)).toBe(crc32(bytes.subarray(0, 5)));
    expect(all.records.readUInt32LE(2 * CRC_RECORD_BYTES + 12)).toBe(crc32(bytes));
    expect(all.link).toEqual({ end: 117, crc: crc32(bytes) });
    // A gap in the log (frames the writer did not write) restarts the chain.
    const apart = chainCrcRecords(bytes.subarray(5, 14), 200, [9], first.link);
    expect(apart.records.readUInt32LE(12)).toBe(crc32(bytes.subarray(5, 14)));
  });

  it('trusts exactly the unchanged frames of any slice, whatever is damaged', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        fc.nat(),
        fc.nat(),
        (lengths, damage, a, b) => {
          const base = 1000;
          const bytes = frames(lengths);
          const { records } = chainCrcRecords(bytes, base, lengths, null);
          const offs = offsets(lengths, base);
          const bad = Buffer.from(bytes);
          for (const d of damage) bad[d % bad.length] = (bad[d % bad.length] as number) ^ 0xff;
          // Two flips of one byte cancel out: a frame is changed when its bytes differ.
          const changed = new Set(offs.map((o, k) => k).filter((k) => !bad.subarray((offs[k] as number) - base, (offs[k] as number) - base + (lengths[k] as number)).equals(bytes.subarray((offs[k] as number) - base, (offs[k] as number) - base + (lengths[k] as number)))));
          // A slice of whole frames [lo, hi).
          const lo = a % lengths.length;
          const hi = lo + 1 + (b % (lengths.length - lo));
          const start = offs[lo] as number;
          const end = hi < offs.length ? (offs[hi] as number) : base + bytes.length;
          const slice = bad.subarray(start - base, end - base);
          const cursor = new CrcCursor(sliceCrcRecords(records, start, end) ?? undefined, slice, start);
          const want = offs.slice(lo, hi).map((_, k) => !changed.has(lo + k));
          expect(trusted(cursor, offs.slice(lo, hi))).toEqual(want);
        },
      ),
    );
  });

  it('records that disagree with the slice are never trusted', () => {
    const lengths = [6, 6, 6];
    const bytes = frames(lengths);
    const { records } = chainCrcRecords(bytes, 0, lengths, null);
    // Shifted by one byte: no record starts where a frame does.
    const shifted = new CrcCursor(records, bytes, 1);
    expect(trusted(shifted, [1, 7, 13])).toEqual([false, false, false]);
    // A record whose frame runs past the slice's end.
    const cut = new CrcCursor(records, bytes.subarray(0, 10), 0);
    expect(trusted(cut, [0, 6])).toEqual([true, false]);
    // No records at all.
    expect(new CrcCursor(undefined, bytes, 0).trustedLength(0)).toBe(-1);
  });

  it('reads records by number, or by offset with the chain seed before them', async () => {
    const lengths = [4, 7, 5, 9, 3];
    const bytes = frames(lengths);
    const { records } = chainCrcRecords(bytes, 0, lengths, null);
    const storage = new MemoryBackend();
    await storage.replace('p/frames.crc2', records);
    const ranges = (key: string) => (start: number, end: number) => storage.read(key, start, end);
    const offs = offsets(lengths, 0);
    // Frames 2..3 by number, with frame 1's record as the seed: the same bytes the offset search finds.
    const byNumber = await readCrcRecordsAt(ranges('p/frames.crc2'), 1, 3);
    expect(byNumber).toEqual(records.subarray(1 * CRC_RECORD_BYTES, 4 * CRC_RECORD_BYTES));
    const reader = await storage.openReader('p/frames.crc2');
    expect(await readCrcRecords(reader, offs[2] as number, offs[4] as number, 2)).toEqual(byNumber);
    expect(recordOffset(byNumber as Buffer, 1)).toBe(offs[2]);
    // Past the end: nothing, so the caller falls back to the search.
    expect(await readCrcRecordsAt(ranges('p/frames.crc2'), 4, 3)).toBeNull();
    expect(await readCrcRecordsAt(ranges('p/missing'), 0, 1)).toBeNull();
  });

  it('a record whose length lies is not trusted, though every CRC still matches', () => {
    const lengths = [6, 8, 5, 7];
    const bytes = frames(lengths);
    const records = Buffer.from(chainCrcRecords(bytes, 0, lengths, null).records);
    // Record 1 claims frames 1 and 2 together; the chain (over bytes only) is untouched.
    records.writeUInt32LE(8 + 5, 1 * CRC_RECORD_BYTES + 8);
    const cursor = new CrcCursor(records, bytes, 0);
    const offs = offsets(lengths, 0);
    expect(offs.map((o) => cursor.trustedLength(o))).toEqual([6, -1, 5, 7]);
  });
});
