/**
 * The planner's walkers keep their arrays between walks (core/page-planner.ts):
 * a walk's plan must not depend on which walks came before it, ran beside it
 * (walks interleave at their awaits) or failed half way. Every plan here is
 * compared, field by field, with one computed directly from the log's lines
 * by the rule the planner follows (SPEC section 5 and the span's contract in
 * FrameSpan), not by the planner.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addClaim, frameClaim } from '../src/core/frame-claim.js';
import { planPage, planRange, SPLIT_EVERY, type BackwardEntrySource, type EntryLines, type FrameSpan, type PagePlan } from '../src/core/page-planner.js';
import type { EntryLine } from '../src/core/types.js';

/** A log's entry lines: the header, then `n` frames (rows of several events among one-event frames, some counted messages). */
function logLines(n: number, seed: number): EntryLine[] {
  const lines: EntryLine[] = [{ v: 1, seq: 0, count: 0, offset: 0, length: 10, kind: 'session', schema: 1 }];
  let seq = 0;
  let offset = 10;
  let x = seed >>> 0 || 1;
  const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 8;
  for (let i = 0; i < n; i++) {
    const count = next() % 4 === 0 ? 2 + (next() % 5) : 1;
    const length = 5 + (next() % 300);
    const e: EntryLine = { v: 1, seq, count, offset, length, kind: 'frame', schema: 1 };
    // A counted message's group starts at its own seq or at an earlier event's (a message of several frames).
    if (count === 1 && next() % 3 === 0) e.group = Math.max(0, seq - (next() % 3));
    lines.push(e);
    seq += count;
    offset += length;
  }
  return lines;
}

/**
 * Lines [0, top] served backwards in blocks of `block`; each block arrives
 * after `delay()` turns of the event loop (other walks run meanwhile); a
 * source with `failAfter` rejects its block after that many.
 */
function source(lines: EntryLine[], top: number, block: number, delay: () => number, failAfter = Infinity): BackwardEntrySource {
  let hi = top + 1;
  let served = 0;
  return {
    async prevBlock(): Promise<EntryLines | null> {
      for (let d = delay(); d > 0; d--) await new Promise((r) => setImmediate(r));
      if (served++ >= failAfter) throw new Error('read failed');
      if (hi === 0) return null;
      const lo = Math.max(0, hi - block);
      const part = lines.slice(lo, hi);
      hi = lo;
      const at = (k: number) => part[k] as EntryLine;
      return {
        length: part.length,
        entry: (k) => ({ ...at(k) }),
        seq: (k) => at(k).seq,
        offset: (k) => at(k).offset,
        group: (k) => at(k).group,
        isFirst: (k) => lo + k === 0,
        fields: (k, into) => {
          into[0] = at(k).seq;
          into[1] = at(k).offset;
          into[2] = at(k).group ?? -1;
        },
      };
    },
  };
}

/** The span of lines[low..top] as FrameSpan describes it, from the lines themselves. */
function expectedSpan(lines: EntryLine[], low: number, top: number): FrameSpan {
  const first = lines[low] as EntryLine;
  const last = lines[top] as EntryLine;
  // Lines in the order the walk loads them (newest first); a split candidate every SPLIT_EVERY-th, the newest excluded.
  const walked = lines.slice(low, top + 1).reverse();
  // Running sums over the walked lines: the digest and the one-event frames' bytes of the first d of them.
  const digests = [0];
  const eventBytes = [0];
  walked.forEach((e, d) => {
    digests.push(addClaim(digests[d] as number, frameClaim(e.seq, e.offset, e.group ?? -1)));
    eventBytes.push((eventBytes[d] as number) + (e.count === 1 ? e.length : 0));
  });
  const all = eventBytes[walked.length] as number;
  const splits: EntryLine[] = [];
  const splitFrames: number[] = [];
  const splitDigests: number[] = [];
  const splitEventBytes: number[] = [];
  for (let depth = Math.floor(walked.length / SPLIT_EVERY) * SPLIT_EVERY; depth >= SPLIT_EVERY; depth -= SPLIT_EVERY) {
    const e = walked[depth - 1] as EntryLine;
    if (e.offset <= first.offset || e.offset >= last.offset) continue;
    splits.push(e);
    splitFrames.push(walked.length - depth);
    splitDigests.push(digests[depth] as number);
    splitEventBytes.push(all - (eventBytes[depth] as number));
  }
  return { first, last, count: walked.length, bytes: last.offset + last.length - first.offset, splits, splitFrames, eventBytes: all, splitEventBytes, digest: digests[walked.length] as number, splitDigests };
}

/** The line holding `seq`. */
function lineOf(lines: EntryLine[], seq: number): number {
  let i = lines.length - 1;
  while (i > 1 && (lines[i] as EntryLine).seq > seq) i--;
  return i;
}

/** The tail page ending at `end` (exclusive) by SPEC section 5's rule, from the lines: counted messages back from the end, bounded by maxMessages and stored bytes. */
function expectedPlan(lines: EntryLine[], end: number, maxMessages: number, maxBytes: number | undefined): PagePlan {
  const top = lineOf(lines, end - 1);
  let cut = end;
  let counted = 0;
  let stopped = false;
  for (let i = top; i >= 1 && !stopped; i--) {
    const g = (lines[i] as EntryLine).group;
    if (g === undefined) continue;
    cut = Math.min(cut, g);
    counted++;
    if (counted >= maxMessages) stopped = true;
    else if (maxBytes !== undefined) {
      // The frames covering [cut, end): from the one holding cut (at or below line i: cut <= its group).
      const last = lines[top] as EntryLine;
      if (last.offset + last.length - (lines[lineOf(lines, cut)] as EntryLine).offset > maxBytes) stopped = true;
    }
  }
  if (!stopped) cut = 0;
  // The span: the frames from the one holding `cut` (the first line when the walk reached the header) to the end.
  return { throughSeq: end - 1, fromSeq: cut, toSeq: end, hasMore: cut > 0, span: expectedSpan(lines, lineOf(lines, cut), top) };
}

const walkArb = fc.record({
  n: fc.integer({ min: 1, max: 1500 }),
  seed: fc.integer(),
  endFrom: fc.double({ min: 0, max: 1, noNaN: true }),
  maxMessages: fc.integer({ min: 1, max: 300 }),
  maxBytes: fc.option(fc.integer({ min: 1, max: 200_000 }), { nil: undefined }),
  block: fc.integer({ min: 1, max: 600 }),
});

type Walk = { n: number; seed: number; endFrom: number; maxMessages: number; maxBytes: number | undefined; block: number };

/** A walk's log, its end and the plan it must give. */
function prepared(w: Walk): { lines: EntryLine[]; end: number; expected: PagePlan } {
  const lines = logLines(w.n, w.seed);
  const last = lines[lines.length - 1] as EntryLine;
  const total = last.seq + last.count;
  const end = Math.max(1, Math.ceil(total * w.endFrom));
  return { lines, end, expected: expectedPlan(lines, end, w.maxMessages, w.maxBytes) };
}

function plan(lines: EntryLine[], end: number, w: Walk, delay: () => number, failAfter?: number): Promise<PagePlan> {
  return planPage({ throughSeq: end - 1, end, maxMessages: w.maxMessages, maxBytes: w.maxBytes }, source(lines, lineOf(lines, end - 1), w.block, delay, failAfter));
}

describe('the planner\'s walkers, reused between walks', () => {
  it('plan each page as its lines say, walks interleaved at their awaits', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(walkArb, { minLength: 1, maxLength: 6 }), fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 16 }), async (walks, delays) => {
        let d = 0;
        const delay = () => delays[d++ % delays.length] as number;
        const ready = walks.map(prepared);
        const plans = await Promise.all(walks.map((w, i) => plan(ready[i]!.lines, ready[i]!.end, w, delay)));
        plans.forEach((p, i) => expect(p).toEqual(ready[i]!.expected));
      }),
      { numRuns: 150 },
    );
  });

  it('plan as their lines say after walks that failed half way, beside them or before them', async () => {
    await fc.assert(
      fc.asyncProperty(walkArb, walkArb, fc.integer({ min: 0, max: 3 }), async (failing, good, failAfter) => {
        const bad = prepared({ ...failing, block: Math.min(failing.block, 50) });
        const ok = prepared(good);
        const both = await Promise.allSettled([plan(bad.lines, bad.end, failing, () => 1, failAfter), plan(ok.lines, ok.end, good, () => 1)]);
        expect(both[1]).toEqual({ status: 'fulfilled', value: ok.expected });
        expect(await plan(ok.lines, ok.end, good, () => 0)).toEqual(ok.expected);
      }),
      { numRuns: 100 },
    );
  });

  it('plan a small page as its lines say after a walk longer than a walker keeps room for', async () => {
    const lines = logLines(70_000, 7);
    const last = lines[lines.length - 1] as EntryLine;
    const end = last.seq + last.count;
    const long = await planRange(0, end, source(lines, lines.length - 1, 4096, () => 0));
    expect(long).toEqual(expectedSpan(lines, 1, lines.length - 1));
    const small: Walk = { n: 0, seed: 0, endFrom: 1, maxMessages: 20, maxBytes: undefined, block: 100 };
    for (let i = 0; i < 3; i++) expect(await plan(lines, end, small, () => 0)).toEqual(expectedPlan(lines, end, 20, undefined));
  });
});
