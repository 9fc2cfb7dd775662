/**
 * The writer's packed rows read from their MessagePack bytes
 * (streams/msgpack-row.ts): for every row the writer can pack, the key,
 * seqs, times and counts are the row's, and the gaps and members written
 * are exactly the JSON the page path would write for them
 * (JSON.stringify of each); other records and layouts are declined.
 */
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { runToRow, type Run } from '../src/main/core/chunk-codec.js';
import { dshRow } from './helpers/dsh-row.js';
import { binaryRow, readWriterRow, rowGapsBound, rowMembersBound, writeRowGaps, writeRowMembers } from '../src/streams/msgpack-row.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true, int64AsType: 'number' });

const memberArb = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: 'grapheme', maxLength: 9 }) },
  { weight: 2, arbitrary: fc.constantFrom('"', '\\', '\n', 'a\tb', '\u0000', '\u001f', 'x\ufeffy', ' café', '文件"', '😀😀', '\u2028') },
  { weight: 1, arbitrary: fc.string({ minLength: 30, maxLength: 300 }) },
);
const gapArb = fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: -70000, max: 70000 }), fc.constantFrom(2 ** 40, -(2 ** 33), 99, 100, 127, 128));

const runArb: fc.Arbitrary<Run> = fc
  .record({
    kind: fc.constantFrom('text', 'reasoning', 'tool') as fc.Arbitrary<Run['kind']>,
    turn: fc.integer({ min: 0, max: 300 }),
    step: fc.integer({ min: 0, max: 70000 }),
    index: fc.integer({ min: 0, max: 5 }),
    id: fc.string({ maxLength: 12 }),
    name: fc.option(fc.string({ maxLength: 12 }), { nil: undefined }),
    seq0: fc.oneof(fc.nat(), fc.constant(2 ** 40)),
    time0: fc.oneof(fc.integer(), fc.constant(1_783_002_348_241)),
    members: fc.array(memberArb, { minLength: 1, maxLength: 40 }),
    gaps: fc.array(gapArb, { maxLength: 40 }),
  })
  .map((r) => {
    const dt = r.members.slice(1).map((_, k) => r.gaps[k % Math.max(1, r.gaps.length)] ?? 1);
    const run: Run = { kind: r.kind, turn: r.turn, step: r.step, index: r.index, seq0: r.seq0, time0: r.time0, lastSeq: r.seq0 + r.members.length - 1, lastTime: 0, dt, members: r.members };
    if (r.kind === 'tool') {
      run.id = r.id;
      if (r.name !== undefined) run.name = r.name;
    }
    return run;
  });

/** The payload in a larger buffer, as frames are in a slice (`after` bytes after it: none for the slice's last frame). */
function inSlice(payload: Uint8Array, after = 5): { buf: Buffer; start: number; end: number } {
  const buf = Buffer.concat([Buffer.from([1, 2, 3]), payload, Buffer.alloc(after, 0xa1)]);
  return { buf, start: 3, end: 3 + payload.length };
}

describe('readWriterRow', () => {
  it('reads every row the writer packs (and a tool call\'s in dsh\'s order, id and name after the gaps), and writes its gaps and members as JSON.stringify does', () => {
    fc.assert(
      fc.property(runArb, fc.boolean(), fc.boolean(), (run, comma, dshOrder) => {
        const row = dshOrder ? dshRow(runToRow(run)) : runToRow(run);
        const { buf, start, end } = inSlice(packr.pack(row));
        const bom = row.data.dt !== undefined && (run.members.some((m) => m.startsWith('\ufeff')) || (run.id ?? '').startsWith('\ufeff') || (run.name ?? '').startsWith('\ufeff'));
        const ok = readWriterRow(buf, start, end);
        expect(ok).toBe(!bom);
        if (!ok) return;
        const r = binaryRow;
        expect({ ...r.key }).toEqual({ kind: run.kind, turn: run.turn, step: run.step, index: run.index, id: run.id, name: run.name });
        expect([r.seq0, r.time0, r.n, r.dtSum]).toEqual([run.seq0, run.time0, run.members.length, run.dt.reduce((a, b) => a + b, 0)]);
        const prefix = comma ? 'x' : '';
        const out = Buffer.alloc(rowGapsBound() + rowMembersBound() + 8, 0x7e);
        out.write(prefix);
        const g = writeRowGaps(buf, out, prefix.length, comma);
        expect(out.toString('utf8', 0, g)).toBe(prefix + (comma && run.dt.length > 0 ? ',' : '') + JSON.stringify(run.dt).slice(1, -1));
        const m = writeRowMembers(buf, out, prefix.length, comma);
        expect(out.toString('utf8', 0, m)).toBe(prefix + (comma ? ',' : '') + JSON.stringify(run.members).slice(1, -1));
      }),
      { numRuns: 3000 },
    );
  });

  it('writes the same JSON for rows ending the slice, and for rows after rows written into other buffers', () => {
    // Members are copied a word at a time, reading past their end: a row at the very end of the slice
    // must be written in full all the same; gaps and members of successive rows go to two sinks.
    fc.assert(
      fc.property(fc.array(fc.tuple(runArb, fc.integer({ min: 0, max: 6 })), { minLength: 1, maxLength: 4 }), (rows) => {
        const gaps = Buffer.alloc(1 << 16);
        const members = Buffer.alloc(1 << 16);
        let g = 0;
        let m = 0;
        let wantGaps: number[] = [];
        let wantMembers: string[] = [];
        for (const [run, after] of rows) {
          const { buf, start, end } = inSlice(packr.pack(runToRow(run)), after);
          if (!readWriterRow(buf, start, end)) continue;
          g = writeRowGaps(buf, gaps, g, wantGaps.length > 0);
          m = writeRowMembers(buf, members, m, wantMembers.length > 0);
          wantGaps = wantGaps.concat(run.dt);
          wantMembers = wantMembers.concat(run.members);
        }
        expect(gaps.toString('utf8', 0, g)).toBe(JSON.stringify(wantGaps).slice(1, -1));
        expect(members.toString('utf8', 0, m)).toBe(JSON.stringify(wantMembers).slice(1, -1));
      }),
      { numRuns: 1500 },
    );
  });

  it('declines events, other layouts and values outside the row rule', () => {
    const run: Run = { kind: 'text', turn: 1, step: 2, index: 0, seq0: 5, time0: 9, lastSeq: 6, lastTime: 10, dt: [1], members: ['a', 'b'] };
    const row = runToRow(run) as unknown as Record<string, unknown>;
    const decline = (v: unknown): void => {
      const { buf, start, end } = inSlice(packr.pack(v));
      expect(readWriterRow(buf, start, end), JSON.stringify(v)).toBe(false);
    };
    decline({ type: 'assistant/chunk', seq: 1, time: 2, data: {} });
    decline({ seq0: 5, type: 'text-chunks', time0: 9, data: row.data });
    decline({ ...row, seq0: -1 });
    decline({ ...row, seq0: 1.5 });
    decline({ ...row, time0: 2 ** 53 });
    decline({ ...row, data: { ...(row.data as object), dt: [1, 2] } });
    // Members are only walked as they are written (the frame matched the writer's checksum, so they
    // are strings): one that is not stops the page (a decoder fault, corrupt_range), never a wrong byte.
    {
      const { buf, start, end } = inSlice(packr.pack({ ...row, data: { ...(row.data as object), texts: ['a', 7] } }));
      if (readWriterRow(buf, start, end)) expect(() => writeRowMembers(buf, Buffer.alloc(rowMembersBound() + 8), 0, false)).toThrow(/not a string|does not end/);
    }
    decline({ ...row, data: { turn: 1, step: 2, index: 0, texts: ['a', 'b'], dt: [1] } });
    decline({ ...row, extra: 1 });
    const { buf, start, end } = inSlice(packr.pack(row));
    expect(readWriterRow(buf, start, end)).toBe(true);
    // Cut short: declined, or (cut inside the members) refused as they are written.
    for (let cut = start; cut < end; cut++) {
      if (readWriterRow(buf, start, cut)) expect(() => writeRowMembers(buf, Buffer.alloc(rowMembersBound() + 8), 0, false)).toThrow(/not a string|does not end/);
    }
  });
});
