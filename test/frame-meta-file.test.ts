/**
 * The row-metadata records (frames.meta): what the writer records for each
 * frame, that their chain proves any run of them with one CRC, and that the
 * cursor hands a record out only for the frame bytes it was written for.
 * Pages with damaged or foreign metadata are in page-errors.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeRecords } from '../src/streams/batch-encoder.js';
import { packBatch } from '../src/core/chunk-codec.js';
import type { SessionEvent } from '../src/core/types.js';
import { chainCrcRecords, CRC_RECORD_BYTES, CrcCursor } from '../src/streams/frame-crc-file.js';
import { META_CONTINUES, META_RECORD_BYTES, META_ROW, metaChainHolds, metaRecords } from '../src/streams/frame-meta-file.js';
import { unpackMultiple } from 'msgpackr';

function delta(seq: number, index: number, text: string): SessionEvent {
  return { type: 'assistant/chunk', seq, time: 1_000 + seq * 3, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index, text } } } as SessionEvent;
}

/** Frames of a log in the writer's layout: a message, then a block appended in batches of `batch` deltas, then one of another block. */
function log(batch: number, encoding: 'jsonl' | 'binary' = 'jsonl') {
  const events: SessionEvent[] = [{ type: 'user/message', seq: 0, time: 1_000, data: { text: 'hi' } } as SessionEvent];
  for (let k = 0; k < 40; k++) events.push(delta(events.length, 0, ` w${k}`));
  for (let k = 0; k < 5; k++) events.push(delta(events.length, 1, ` x${k}`));
  const records = [];
  for (let i = 0; i < events.length; i += batch) records.push(...packBatch(events.slice(i, i + batch)));
  const enc = encodeRecords(records, 0, encoding);
  const crc = chainCrcRecords(enc.bytes, 0, enc.lengths, null).records;
  const frameCrcs = enc.lengths.map((_, i) => crc.readUInt32LE(i * CRC_RECORD_BYTES + 12));
  return { enc, crc, frameCrcs, records };
}

describe('row metadata records', () => {
  it('record what the scanner reads: rows, and whether each continues the previous frame’s block', () => {
    const { enc, frameCrcs, records } = log(10);
    const { records: meta } = metaRecords(enc.bytes, enc.lengths, frameCrcs, { chain: null, key: null });
    expect(meta.length).toBe(enc.lengths.length * META_RECORD_BYTES);
    let at = 0;
    const flags = enc.lengths.map((len, i) => {
      const o = i * META_RECORD_BYTES;
      const r = records[i] as { type: string; time0?: number; data: { dt?: number[] } };
      const f = meta.readUInt32LE(o + 28);
      expect(meta.readUInt32LE(o + 32)).toBe(frameCrcs[i]);
      if (f & META_ROW) {
        const text = enc.bytes.toString('utf8', at, at + len);
        expect(meta.readDoubleLE(o)).toBe(r.time0);
        expect(meta.readDoubleLE(o + 8)).toBe((r.data.dt ?? []).reduce((a, b) => a + b, 0));
        expect(meta.readUInt32LE(o + 24)).toBe((r.data.dt ?? []).length + 1);
        // The gaps, exactly: from after `"dt":[` to the `]` before the members.
        expect(text.slice(meta.readUInt32LE(o + 16), meta.readUInt32LE(o + 20))).toBe((r.data.dt ?? []).join(','));
      }
      at += len;
      return f;
    });
    // The message, then block 0: a row of 9 in the first batch, three rows continuing it, and its
    // last delta alone in the last batch (a delta event: no row record); then block 1's row.
    expect(flags).toEqual([0, META_ROW, META_ROW | META_CONTINUES, META_ROW | META_CONTINUES, META_ROW | META_CONTINUES, 0, META_ROW]);
  });

  it('binary (SPF2) rows get records too: time0, gap sum, count, where their gap items and member items start', () => {
    const { enc, frameCrcs, records } = log(10, 'binary');
    const { records: meta } = metaRecords(enc.bytes, enc.lengths, frameCrcs, { chain: null, key: null });
    let at = 0;
    const flags = enc.lengths.map((len, i) => {
      const o = i * META_RECORD_BYTES;
      const r = records[i] as { type: string; time0?: number; data: { dt?: number[]; texts?: string[] } };
      const f = meta.readUInt32LE(o + 28);
      expect(meta.readUInt32LE(o + 32)).toBe(frameCrcs[i]);
      if (f & META_ROW) {
        const dt = r.data.dt ?? [];
        const texts = r.data.texts ?? [];
        expect(meta.readDoubleLE(o)).toBe(r.time0);
        expect(meta.readDoubleLE(o + 8)).toBe(dt.reduce((a, b) => a + b, 0));
        expect(meta.readUInt32LE(o + 24)).toBe(texts.length);
        // The member items run from their start to the frame's end; the gap items from theirs to
        // the `texts` key (a fixstr) and the members' array header before the member items.
        const membersAt = at + meta.readUInt32LE(o + 20);
        expect(unpackMultiple(enc.bytes.subarray(membersAt, at + len))).toEqual(texts);
        const header = texts.length < 16 ? 1 : 3;
        expect(unpackMultiple(enc.bytes.subarray(at + meta.readUInt32LE(o + 16), membersAt - header - 6))).toEqual(dt);
      }
      at += len;
      return f;
    });
    // As for JSONL frames (above): only the delta event alone is no row.
    expect(flags).toEqual([0, META_ROW, META_ROW | META_CONTINUES, META_ROW | META_CONTINUES, META_ROW | META_CONTINUES, 0, META_ROW]);
  });

  it('chain across appends, and any run of records checks with one CRC, seeded by the record before it', () => {
    const { enc, frameCrcs } = log(7);
    const all = metaRecords(enc.bytes, enc.lengths, frameCrcs, { chain: null, key: null });
    const cut = 3;
    const head = enc.lengths.slice(0, cut).reduce((a, b) => a + b, 0);
    const first = metaRecords(enc.bytes.subarray(0, head), enc.lengths.slice(0, cut), frameCrcs.slice(0, cut), { chain: null, key: null });
    const rest = metaRecords(enc.bytes.subarray(head), enc.lengths.slice(cut), frameCrcs.slice(cut), first.link);
    expect(Buffer.concat([first.records, rest.records])).toEqual(all.records);
    const n = enc.lengths.length;
    for (let a = 0; a < n; a++) {
      for (let b = a + 1; b <= n; b++) {
        // Records [a, b): seeded by record a - 1 when there is one.
        const from = Math.max(0, a - 1);
        expect(metaChainHolds(all.records.subarray(from * META_RECORD_BYTES, b * META_RECORD_BYTES), a > 0)).toBe(true);
      }
    }
  });

  it('a changed byte anywhere in a run breaks its chain', () => {
    const { enc, frameCrcs } = log(6);
    const { records } = metaRecords(enc.bytes, enc.lengths, frameCrcs, { chain: null, key: null });
    fc.assert(
      fc.property(fc.nat({ max: records.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, x) => {
        const bad = Buffer.from(records);
        bad[at] = (bad[at] as number) ^ x;
        expect(metaChainHolds(bad, false)).toBe(false);
        // From the record before the damage on, seeded by it, the chain still fails.
        const k = Math.floor(at / META_RECORD_BYTES);
        if (k > 0 && k < enc.lengths.length - 1) expect(metaChainHolds(bad.subarray((k - 1) * META_RECORD_BYTES), true)).toBe(false);
      }),
    );
  });

  it('the cursor hands out a continuing row only with its checksum record, an unbroken chain and its own frame’s CRC', () => {
    const { enc, crc, frameCrcs } = log(10);
    const { records: meta } = metaRecords(enc.bytes, enc.lengths, frameCrcs, { chain: null, key: null });
    const offsets: number[] = [];
    enc.lengths.reduce((at, len) => (offsets.push(at), at + len), 0);
    const continuing = (m: Uint8Array | undefined) => {
      const c = new CrcCursor(new Uint8Array(crc), enc.bytes, 0, m);
      return offsets.map((o) => (c.trustedLength(o) > 0 ? c.continuingRow() : -2));
    };
    expect(continuing(new Uint8Array(meta))).toEqual([-1, -1, 2, 3, 4, -1, -1]);
    expect(continuing(undefined)).toEqual([-1, -1, -1, -1, -1, -1, -1]);
    // A broken chain: none.
    const broken = new Uint8Array(meta);
    broken[3 * META_RECORD_BYTES + 1] = (broken[3 * META_RECORD_BYTES + 1] as number) ^ 1;
    expect(continuing(broken)).toEqual([-1, -1, -1, -1, -1, -1, -1]);
    // Records written for other bytes (chain intact, frame CRCs not these frames'): none.
    const other = metaRecords(enc.bytes, enc.lengths, frameCrcs.map((c) => (c ^ 1) >>> 0), { chain: null, key: null }).records;
    expect(continuing(new Uint8Array(other))).toEqual([-1, -1, -1, -1, -1, -1, -1]);
    // A frame whose bytes changed is not trusted at all, so its record is never asked for.
    const changed = Buffer.from(enc.bytes);
    changed[(offsets[4] as number) + 40] = (changed[(offsets[4] as number) + 40] as number) ^ 1;
    const c = new CrcCursor(new Uint8Array(crc), changed, 0, new Uint8Array(meta));
    expect(offsets.map((o) => c.trustedLength(o) > 0)).toEqual([true, true, true, true, false, true, true]);
  });
});
