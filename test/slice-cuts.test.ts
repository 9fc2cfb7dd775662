/**
 * Slices of a page are cut at equal decode cost (frames and bytes), only at
 * the planner's split candidates, in order, never more than asked for.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planPage, SPLIT_EVERY, type BackwardEntrySource, type EntryLines, type FrameSpan } from '../src/core/page-planner.js';
import { EVENT_BYTE_EXTRA, FRAME_COST_BYTES, sliceStarts } from '../src/core/slice-cuts.js';
import type { EntryLine } from '../src/core/types.js';

/** A span of frames with the given lengths, a split candidate every `every` frames; the frames flagged in `events` are one-event frames (else rows). */
function span(lengths: number[], every: number, events: boolean[] = []): FrameSpan {
  const frames: EntryLine[] = [];
  let offset = 1000;
  const eventBytesBefore = [0];
  lengths.forEach((length, i) => {
    frames.push({ v: 1, seq: i, count: 1, offset, length, kind: 'frame', schema: 1 });
    offset += length;
    eventBytesBefore.push((eventBytesBefore[i] as number) + (events[i] === true ? length : 0));
  });
  const first = frames[0] as EntryLine;
  const last = frames[frames.length - 1] as EntryLine;
  const splits: EntryLine[] = [];
  const splitFrames: number[] = [];
  const splitEventBytes: number[] = [];
  for (let i = every; i < frames.length - 1; i += every) {
    splits.push(frames[i] as EntryLine);
    splitFrames.push(i);
    splitEventBytes.push(eventBytesBefore[i] as number);
  }
  const eventBytes = eventBytesBefore[frames.length] as number;
  return { first, last, count: frames.length, bytes: last.offset + last.length - first.offset, splits, splitFrames, eventBytes, splitEventBytes, digest: 0, splitDigests: splits.map(() => 0) };
}

const cost = (from: number, to: number, lengths: number[]) => (to - from) * FRAME_COST_BYTES + lengths.slice(from, to).reduce((a, b) => a + b, 0);

describe('sliceStarts', () => {
  it('balances frames against bytes: many small frames weigh as much as a few large ones', () => {
    // 300 event frames of 100 bytes, then 30 frames of 4,000 bytes: equal bytes would cut near frame 300.
    const lengths = [...Array.from({ length: 300 }, () => 100), ...Array.from({ length: 30 }, () => 4000)];
    const s = span(lengths, 8);
    const [a, b] = sliceStarts(s, 2);
    expect(a).toBe(s.first);
    const cut = (b as EntryLine).seq;
    const left = cost(0, cut, lengths);
    const right = cost(cut, lengths.length, lengths);
    expect(Math.abs(left - right)).toBeLessThanOrEqual(8 * (FRAME_COST_BYTES + 4000));
    expect(cut).toBeLessThan(300);
  });

  it('weighs the bytes of one-event frames more: events at the start of a span get a shorter first slice', () => {
    // 100 events of 1,000 bytes, then 900 rows of 300 bytes (a tail page: finished messages, then the in-flight one's rows).
    const lengths = [...Array.from({ length: 100 }, () => 1000), ...Array.from({ length: 900 }, () => 300)];
    const events = lengths.map((_, i) => i < 100);
    const s = span(lengths, 4, events);
    const [, b] = sliceStarts(s, 2);
    const cut = (b as EntryLine).seq;
    const weighed = (from: number, to: number) => cost(from, to, lengths) + EVENT_BYTE_EXTRA * lengths.slice(from, to).reduce((a, l, i) => a + (events[from + i] === true ? l : 0), 0);
    expect(Math.abs(weighed(0, cut) - weighed(cut, lengths.length))).toBeLessThanOrEqual(4 * (FRAME_COST_BYTES + 1000 * (1 + EVENT_BYTE_EXTRA)));
    // By frames and bytes alone the cut would be near frame 480; the events' weight moves it well below.
    expect(cut).toBeLessThan(400);
  });

  it('cuts in file order at candidates only, at most n slices, each as near its share as the candidates allow', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 400 }), fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 8 }), (lengths, every, n) => {
        const s = span(lengths, every);
        const starts = sliceStarts(s, n);
        expect(starts[0]).toBe(s.first);
        expect(starts.length).toBeLessThanOrEqual(Math.min(n, s.splits.length + 1));
        for (let i = 1; i < starts.length; i++) {
          expect(s.splits).toContain(starts[i]);
          expect((starts[i] as EntryLine).offset).toBeGreaterThan((starts[i - 1] as EntryLine).offset);
        }
        // With candidates at every frame, each slice is within one frame of its share.
        if (every === 1 && starts.length === n) {
          const total = cost(0, lengths.length, lengths);
          const max = FRAME_COST_BYTES + Math.max(...lengths);
          starts.slice(1).forEach((e, i) => expect(Math.abs(cost(0, e.seq, lengths) - (total * (i + 1)) / n)).toBeLessThanOrEqual(max));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('the planner\'s split candidates', () => {
  /** Entry lines of a log of `n` frames (every third a counted message; with `rows`, every fifth a row of 3 + i % 4 events, of varied lengths), served backwards in blocks. */
  function source(n: number, block: number, rows = false): BackwardEntrySource {
    const lines: EntryLine[] = [{ v: 1, seq: 0, count: 0, offset: 0, length: 10, kind: 'session', schema: 1 }];
    let seq = 0;
    let offset = 10;
    for (let i = 0; i < n; i++) {
      const count = rows && i % 5 === 4 ? 3 + (i % 4) : 1;
      const length = rows ? 7 + (i % 11) * 13 : 7;
      const e: EntryLine = { v: 1, seq, count, offset, length, kind: 'x', schema: 1 };
      if (i % 3 === 0 && count === 1) e.group = seq;
      lines.push(e);
      seq += count;
      offset += length;
    }
    allLines = lines;
    let hi = lines.length;
    return {
      async prevBlock(): Promise<EntryLines | null> {
        if (hi === 0) return null;
        const lo = Math.max(0, hi - block);
        const part = lines.slice(lo, hi);
        const base = lo;
        hi = lo;
        return { length: part.length, entry: (k) => part[k] as EntryLine, seq: (k) => (part[k] as EntryLine).seq, offset: (k) => (part[k] as EntryLine).offset, group: (k) => (part[k] as EntryLine).group, isFirst: (k) => base + k === 0, fields: (k, into) => {
          const e = part[k] as EntryLine;
          into[0] = e.seq;
          into[1] = e.offset;
          into[2] = e.group ?? -1;
        } };
      },
    };
  }

  let allLines: EntryLine[] = [];

  it('know the bytes of the span\'s one-event frames, in all and before each of them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2000 }), fc.integer({ min: 1, max: 700 }), fc.integer({ min: 1, max: 300 }), async (n, block, maxMessages) => {
        const src = source(n, block, true);
        const lines = allLines;
        const last = lines[lines.length - 1] as EntryLine;
        const plan = await planPage({ throughSeq: last.seq + last.count - 1, end: last.seq + last.count, maxMessages, maxBytes: undefined }, src);
        const span = plan.span as FrameSpan;
        const inSpan = lines.filter((e) => e.offset >= span.first.offset && e.offset <= span.last.offset);
        const eventBytes = (below: number) => inSpan.filter((e) => e.count === 1 && e.offset < below).reduce((a, e) => a + e.length, 0);
        expect(span.eventBytes).toBe(eventBytes(Infinity));
        expect(span.splitEventBytes.length).toBe(span.splits.length);
        span.splits.forEach((e, j) => expect(span.splitEventBytes[j]).toBe(eventBytes(e.offset)));
      }),
      { numRuns: 200 },
    );
  });

  it('know how many of the span\'s frames come before each of them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 1, max: 700 }), fc.integer({ min: 1, max: 400 }), async (n, block, maxMessages) => {
        const plan = await planPage({ throughSeq: n - 1, end: n, maxMessages, maxBytes: undefined }, source(n, block));
        const span = plan.span as FrameSpan;
        expect(span.splitFrames.length).toBe(span.splits.length);
        span.splits.forEach((e, j) => {
          // One event per frame: the frames before a split are the seqs from the span's first.
          expect(span.splitFrames[j]).toBe(e.seq - span.first.seq);
          expect(e.offset).toBeGreaterThan(span.first.offset);
          expect(e.offset).toBeLessThan(span.last.offset);
        });
        if (span.count > 2 * SPLIT_EVERY) expect(span.splits.length).toBeGreaterThan(0);
      }),
      { numRuns: 200 },
    );
  });
});
