/**
 * The full decode of one frame on the page path: what the byte scanners
 * declined (page-task.ts), decoded into a record and re-encoded, its seq
 * checked against the entry sidecar's, cut to the task's page range.
 *
 * Its own function, not a branch of the decode loop, on purpose: the JIT
 * warm-up's synthetic logs send frames of every kind through this path, and
 * V8 then spent the loop's inlining budget on it (the record decoder, the
 * encoder's event, the message check), which real JSONL pages never take,
 * and called the claim hash of every frame out of line instead
 * (docs/benchmarks.md, issue 13).
 */
import { decodeRecordFrame } from '../streams/frame-codec.js';
import { isRowType, type ChunkRow, type SessionEvent } from '../core/types.js';
import { rowLength } from '../core/chunk-codec.js';
import { frameClaim } from '../core/frame-claim.js';
import { recordGroup } from '../streams/message-group.js';
import type { SliceEncoder } from './slice-encoder.js';
import type { SliceTask } from './slice-protocol.js';

/** What wholeFrame did: read the frame (see `whole`), found it undecodable, or found it holding another seq. */
export const WHOLE_READ = 0;
export const WHOLE_BAD = 1;
export const WHOLE_WRONG_SEQ = 2;

/**
 * The frame wholeFrame last looked at: its length, logical events, first seq
 * and claim (core/frame-claim.ts); `message` why it could not be decoded. Reused.
 */
export const whole: { length: number; count: number; first: number; claim: number; message: string } = { length: 0, count: 0, first: 0, claim: 0, message: '' };

/** Decode the frame at `bytes[pos]` (log offset `offset`, the slice's bytes ending at `len`), expected to start at `seq`, into `enc`. */
export function wholeFrame(bytes: Buffer, pos: number, offset: number, len: number, seq: number, task: SliceTask, enc: SliceEncoder): number {
  const f = decodeRecordFrame(bytes, pos, offset, len);
  if (!f.ok) {
    whole.message = f.message;
    return WHOLE_BAD;
  }
  const r = f.record;
  const row = isRowType(r.type) && 'seq0' in r;
  const first = row ? (r as ChunkRow).seq0 : (r as SessionEvent).seq;
  const count = row ? rowLength(r as ChunkRow) : 1;
  whole.length = f.length;
  whole.count = count;
  whole.first = first;
  if (first !== seq) return WHOLE_WRONG_SEQ;
  const from = Math.max(task.fromSeq - first, 0);
  const to = Math.min(task.toSeq - first, count);
  if (from < to) {
    if (row) enc.row(r as ChunkRow, from, to);
    else enc.event(r as SessionEvent);
  }
  whole.claim = frameClaim(seq, offset, row ? -1 : recordGroup(r as SessionEvent));
  return WHOLE_READ;
}
