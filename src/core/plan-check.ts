/**
 * Checks of a page plan against the session before any byte of the log is
 * read, pure. A plan comes from derived data (the entry sidecar or the
 * binary frame index), which may be damaged: a value that is not a safe
 * integer, an offset past the indexed log or a span that does not hold the
 * page's last event must never reach a read (a NaN position was a 500) or
 * shape a page. What these checks cannot see (a middle frame's seq, offset
 * or message group) the workers check against the frames themselves
 * (core/frame-claim.ts).
 */
import type { FrameSpan, PagePlan } from './page-planner.js';
import type { EntryLine } from './types.js';

/** What the session's metadata says, which the plan must fit. */
export interface PlanBounds {
  /** Bytes of the log that are indexed (and may be served). */
  indexedLength: number;
  nextSeq: number;
}

function nat(x: number): boolean {
  return Number.isSafeInteger(x) && x >= 0;
}

function frameFits(e: EntryLine, b: PlanBounds): string | null {
  if (!nat(e.seq) || !nat(e.offset) || !nat(e.length) || !nat(e.count)) return `a frame with seq ${e.seq}, offset ${e.offset}, length ${e.length}, count ${e.count}`;
  if (e.length === 0 || e.offset + e.length > b.indexedLength) return `a frame at offset ${e.offset} of ${e.length} bytes, past the indexed log (${b.indexedLength} bytes)`;
  if (e.seq + e.count > b.nextSeq) return `a frame holding seqs [${e.seq}, ${e.seq + e.count}), past the session's next seq ${b.nextSeq}`;
  return null;
}

/** Whether frameFits finds nothing wrong with `e` (the same comparisons, no message). */
function frameOk(e: EntryLine, b: PlanBounds): boolean {
  return nat(e.seq) && nat(e.offset) && nat(e.length) && nat(e.count) && e.length !== 0 && !(e.offset + e.length > b.indexedLength) && !(e.seq + e.count > b.nextSeq);
}

/**
 * Exported for the planner's warm-up (main/warmup/planner-warmup.ts), which has V8 optimize it
 * before the first real page: its loop over the split candidates is the check's cost.
 *
 * The checks as comparisons only; a span that fails one is checked again by spanFault, which
 * names what is wrong. With the messages' template strings here, V8's optimized code converted
 * their numbers to strings on every call, failing or not (half the check's time, measured).
 */
export function spanFits(s: FrameSpan, b: PlanBounds): string | null {
  const first = s.first;
  const last = s.last;
  if (!frameOk(first, b) || !frameOk(last, b) || first.offset > last.offset || first.seq > last.seq) return spanFault(s, b);
  let offset = first.offset;
  let seq = first.seq;
  for (const e of s.splits) {
    if (!frameOk(e, b) || e.offset <= offset || e.offset >= last.offset || e.seq < seq || e.seq > last.seq) return spanFault(s, b);
    offset = e.offset;
    seq = e.seq;
  }
  return null;
}

/** What is wrong with a span spanFits refused (null when nothing: the same checks). */
function spanFault(s: FrameSpan, b: PlanBounds): string | null {
  const why = frameFits(s.first, b) ?? frameFits(s.last, b);
  if (why !== null) return why;
  if (s.first.offset > s.last.offset || s.first.seq > s.last.seq) return `a span whose first frame (offset ${s.first.offset}, seq ${s.first.seq}) is after its last (offset ${s.last.offset}, seq ${s.last.seq})`;
  let offset = s.first.offset;
  let seq = s.first.seq;
  for (const e of s.splits) {
    const bad = frameFits(e, b);
    if (bad !== null) return bad;
    if (e.offset <= offset || e.offset >= s.last.offset || e.seq < seq || e.seq > s.last.seq) return `a split frame at offset ${e.offset} (seq ${e.seq}) out of order`;
    offset = e.offset;
    seq = e.seq;
  }
  return null;
}

/**
 * Null when `plan` fits the session and holds the page it names: its span
 * lies in the indexed log, its last frame holds seq `toSeq - 1` and its
 * first starts at or before `fromSeq`. Otherwise what is wrong.
 */
export function checkPlan(plan: PagePlan, b: PlanBounds): string | null {
  const s = plan.span;
  if (s === null) return plan.toSeq > 0 ? emptyFault(plan) : null;
  const why = spanFits(s, b);
  if (why !== null) return why;
  const { first, last } = s;
  if (last.seq > plan.toSeq - 1 || last.seq + last.count < plan.toSeq || first.seq > plan.fromSeq) return edgeFault(plan, s);
  return null;
}

/** checkPlan's messages, apart from its comparisons (see spanFits). */
function emptyFault(plan: PagePlan): string {
  return `no frames for events [${plan.fromSeq}, ${plan.toSeq})`;
}

function edgeFault(plan: PagePlan, s: FrameSpan): string {
  const { first, last } = s;
  if (last.seq > plan.toSeq - 1 || last.seq + last.count < plan.toSeq) return `the frame found for seq ${plan.toSeq - 1} holds seqs [${last.seq}, ${last.seq + last.count})`;
  return `the span starts at seq ${first.seq}, after the page's first event ${plan.fromSeq}`;
}

/** The same checks for a span of a seq range [from, to) (follow catch-up reads). */
export function checkRange(span: FrameSpan | null, from: number, to: number, b: PlanBounds): string | null {
  return checkPlan({ throughSeq: to - 1, fromSeq: from, toSeq: to, hasMore: from > 0, span }, b);
}
