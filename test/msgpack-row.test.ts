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
import { runToRow, type Run } from '../src/core/chunk-codec.js';
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

  /** The row of `members` and `dt` read from its MessagePack bytes, and its gaps and members written after `prefix` (a comma first when `comma`). */
  function written(members: string[], dt: number[], comma: boolean): { gaps: string; members: string } {
    const run: Run = { kind: 'text', turn: 1, step: 2, index: 0, seq0: 70_000, time0: 1_783_002_348_241, lastSeq: 0, lastTime: 0, dt, members };
    const { buf, start, end } = inSlice(packr.pack(runToRow(run)));
    expect(readWriterRow(buf, start, end)).toBe(true);
    const out = Buffer.alloc(rowGapsBound() + rowMembersBound() + 8, 0x7e);
    const g = writeRowGaps(buf, out, 1, comma);
    const gaps = out.toString('utf8', 1, g);
    const m = writeRowMembers(buf, out, 1, comma);
    return { gaps, members: out.toString('utf8', 1, m) };
  }

  it('writes gaps two at a time where both are below 64, and one at a time around the others, at every position', () => {
    // Pairs are read as two bytes: a pair straddling 63/64, a fixint next to a wider integer (every MessagePack
    // integer width: fixints, uint8/16/32, int8/16/32, a float64 past 32 bits), an odd gap left at the end.
    const values = [0, 1, 9, 10, 42, 63, 64, 65, 99, 100, 127, 128, 255, 256, 65_535, 65_536, 2 ** 31, -1, -32, -33, -129, -40_000, 2 ** 40];
    for (const a of values) {
      for (const b of values) {
        for (const dt of [[a, b], [a, b, 7], [7, a, b], [a, b, a, b, 3]]) {
          for (const comma of [false, true]) {
            const members = ['x', ...dt.map((_, k) => `m${k}`)];
            const want = (comma ? ',' : '') + JSON.stringify(dt).slice(1, -1);
            expect(written(members, dt, comma).gaps, JSON.stringify({ dt, comma })).toBe(want);
          }
        }
      }
    }
  });

  it('writes members of 1-12 bytes with any ASCII character at any position, and non-ASCII ones, as JSON.stringify does', () => {
    // Members of up to 8 bytes are tested for a character to escape as two words, the bytes past them masked:
    // each ASCII character, at each place of a member of each length, next to others.
    for (let len = 1; len <= 12; len++) {
      const members: string[] = [];
      for (let at = 0; at < len; at++) for (let c = 0; c < 128; c++) members.push('a'.repeat(at) + String.fromCharCode(c) + 'b'.repeat(len - at - 1));
      members.push('é'.repeat(Math.ceil(len / 2)), '😀'.repeat(Math.ceil(len / 4)), `${'ü'.repeat(len)}"`, '\u2028'.slice(0, len));
      const dt = members.slice(1).map(() => 1);
      expect(written(members, dt, false).members).toBe(JSON.stringify(members).slice(1, -1));
      expect(written(members, dt, true).members).toBe(',' + JSON.stringify(members).slice(1, -1));
    }
  });

  it('writes members of every MessagePack string width (fixstr, str8, str16, str32) with escapes, non-ASCII and surrogate pairs', () => {
    // Whole units only: a cut surrogate pair is no string the writer packs.
    const unit = 'ab"c\\d\né😀\u0001 ';
    const long = (n: number) => unit.repeat(Math.floor(n / unit.length)) + 'a'.repeat(n % unit.length);
    const members = ['y', 'x', long(31), long(32), long(255), long(256), long(70_000), '\u2028\u2029', '😀', 'tail'];
    const { buf } = inSlice(packr.pack(members));
    // The widths are as named: fixstr (0xa0-0xbf), str8 (0xd9), str16 (0xda), str32 (0xdb).
    const heads = new Set<number>();
    for (let i = 1, k = 0; k < members.length; k++) {
      const t = buf[3 + i] as number;
      heads.add(t >= 0xa0 && t <= 0xbf ? 0xa0 : t);
      const n = t >= 0xa0 && t <= 0xbf ? t & 0x1f : t === 0xd9 ? (buf[4 + i] as number) : t === 0xda ? buf.readUInt16BE(4 + i) : buf.readUInt32BE(4 + i);
      i += (t >= 0xa0 && t <= 0xbf ? 1 : t === 0xd9 ? 2 : t === 0xda ? 3 : 5) + n;
    }
    expect([...heads].sort()).toEqual([0xa0, 0xd9, 0xda, 0xdb]);
    const dt = members.slice(1).map((_, k) => k);
    expect(written(members, dt, false).members).toBe(JSON.stringify(members).slice(1, -1));
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
