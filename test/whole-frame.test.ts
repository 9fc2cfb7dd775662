/**
 * The page path's full decode of one frame (workers/whole-frame.ts): what
 * the scanners decline is decoded into its record, its seq checked against
 * the sidecar's, cut to the page range, and its claim is the planner's.
 */
import { describe, expect, it } from 'vitest';
import { whole, WHOLE_BAD, WHOLE_READ, WHOLE_WRONG_SEQ, wholeFrame } from '../src/workers/whole-frame.js';
import { SliceEncoder } from '../src/workers/slice-encoder.js';
import { sliceTask } from '../src/workers/slice-protocol.js';
import { frameClaim } from '../src/core/frame-claim.js';

// Hand-formatted (spaces the writer never writes): a frame the byte scanners leave to the full decode.
const message = Buffer.from('{ "type": "user/message", "seq": 7, "time": 1, "data": { "content": [] }, "surfaceOp": "append" }\n');
const row = Buffer.from('{ "type": "text-chunks", "seq0": 10, "time0": 5, "data": { "turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b", "c"] } }\n');

describe('wholeFrame', () => {
  it('reads an event: its length, one event, its group in the claim', () => {
    const enc = new SliceEncoder();
    expect(wholeFrame(message, 0, 1000, message.length, 7, sliceTask('', 's', 1000, 1000 + message.length, 7, 8, 0, 100), enc)).toBe(WHOLE_READ);
    expect([whole.length, whole.count, whole.first]).toEqual([message.length, 1, 7]);
    // A user message counted from its own seq (SPEC section 5).
    expect(whole.claim).toBe(frameClaim(7, 1000, 7));
  });

  it('reads a row as its members, a claim without a group', () => {
    const enc = new SliceEncoder();
    expect(wholeFrame(row, 0, 50, row.length, 10, sliceTask('', 's', 50, 50 + row.length, 10, 13, 0, 100), enc)).toBe(WHOLE_READ);
    expect([whole.length, whole.count, whole.first]).toEqual([row.length, 3, 10]);
    expect(whole.claim).toBe(frameClaim(10, 50, -1));
  });

  it('names a frame holding another seq than the sidecar says, and one that does not decode', () => {
    const enc = new SliceEncoder();
    expect(wholeFrame(message, 0, 0, message.length, 8, sliceTask('', 's', 0, message.length, 8, 9, 0, 100), enc)).toBe(WHOLE_WRONG_SEQ);
    expect([whole.first, whole.count]).toEqual([7, 1]);
    const torn = message.subarray(0, 20);
    expect(wholeFrame(torn, 0, 0, torn.length, 7, sliceTask('', 's', 0, torn.length, 7, 8, 0, 100), enc)).toBe(WHOLE_BAD);
    expect(whole.message).not.toBe('');
  });
});
