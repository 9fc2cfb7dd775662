/**
 * The trusted-frame reader (frames whose bytes match the writer's CRC) reads
 * the writer's own JSON.stringify layouts exactly as the general scanners
 * do, and declines any other layout rather than misreading it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packableChunk, packBatch, packEvents } from '../src/core/chunk-codec.js';
import { scanJsonlRow, type RawRow } from '../src/streams/jsonl-row-scanner.js';
import { OTHER_LAYOUT, scanTrustedFrame, TRUSTED_EVENT, TRUSTED_ROW, trustedEventSeq, trustedRow } from '../src/streams/trusted-frame-scanner.js';
import { eventStreamArb } from './helpers/random-log.js';
import { dshRow } from './helpers/dsh-row.js';

/** The trusted scanner's row for a line, or null when it found no row. */
function scanTrustedRow(line: Buffer): RawRow | null {
  return scanTrustedFrame(line, 0, line.length) === TRUSTED_ROW ? trustedRow : null;
}

function view(r: RawRow | null) {
  if (r === null) return null;
  const { buf: _b, ...rest } = r;
  return rest;
}

const rowsArb = eventStreamArb().map((events) => packEvents(events).flatMap((r) => ('chunks' in r ? [r.chunks] : [])));

describe('scanTrustedFrame', () => {
  it('reads every row the writer writes (and a tool call\'s in dsh\'s order, id and name after the gaps) as the general scanner does', () => {
    let seen = 0;
    let dsh = 0;
    fc.assert(
      fc.property(rowsArb, (rows) => {
        for (const row of rows.flatMap((r) => (r.type === 'tool-call-chunks' ? [r, dshRow(r)] : [r]))) {
          const line = Buffer.from(JSON.stringify(row));
          if (line.includes('],"id":')) dsh++;
          // Both decline rows whose running gap sums leave the safe range (the full decode takes those).
          const trusted = scanTrustedRow(line);
          expect(view(trusted)).toEqual(view(scanJsonlRow(line, 0, line.length)));
          if (trusted !== null) seen++;
        }
      }),
      { numRuns: 300 },
    );
    expect(seen).toBeGreaterThan(100);
    expect(dsh).toBeGreaterThan(20);
  });

  it("reads each row's tool id and name, whatever ids came before (same lengths, other bytes, long, escaped)", () => {
    // The reader remembers the last id and name decoded (a tool call's frames repeat them): any
    // sequence of frames must still give each its own.
    const ids = ['call_a', 'call_b', 'call_' + 'x'.repeat(90), 'call_' + 'y'.repeat(90), 'c\u00e9"q', 'cé', '', 'call_a1'];
    const names = ['bash', 'base', 'read_file', 'n'.repeat(70), 'né'];
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(ids.length - 1), fc.nat(names.length - 1), fc.boolean()), { minLength: 1, maxLength: 30 }), (picks) => {
        let seq0 = 10;
        for (const [i, j, named] of picks) {
          const data: Record<string, unknown> = { turn: 1, step: 2, index: 0, id: ids[i] };
          if (named) data.name = names[j];
          data.dt = [3];
          data.args = ['{"a":', '1}'];
          const line = Buffer.from(JSON.stringify({ type: 'tool-call-chunks', seq0, time0: 1000, data }));
          const r = scanTrustedRow(line);
          expect(r?.key.id).toBe(ids[i]);
          expect(r?.key.name).toBe(named ? names[j] : undefined);
          seq0 += 2;
        }
      }),
      { numRuns: 300 },
    );
  });

  it('declines other layouts of the same row', () => {
    fc.assert(
      fc.property(rowsArb, (rows) => {
        for (const row of rows) {
          const { data, ...top } = row;
          const { seq0, ...afterSeq0 } = top;
          const { dt, ...afterDt } = data;
          const reordered = [JSON.stringify({ seq0, ...afterSeq0, data }), JSON.stringify(row, null, 1), JSON.stringify({ ...row, data: { dt, ...afterDt } })];
          for (const text of reordered) {
            const line = Buffer.from(text);
            const r = scanTrustedRow(line);
            if (r !== null) expect(view(r)).toEqual(view(scanJsonlRow(line, 0, line.length)));
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('reads a delta event in the canonical layout as the one-member row it packs to, and leaves every other event alone', () => {
    let deltas = 0;
    fc.assert(
      fc.property(eventStreamArb(), (events) => {
        for (const e of events) {
          const line = Buffer.from(JSON.stringify(e));
          const r = scanTrustedRow(line);
          const p = packableChunk(e);
          if (r === null) {
            // Declined: only events the canonical layout does not describe (other key orders, not packable).
            if (p !== null) expect(JSON.stringify(Object.keys(e))).not.toBe('["type","seq","time","data"]');
            continue;
          }
          expect(p).not.toBeNull();
          deltas++;
          expect(r.key).toEqual(p?.key);
          expect([r.seq0, r.time0, r.n, r.dtSum]).toEqual([e.seq, e.time, 1, 0]);
          expect(JSON.parse(line.toString('utf8', r.membersStart, r.membersEnd))).toBe(p?.member);
        }
      }),
      { numRuns: 200 },
    );
    expect(deltas).toBeGreaterThan(100);
  });

  it('classifies every frame the writer writes: packable events as rows, every other event by its seq', () => {
    // What the writer frames (packBatch, then JSON.stringify): one-member batches keep every event unpacked.
    let events = 0;
    fc.assert(
      fc.property(eventStreamArb(), (stream) => {
        for (const e of stream) {
          const [record] = packBatch([e]);
          const line = Buffer.from(JSON.stringify(record));
          const layout = scanTrustedFrame(line, 0, line.length);
          if (packableChunk(e) !== null) {
            expect(layout).toBe(TRUSTED_ROW);
            continue;
          }
          // Not packable: an event to copy as it is, or a layout left to the general scanners.
          if (layout === TRUSTED_EVENT) {
            events++;
            expect(trustedEventSeq()).toBe(e.seq);
          } else {
            expect(layout).toBe(OTHER_LAYOUT);
          }
        }
      }),
      { numRuns: 200 },
    );
    expect(events).toBeGreaterThan(100);
  });

  it("declines what is not in the writer's layout", () => {
    const lines = [
      '{"seq":1,"type":"user/message","time":2,"data":{}}', // host key order without type first
      '{"type":"user\\/message","seq":1,"time":2}', // an escape in the type
      '{"type":"user/message","time":2,"seq":1}', // seq not second
      '{"type":"user/message","seq":1.5,"time":2}', // not an integer seq
      '{"type":"user/message","seq":-1,"time":2}', // negative seq
      '{"type":"text-chunks","seq0":1,"time0":2,"data":{"turn":0,"step":0,"dt":[],"index":0,"texts":["a"]}}', // row keys out of order
      ' {"type":"user/message","seq":1,"time":2}', // leading space
    ];
    for (const text of lines) expect(scanTrustedFrame(Buffer.from(text), 0, Buffer.byteLength(text)), text).toBe(OTHER_LAYOUT);
  });
});
