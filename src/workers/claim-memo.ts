/**
 * The frames' claim digest (core/frame-claim.ts) of slices this thread
 * decoded, remembered by what pins their bytes, so that a slice read again
 * unchanged is not hashed again: the warm tail page's slices are the same
 * frames page after page, and their claims (every frame's seq, offset and
 * message group, the groups read from the messages' bytes) were ~0.27 ms of
 * each worker's ~3 ms a page (docs/benchmarks.md, "same (fourteenth
 * session)").
 *
 * Why it is sound: the digest the frames give is a function of the slice's
 * bytes, its start offset and its first seq alone (decodeSlice folds each
 * frame's running seq, its offset and the group its bytes name). An entry is
 * used only when, in the task at hand, one CRC-32 over all of the slice's
 * bytes, chained from the same seed, matched the same writer's value as
 * when it was made (CrcCursor.pin: computed from the bytes every task, not
 * remembered), for the same offsets and seqs. Different bytes pass that but
 * with probability ~2^-32 (CRC-32 catches every change of up to 32
 * consecutive bits outright): the bound the digest itself already has. A
 * replaced file, or one changed in place, gives other bytes, so another CRC
 * or no pin at all, and the claims are hashed from its frames again. The
 * plan's claim is still compared with the frames' digest on every task: only
 * how the frames' side is known changes.
 */
import { NO_CLAIM } from '../core/frame-claim.js';

/**
 * The memos: direct-mapped by slice start (a slot holds the last slice remembered there), seven
 * float64s a slot: start, end, first seq, end seq, seed, pin, digest; one slot more, past the
 * table, takes what is not to be remembered. Typed, and both functions branch-free on purpose: the
 * decode loop inlines them, and is optimized by the JIT warm-up, whose tasks are never remembered;
 * a Map, or a branch the warm-up never took, was a new path on the first real page, where V8
 * deoptimized the loop and compiled it again beside the page.
 */
const SLOTS = 509;
const FIELDS = 7;
const table = new Float64Array(FIELDS * (SLOTS + 1)).fill(-1);

/**
 * knownDigest's answer when the frames must be hashed. Not an integer on purpose (as
 * frame-claim.ts NO_CLAIM): digests are uint32, half past the small-integer range, and the decode
 * loop's compare with this, fed only this answer by the warm-up, deoptimized ("not a Smi") on the
 * first remembered digest.
 */
export const UNKNOWN_DIGEST = -0.5;

/** The frames' digest of the slice [start, end) from seq firstSeq to endSeq, pinned by (seed, pin), when remembered; else UNKNOWN_DIGEST. */
export function knownDigest(start: number, end: number, firstSeq: number, endSeq: number, seed: number, pin: number): number {
  const k = FIELDS * (start % SLOTS);
  const t = table;
  // Zero only when every field is the same (a pin of NOT_PINNED is never stored in the table).
  const d = Math.abs((t[k] as number) - start) + Math.abs((t[k + 1] as number) - end) + Math.abs((t[k + 2] as number) - firstSeq) + Math.abs((t[k + 3] as number) - endSeq) + Math.abs((t[k + 4] as number) - seed) + Math.abs((t[k + 5] as number) - pin);
  const digest = t[k + 6] as number;
  return d === 0 && pin >= 0 ? digest : UNKNOWN_DIGEST;
}

/**
 * Remember the frames' digest of a slice decoded whole, when its bytes were pinned and the task
 * came from a plan (`claim` not NO_CLAIM: warm-up tasks are never remembered, so every warm-up
 * round hashes its frames as a real page's first read does). Called on every decoded slice.
 */
export function rememberDigest(start: number, end: number, firstSeq: number, endSeq: number, seed: number, pin: number, digest: number, claim: number): void {
  const k = FIELDS * (pin >= 0 && claim !== NO_CLAIM ? start % SLOTS : SLOTS);
  const t = table;
  t[k] = start;
  t[k + 1] = end;
  t[k + 2] = firstSeq;
  t[k + 3] = endSeq;
  t[k + 4] = seed;
  t[k + 5] = pin;
  t[k + 6] = digest;
}

// Both functions once with the values real tasks bring, past the small-integer range (large logs'
// offsets and seqs, half of all CRCs and digests), remembered and not, found and not, before the
// warm-up optimizes the decode loop that inlines them: its tasks alone (small offsets, nothing
// remembered) left `start % SLOTS` with small-integer feedback, and the loop deoptimized ("not a
// Smi") at the end of the warm-up, then ran unoptimized through the first real page.
{
  const big = 2 ** 33;
  rememberDigest(big, big + 7, big, big + 3, 2 ** 31 + 5, 2 ** 31 + 9, 2 ** 31 + 3, 2 ** 31 + 3);
  knownDigest(big, big + 7, big, big + 3, 2 ** 31 + 5, 2 ** 31 + 9);
  knownDigest(big, big + 7, big, big + 3, 2 ** 31 + 5, NO_CLAIM);
  knownDigest(7, 9, 1, 2, 0, 5);
  rememberDigest(big, big + 7, big, big + 3, 0, NO_CLAIM, 0, NO_CLAIM);
  rememberDigest(7, 9, 1, 2, 0, 5, 0, NO_CLAIM);
  table.fill(-1);
}
