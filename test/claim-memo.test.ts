/**
 * The workers remember the claim digest a slice's frames gave (workers/claim-memo.ts), pinned by
 * a CRC over all of the slice's bytes computed in each task. What must not change: a plan whose
 * claim differs from the frames is refused on every read, remembered or not, and bytes that
 * changed since (replaced with checksums of their own, or damaged in place) are hashed again.
 */
import { describe, expect, it } from 'vitest';
import { chainCrcRecords } from '../src/streams/frame-crc-file.js';
import { addClaim, frameClaim } from '../src/core/frame-claim.js';
import { decodeSlice } from '../src/workers/page-task.js';
import { sliceTask, type SliceFault, type SliceResult } from '../src/workers/slice-protocol.js';

const BASE = 4096;

/** Event lines from seq 0 at log offset BASE; `op` the user messages' surfaceOp ("append" counts them). */
function log(op: string): { bytes: Buffer; lengths: number[] } {
  const lines: string[] = [];
  for (let seq = 0; seq < 40; seq++) {
    lines.push(seq % 5 === 0 ? `{"type":"user/message","seq":${seq},"time":${seq},"data":{"content":[]},"surfaceOp":"${op}"}\n` : `{"type":"step/start","seq":${seq},"time":${seq},"data":{}}\n`);
  }
  return { bytes: Buffer.from(lines.join('')), lengths: lines.map((l) => Buffer.byteLength(l)) };
}

/** The digest a plan claiming `counted` (every fifth event a message, its own group) gives. */
function planDigest(lengths: readonly number[], counted: boolean): number {
  let d = 0;
  let offset = BASE;
  lengths.forEach((len, seq) => {
    d = addClaim(d, frameClaim(seq, offset, counted && seq % 5 === 0 ? seq : -1));
    offset += len;
  });
  return d;
}

function decode(bytes: Buffer, records: Buffer, digest: number): SliceResult {
  const t = sliceTask('', 'memo', BASE, BASE + bytes.length, 0, 40, 0, 40);
  t.crcs = records;
  t.digest = digest;
  return decodeSlice(t, Buffer.from(bytes));
}

const claimFault = (r: SliceResult): string | null => (r instanceof ArrayBuffer ? null : (r as SliceFault).error.kind);

describe('remembered claim digests', () => {
  it('still refuse a plan that disagrees with frames read before, on every read', () => {
    const { bytes, lengths } = log('append');
    const { records } = chainCrcRecords(bytes, BASE, lengths, null);
    const right = planDigest(lengths, true);
    expect(decode(bytes, records, right)).toBeInstanceOf(ArrayBuffer);
    // Now remembered: a lying plan (the messages claimed uncounted, or any other digest) is refused all the same.
    expect(claimFault(decode(bytes, records, planDigest(lengths, false)))).toBe('claim');
    expect(claimFault(decode(bytes, records, (right + 1) >>> 0))).toBe('claim');
    expect(decode(bytes, records, right)).toBeInstanceOf(ArrayBuffer);
  });

  it('hash the frames again when the bytes were replaced, checksums and all, at the same offsets and seqs', () => {
    const before = log('append');
    const counted = planDigest(before.lengths, true);
    expect(decode(before.bytes, chainCrcRecords(before.bytes, BASE, before.lengths, null).records, counted)).toBeInstanceOf(ArrayBuffer);
    // The same lengths, seqs and offsets; the messages no longer count, and the checksums match the new bytes.
    const after = log('update');
    expect(after.lengths).toEqual(before.lengths);
    const records = chainCrcRecords(after.bytes, BASE, after.lengths, null).records;
    expect(claimFault(decode(after.bytes, records, counted))).toBe('claim');
    expect(decode(after.bytes, records, planDigest(after.lengths, false))).toBeInstanceOf(ArrayBuffer);
  });

  it('hash the frames again when the bytes changed in place under the old checksums', () => {
    const before = log('append');
    const records = chainCrcRecords(before.bytes, BASE, before.lengths, null).records;
    const counted = planDigest(before.lengths, true);
    expect(decode(before.bytes, records, counted)).toBeInstanceOf(ArrayBuffer);
    const after = log('update');
    expect(claimFault(decode(after.bytes, records, counted))).toBe('claim');
  });
});
