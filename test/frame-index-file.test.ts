/**
 * The binary frame index read back through the planner's interface: every
 * field of every record, whether the block it comes in is aligned for the
 * typed views or not (a misaligned block is copied first).
 */
import { describe, expect, it } from 'vitest';
import type { EntryLine } from '../src/core/types.js';
import fc from 'fast-check';
import { FrameIndexFile, INDEX_RECORD_BYTES, indexBackward, indexRecords } from '../src/streams/frame-index-file.js';

function entries(n: number): EntryLine[] {
  const out: EntryLine[] = [{ v: 1, seq: 0, count: 0, offset: 0, length: 97, kind: 'frame', schema: 1 }];
  let seq = 0;
  let offset = 97;
  for (let i = 1; i < n; i++) {
    // Seqs and offsets past 2^32, lengths and counts up to 2^32 - 1: every field at its widest.
    const e: EntryLine = { v: 1, seq: seq + 2 ** 40, count: i % 5 === 0 ? 2 ** 32 - 1 : i, offset: offset + 2 ** 41, length: i % 7 === 0 ? 2 ** 32 - 1 : 50 + i, kind: 'frame', schema: 1 };
    if (i % 3 === 0) e.group = seq + 2 ** 40 - 4;
    out.push(e);
    seq += 10;
    offset += 3_000;
  }
  return out;
}

async function walk(read: (first: number, n: number) => Buffer, from: number): Promise<{ entries: EntryLine[]; seqs: number[]; groups: (number | undefined)[]; first: boolean[]; fields: number[][] }> {
  const src = indexBackward(read, from);
  const got = { entries: [] as EntryLine[], seqs: [] as number[], groups: [] as (number | undefined)[], first: [] as boolean[], fields: [] as number[][] };
  const into = new Float64Array(3);
  for (let b = await src.prevBlock(); b !== null; b = await src.prevBlock()) {
    for (let k = b.length - 1; k >= 0; k--) {
      got.entries.push(b.entry(k));
      got.seqs.push(b.seq(k));
      got.groups.push(b.group(k));
      got.first.push(b.isFirst(k));
      b.fields(k, into);
      got.fields.push([...into]);
    }
  }
  return got;
}

describe('frame index records', () => {
  const es = entries(5_000);
  const records = indexRecords(es);
  const expected = [...es].reverse();

  it.each([
    ['aligned', 0],
    ['misaligned', 3],
  ])('read back exactly from %s blocks', async (_name, shift) => {
    const backing = Buffer.alloc(records.length + 8);
    records.copy(backing, shift);
    const file = backing.subarray(shift, shift + records.length);
    const read = (first: number, n: number) => file.subarray(first * INDEX_RECORD_BYTES, (first + n) * INDEX_RECORD_BYTES);
    const got = await walk(read, es.length - 1);
    expect(got.entries).toEqual(expected);
    expect(got.seqs).toEqual(expected.map((e) => e.seq));
    expect(got.groups).toEqual(expected.map((e) => e.group));
    expect(got.first).toEqual(expected.map((_, i) => i === expected.length - 1));
    // What the planner's walk reads of each line in one call: the same seq, offset and group (-1: none).
    expect(got.fields).toEqual(expected.map((e) => [e.seq, e.offset, e.group ?? -1]));
  });

  it('fields() reads a stored negative or NaN group as none, as group() does', async () => {
    const rs = indexRecords(es.slice(0, 4));
    rs.writeDoubleLE(-7, 2 * INDEX_RECORD_BYTES + 16);
    rs.writeDoubleLE(Number.NaN, 3 * INDEX_RECORD_BYTES + 16);
    const got = await walk((first, n) => rs.subarray(first * INDEX_RECORD_BYTES, (first + n) * INDEX_RECORD_BYTES), 3);
    expect(got.groups.slice(0, 2)).toEqual([undefined, undefined]);
    expect(got.fields.slice(0, 2).map((f) => f[2])).toEqual([-1, -1]);
  });
});

/** The frame index of `es`, opened over its records in memory, counting the reads it makes. */
async function countingIndex(es: EntryLine[]): Promise<{ index: FrameIndexFile; records: Buffer; counter: { reads: number } }> {
  const records = indexRecords(es);
  const last = es[es.length - 1] as EntryLine;
  const counter = { reads: 0 };
  const file = {
    size: records.length,
    read: async (pos: number, len: number) => {
      counter.reads++;
      return records.subarray(pos, pos + len);
    },
    close: async () => undefined,
  };
  const index = (await FrameIndexFile.openIfWhole(file, es.length, last.offset + last.length, last.seq + last.count)) as FrameIndexFile;
  return { index, records, counter };
}

describe('frame index search by seq', () => {
  it('finds the frame of a seq with or without a range said to hold it, a wrong range being ignored', async () => {
    const es = entries(6_000);
    const last = es[es.length - 1] as EntryLine;
    const { index, counter } = await countingIndex(es);
    expect(index).not.toBeNull();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: (es[1] as EntryLine).seq, max: last.seq + last.count - 1 }), fc.integer({ min: -3, max: es.length + 3 }), fc.integer({ min: -3, max: es.length + 3 }), async (seq, a, b) => {
        const want = es.findLastIndex((e, i) => i > 0 && e.seq <= seq);
        const plain = await index.findBySeq(seq);
        expect(plain).toBe(want);
        expect(await index.findBySeq(seq, { lo: Math.min(a, b), hi: Math.max(a, b) })).toBe(want);
        // A true range is searched alone: two probes, then one block.
        const lo = Math.max(1, want - 100);
        const hi = Math.min(es.length - 1, want + 100);
        counter.reads = 0;
        expect(await index.findBySeq(seq, { lo, hi })).toBe(want);
        expect(counter.reads).toBeLessThanOrEqual(3);
      }),
      { numRuns: 400 },
    );
  });
});

describe('frame index walk from a found record', () => {
  it('starts in the block the search read (not read again) and yields the same records as a walk from the file', async () => {
    for (const n of [700, 6_000]) {
      const es = entries(n);
      const last = es[es.length - 1] as EntryLine;
      const { index, records, counter } = await countingIndex(es);
      const read = (first: number, k: number) => records.subarray(first * INDEX_RECORD_BYTES, (first + k) * INDEX_RECORD_BYTES);
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: (es[1] as EntryLine).seq, max: last.seq + last.count - 1 }), fc.integer({ min: 1, max: 300 }), async (seq, take) => {
          const from = await index.findBySeq(seq);
          counter.reads = 0;
          const src = index.backwardFrom(from);
          const got: EntryLine[] = [];
          for (let b = await src.prevBlock(); b !== null && got.length < take; b = await src.prevBlock()) for (let k = b.length - 1; k >= 0; k--) got.push(b.entry(k));
          const want = (await walk(read, from)).entries;
          expect(got).toEqual(want.slice(0, got.length));
          expect(got.length).toBeGreaterThanOrEqual(Math.min(take, from + 1));
          // A session of fewer records than a block: the search read all of it, the header included.
          if (n < 2048) expect(counter.reads).toBe(0);
        }),
        { numRuns: 200 },
      );
    }
  });
});

describe('frame index blocks of a file its reader holds', () => {
  it('are views of the held bytes (no scratch buffer, no read or copy), and the search and walk answer as from a file read each time', async () => {
    const es = entries(6_000);
    const last = es[es.length - 1] as EntryLine;
    const records = indexRecords(es);
    const counter = { reads: 0, readIntos: 0, views: 0, taken: 0 };
    // A reader that holds the whole file (main/store/kept-readers.ts), with a scratch pool beside it.
    const file = {
      size: records.length,
      read: async (pos: number, len: number) => {
        counter.reads++;
        return records.subarray(pos, pos + len);
      },
      readInto: async (pos: number, dest: Uint8Array) => {
        counter.readIntos++;
        const from = records.subarray(pos, pos + dest.length);
        dest.set(from);
        return from.length;
      },
      heldView: (pos: number, len: number) => {
        counter.views++;
        return records.subarray(pos, Math.min(records.length, pos + len));
      },
      close: async () => undefined,
    };
    const scratch = { take: (bytes: number) => (counter.taken++, new Uint8Array(bytes)), give: () => undefined };
    const index = (await FrameIndexFile.openIfWhole(file, es.length, last.offset + last.length, last.seq + last.count, scratch)) as FrameIndexFile;
    expect(index).not.toBeNull();
    const read = (first: number, k: number) => records.subarray(first * INDEX_RECORD_BYTES, (first + k) * INDEX_RECORD_BYTES);
    for (const seq of [(es[1] as EntryLine).seq, (es[2_500] as EntryLine).seq + 3, last.seq]) {
      const from = await index.findBySeq(seq);
      expect(from).toBe(es.findLastIndex((e, i) => i > 0 && e.seq <= seq));
      const src = index.backwardFrom(from);
      const got: EntryLine[] = [];
      for (let b = await src.prevBlock(); b !== null && got.length < 3_000; b = await src.prevBlock()) for (let k = b.length - 1; k >= 0; k--) got.push(b.entry(k));
      expect(got).toEqual((await walk(read, from)).entries.slice(0, got.length));
    }
    // Every block came from the held bytes: none was read into scratch or copied.
    expect(counter.views).toBeGreaterThan(0);
    expect(counter.taken).toBe(0);
    expect(counter.readIntos).toBe(0);
  });
});
