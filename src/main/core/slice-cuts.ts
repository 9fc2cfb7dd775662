/**
 * Where to cut a page's frames into slices for parallel decoding, pure.
 *
 * A slice's decode time grows with its frames (a fixed cost each: classify,
 * check its seq, frame its record) and with its bytes (checksum, copies).
 * A least-squares fit over ~470 slices decoded in-process (bench/ data,
 * fixture-shaped middle pages and 5M-session tail pages) gave ~1.3-1.7 µs
 * per frame and ~0.3-0.6 ns per byte: a frame weighs as much as ~2,000
 * (middle pages) to ~4,000 (row-heavy tail pages) bytes. Cutting at equal
 * bytes gave one worker of a typical page up to twice the frames of the
 * other, and the page waited on it.
 */
import type { FrameSpan } from './page-planner.js';
import type { EntryLine } from './types.js';

/** How many stored bytes decode in the time one frame's fixed cost takes. */
export const FRAME_COST_BYTES = 2048;

/** The decode cost of `frames` frames holding `bytes` stored bytes, in byte-equivalents. */
export function decodeCost(frames: number, bytes: number): number {
  return frames * FRAME_COST_BYTES + bytes;
}

/**
 * The first frame of each of at most `n` slices of about equal decode cost,
 * cut only at the span's split candidates, in file order (the span's first
 * frame always starts the first slice).
 */
export function sliceStarts(span: FrameSpan, n: number): EntryLine[] {
  const { first, splits, splitFrames } = span;
  const total = decodeCost(span.count, span.bytes);
  const at = (j: number) => decodeCost(splitFrames[j] as number, (splits[j] as EntryLine).offset - first.offset);
  const starts: EntryLine[] = [first];
  // Candidates from `next` on are unused (they are in file order).
  let next = 0;
  for (let s = 1; s < n && next < splits.length; s++) {
    const target = (total * s) / n;
    let j = next;
    while (j < splits.length && at(j) < target) j++;
    // The candidate nearest the target: the first past it, or the last before it.
    if (j === splits.length || (j > next && target - at(j - 1) < at(j) - target)) j--;
    starts.push(splits[j] as EntryLine);
    next = j + 1;
  }
  return starts;
}
