/**
 * The plan check (core/plan-check.ts) compares first and builds its
 * messages only for a plan that fails: whatever the span (sound, or damaged
 * as derived data may be: unsafe, negative or fractional values, NaN,
 * frames out of order or past the log, bounds that are NaN), it answers
 * exactly as the one-pass check it replaced (kept here as the reference).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkPlan, spanFits, type PlanBounds } from '../src/core/plan-check.js';
import type { FrameSpan, PagePlan } from '../src/core/page-planner.js';
import type { EntryLine } from '../src/core/types.js';

function nat(x: number): boolean {
  return Number.isSafeInteger(x) && x >= 0;
}
function refFrameFits(e: EntryLine, b: PlanBounds): string | null {
  if (!nat(e.seq) || !nat(e.offset) || !nat(e.length) || !nat(e.count)) return `a frame with seq ${e.seq}, offset ${e.offset}, length ${e.length}, count ${e.count}`;
  if (e.length === 0 || e.offset + e.length > b.indexedLength) return `a frame at offset ${e.offset} of ${e.length} bytes, past the indexed log (${b.indexedLength} bytes)`;
  if (e.seq + e.count > b.nextSeq) return `a frame holding seqs [${e.seq}, ${e.seq + e.count}), past the session's next seq ${b.nextSeq}`;
  return null;
}
function refSpanFits(s: FrameSpan, b: PlanBounds): string | null {
  const why = refFrameFits(s.first, b) ?? refFrameFits(s.last, b);
  if (why !== null) return why;
  if (s.first.offset > s.last.offset || s.first.seq > s.last.seq) return `a span whose first frame (offset ${s.first.offset}, seq ${s.first.seq}) is after its last (offset ${s.last.offset}, seq ${s.last.seq})`;
  let offset = s.first.offset;
  let seq = s.first.seq;
  for (const e of s.splits) {
    const bad = refFrameFits(e, b);
    if (bad !== null) return bad;
    if (e.offset <= offset || e.offset >= s.last.offset || e.seq < seq || e.seq > s.last.seq) return `a split frame at offset ${e.offset} (seq ${e.seq}) out of order`;
    offset = e.offset;
    seq = e.seq;
  }
  return null;
}
function refCheckPlan(plan: PagePlan, b: PlanBounds): string | null {
  const s = plan.span;
  if (s === null) return plan.toSeq > 0 ? `no frames for events [${plan.fromSeq}, ${plan.toSeq})` : null;
  const why = refSpanFits(s, b);
  if (why !== null) return why;
  const { first, last } = s;
  if (last.seq > plan.toSeq - 1 || last.seq + last.count < plan.toSeq) return `the frame found for seq ${plan.toSeq - 1} holds seqs [${last.seq}, ${last.seq + last.count})`;
  if (first.seq > plan.fromSeq) return `the span starts at seq ${first.seq}, after the page's first event ${plan.fromSeq}`;
  return null;
}

/** Mostly sound values, sometimes damaged ones. */
const value = fc.oneof({ weight: 12, arbitrary: fc.integer({ min: 0, max: 5000 }) }, { weight: 1, arbitrary: fc.constantFrom(-1, 0.5, NaN, Infinity, 2 ** 53, -0) });
const entry = fc.record({ seq: value, offset: value, length: value, count: value }).map((e) => ({ v: 1, kind: 'frame', schema: 1, ...e }) as unknown as EntryLine);

/** A sound span (frames in order, inside the bounds) with some of its values changed. */
const spanArb: fc.Arbitrary<FrameSpan> = fc
  .tuple(fc.array(fc.tuple(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 300 })), { minLength: 2, maxLength: 40 }), fc.array(fc.tuple(fc.nat(39), entry), { maxLength: 2 }), fc.integer({ min: 0, max: 1000 }))
  .map(([frames, damage, base]) => {
    let seq = base;
    let offset = base * 10;
    const lines: EntryLine[] = frames.map(([count, length]) => {
      const e = { v: 1, kind: 'frame', schema: 1, seq, offset, length, count } as unknown as EntryLine;
      seq += count;
      offset += length;
      return e;
    });
    for (const [k, e] of damage) if (k < lines.length) lines[k] = e;
    const first = lines[0] as EntryLine;
    const last = lines[lines.length - 1] as EntryLine;
    return { first, last, count: lines.length, bytes: 0, splits: lines.slice(1, -1), splitFrames: [], eventBytes: 0, splitEventBytes: [], digest: 0, splitDigests: [] };
  });
const boundsArb: fc.Arbitrary<PlanBounds> = fc.record({
  indexedLength: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 400_000 }) }, { weight: 1, arbitrary: fc.constant(NaN) }),
  nextSeq: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 10_000 }) }, { weight: 1, arbitrary: fc.constant(NaN) }),
});

describe('the plan check', () => {
  it('answers as the one-pass check, for sound and damaged spans', () => {
    let passed = 0;
    fc.assert(
      fc.property(fc.option(spanArb, { freq: 8 }), boundsArb, fc.integer({ min: -5, max: 3000 }), fc.integer({ min: -5, max: 3000 }), (span, b, fromSeq, toSeq) => {
        const plan: PagePlan = { throughSeq: toSeq - 1, fromSeq, toSeq, hasMore: fromSeq > 0, span };
        if (span !== null) expect(spanFits(span, b)).toBe(refSpanFits(span, b));
        const got = checkPlan(plan, b);
        expect(got).toBe(refCheckPlan(plan, b));
        if (got === null) passed++;
        // The same span planned for exactly the seqs it holds.
        if (span !== null) {
          const exact: PagePlan = { ...plan, fromSeq: span.first.seq, toSeq: span.last.seq + span.last.count };
          const want = refCheckPlan(exact, b);
          expect(checkPlan(exact, b)).toBe(want);
          if (want === null) passed++;
        }
      }),
      { numRuns: 3000 },
    );
    expect(passed).toBeGreaterThan(500);
  });
});
