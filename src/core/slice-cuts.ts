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
 *
 * A one-event frame (an event, not a row) costs more per byte than a row:
 * it is checked for its type and message group (a message's source seqs
 * read one by one), and a binary one is transcoded whole, where a row's
 * member list is copied (JSONL) or transcoded in one tight loop (binary).
 * The 600K sessions' tail page (bench/format-bench.mjs) has its 464 events
 * in its first quarter: cut by frames and bytes alone, that quarter took
 * 1.4x (JSONL) and 1.5x (binary) the time of each other one, and the page
 * waited on the worker holding it (docs/benchmarks.md, bin 12-02).
 */
import type { FrameSpan } from './page-planner.js';
import type { EntryLine } from './types.js';

/** How many stored bytes decode in the time one frame's fixed cost takes. */
export const FRAME_COST_BYTES = 2048;

/** The decode cost of `frames` frames holding `bytes` stored bytes, in byte-equivalents (how many slices a span gets). */
export function decodeCost(frames: number, bytes: number): number {
  return frames * FRAME_COST_BYTES + bytes;
}

/**
 * How many byte-equivalents each stored byte of a one-event frame costs
 * beyond its own, where a span is cut (fitted on that tail page: ~10-11 in
 * both encodings). Only where the cuts go, not how many slices a span gets:
 * a page of events alone is cut as before.
 */
export const EVENT_BYTE_EXTRA = 10;

/** decodeCost, with `eventBytes` of the bytes in one-event frames: where slices are cut. */
export function cutCost(frames: number, bytes: number, eventBytes: number): number {
  return decodeCost(frames, bytes) + eventBytes * EVENT_BYTE_EXTRA;
}

/**
 * The first frame of each of at most `n` slices of about equal decode cost,
 * cut only at the span's split candidates, in file order (the span's first
 * frame always starts the first slice).
 */
export function sliceStarts(span: FrameSpan, n: number): EntryLine[] {
  const { first, splits, splitFrames, splitEventBytes } = span;
  const total = cutCost(span.count, span.bytes, span.eventBytes);
  const at = (j: number) => cutCost(splitFrames[j] as number, (splits[j] as EntryLine).offset - first.offset, splitEventBytes[j] as number);
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
