/**
 * What a page plan claims about each frame it covers, in a form the page
 * workers can check against the frames themselves, pure.
 *
 * A plan is built from derived data (the entry sidecar, or the binary frame
 * index): every frame's seq, offset and message group (its group start when
 * it is a counted message, else -1) shape the page, the cut and the maxBytes
 * decision. Derived data can be damaged, so a plan is a claim: the planner
 * folds each frame it loads into a digest, the worker folds the same three
 * values as it finds them in the frames, and a slice whose digests differ
 * fails instead of being served. The digest is a sum of per-frame hashes
 * (mod 2^32), so a slice's expected value is the difference of two running
 * sums taken at its edges, and the order of folding does not matter (the
 * planner walks backwards, the worker forwards). Each value is hashed by its
 * exact float64 bits: a claim of 100.0000001 or NaN never passes for 100.
 * One changed frame changes the sum but with probability 2^-32.
 */

const f64 = new Float64Array(1);
// The words as signed 32-bit integers: every use below (^, Math.imul) takes its operands as int32s
// anyway, so the hash is the same bits, but a word of 2^31 or more read as unsigned is a heap number,
// and code optimized on values whose words never were (a small log's offsets, an all-zero low word)
// deoptimized on the first real page ("lost precision": the main thread's decoder, warmed on the
// build's small session, docs/benchmarks.md "ready (eleventh session)").
const w32 = new Int32Array(f64.buffer);

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The hash of one frame's claim: its first seq, its offset in the log, its group start (-1: not a counted message). */
export function frameClaim(seq: number, offset: number, group: number): number {
  f64[0] = seq;
  let h = fmix((w32[0] as number) ^ Math.imul(w32[1] as number, 0x9e3779b1));
  f64[0] = offset;
  h = fmix(h ^ (w32[0] as number) ^ Math.imul(w32[1] as number, 0x27d4eb2f));
  f64[0] = group;
  h = fmix(h ^ (w32[0] as number) ^ Math.imul(w32[1] as number, 0x165667b1));
  return h >>> 0;
}

/**
 * frameClaim of the three float64s whose words are `w[0..5]` (seq, offset,
 * group, as a Float64Array of three holds them on a little-endian machine;
 * claimWords says whether this one is): the same bits, hashed without
 * storing the values again. The page planner's walk has every line's fields
 * in such an array already. Traced (--trace-turbo-inlining), walkPage's
 * optimized code inlines the line's takeOne but calls the hash out of line,
 * 15,000 times a tail page, frameClaim as well as this one; this one does
 * less a call (no stores of values already in memory, no loads back), and
 * its three rounds are one loop over one fmix, less bytecode for the walk's
 * inlining budget (inlined into walkPage in 1 of 2 traced processes): the
 * tail page's plan alone took 0.97-1.02 ms against 1.03-1.08 with frameClaim
 * (60c6f60, which hashed nothing: 0.69; docs/benchmarks.md, "same, second
 * round (thirteenth session)").
 */
export function wordsClaim(w: Int32Array): number {
  let h = 0;
  for (let i = 0; i < 3; i++) h = fmix(h ^ (w[2 * i] as number) ^ Math.imul(w[2 * i + 1] as number, CLAIM_MULTIPLIERS[i] as number));
  return h >>> 0;
}

/** frameClaim's multipliers of each value's high word, in its order. */
const CLAIM_MULTIPLIERS = new Int32Array([0x9e3779b1, 0x27d4eb2f, 0x165667b1]);

/** Whether wordsClaim may read a Float64Array's words as frameClaim does (low word first: little endian). */
export const claimWords = ((): boolean => {
  f64[0] = 1;
  return w32[0] === 0 && w32[1] === 0x3ff00000;
})();

/** `sum` with one more frame's claim folded in. */
export function addClaim(sum: number, claim: number): number {
  return (sum + claim) >>> 0;
}

/** The digest of the frames in a running sum `a` but not in `b` (b's frames a subset of a's). */
export function claimDifference(a: number, b: number): number {
  return (a - b) >>> 0;
}

/**
 * A slice task's digest when none is to be checked (tasks not built from a
 * plan: the warm-ups'). Not an integer on purpose: digests are uint32, half
 * of them past V8's small-integer range, so a task field first holding a
 * small integer changed representation (a new object map) on the first such
 * digest and deoptimized the decode loop optimized for the old one, often on
 * the first real page. A double from the start keeps one map.
 */
export const NO_CLAIM = -0.5;

/**
 * The digest each slice must find, for slices starting at `starts` (the
 * span's first frame, then split candidates of the span in file order, as
 * core/slice-cuts.ts picks them): a slice holds the frames from its start
 * up to the next slice's.
 */
export function sliceDigests(span: { first: unknown; splits: readonly unknown[]; digest: number; splitDigests: readonly number[] }, starts: readonly unknown[]): number[] {
  const from = starts.map((s) => (s === span.first ? span.digest : (span.splitDigests[span.splits.indexOf(s)] as number)));
  return from.map((d, i) => claimDifference(d, from[i + 1] ?? 0));
}
