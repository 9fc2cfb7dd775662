/**
 * The chunk-row codec against SPEC section 2: lossless, canonical, stable
 * when re-packed from stored rows cut anywhere, and strict when decoding.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  expandRecords,
  expandRow,
  packBatch,
  packEvents,
  RunPacker,
  runToRecords,
  validateEvent,
  validateRecord,
  validateRow,
  type PackedItem,
} from '../src/core/chunk-codec.js';
import { RecordError } from '../src/core/errors.js';
import type { ChunkRow, PageRecord, SessionEvent, StorageRecord } from '../src/core/types.js';
import { eventStreamArb } from './helpers/random-log.js';

const RUNS = { numRuns: 300 };
const contiguous = eventStreamArb({ contiguous: true });
const gappy = eventStreamArb({ contiguous: false });
const anyStream = fc.oneof(contiguous, gappy);

const safe = Number.isSafeInteger;
const sameKeys = (o: object, keys: string[]): boolean => Object.keys(o).sort().join() === [...keys].sort().join();
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The run key of a packable event, written straight from the SPEC text (not
 * from the codec), so the canonical-form check is independent of the code it
 * checks. null when the event is not packable.
 */
function specKey(e: SessionEvent): string | null {
  if (e.type !== 'assistant/chunk' || !sameKeys(e, ['type', 'seq', 'time', 'data']) || !safe(e.seq) || !safe(e.time)) return null;
  const d = e.data;
  if (!isObj(d) || !sameKeys(d, ['turn', 'step', 'chunk']) || !safe(d.turn) || !safe(d.step) || !isObj(d.chunk)) return null;
  const c = d.chunk;
  if (!safe(c.index)) return null;
  if ((c.type === 'text-delta' || c.type === 'reasoning-delta') && sameKeys(c, ['type', 'index', 'text']) && typeof c.text === 'string') {
    return JSON.stringify([c.type, d.turn, d.step, c.index]);
  }
  if (c.type === 'tool-call-delta' && typeof c.id === 'string' && typeof c.argumentsDelta === 'string') {
    if (sameKeys(c, ['type', 'index', 'id', 'argumentsDelta'])) return JSON.stringify([c.type, d.turn, d.step, c.index, c.id]);
    if (sameKeys(c, ['type', 'index', 'id', 'name', 'argumentsDelta']) && typeof c.name === 'string') return JSON.stringify([c.type, d.turn, d.step, c.index, c.id, c.name]);
  }
  return null;
}

/** A record's chunk members as events (rows expanded), or null for a non-packable event. */
function members(r: PageRecord): SessionEvent[] | null {
  if ('chunks' in r) return expandRow(r.chunks);
  return specKey(r.event) === null ? null : [r.event];
}

function continues(a: SessionEvent, b: SessionEvent): boolean {
  return specKey(a) === specKey(b) && b.seq === a.seq + 1 && safe(b.time - a.time);
}

/**
 * Canonical: runs are maximal and a run is a row exactly when it has 3 or
 * more members. So adjacent records may continue each other only as the two
 * plain events of a run of 2.
 */
function assertCanonical(records: PageRecord[]): void {
  for (const r of records) if ('chunks' in r) expect(expandRow(r.chunks).length).toBeGreaterThanOrEqual(3);
  for (let i = 0; i < records.length; i++) {
    const m = members(records[i] as PageRecord);
    if (m !== null && 'chunks' in (records[i] as PageRecord)) {
      // Inside a row every member continues the previous one.
      for (let k = 1; k < m.length; k++) expect(continues(m[k - 1] as SessionEvent, m[k] as SessionEvent)).toBe(true);
    }
    if (i === 0) continue;
    const prev = members(records[i - 1] as PageRecord);
    if (m === null || prev === null || !continues(prev[prev.length - 1] as SessionEvent, m[0] as SessionEvent)) continue;
    const runOfTwo = prev.length === 1 && m.length === 1 && !('chunks' in (records[i] as PageRecord)) && !('chunks' in (records[i - 1] as PageRecord));
    expect(runOfTwo, `records ${i - 1} and ${i} could merge`).toBe(true);
    const before = i >= 2 ? members(records[i - 2] as PageRecord) : null;
    if (before !== null) expect(continues(before[before.length - 1] as SessionEvent, prev[0] as SessionEvent), `records ${i - 2}..${i} are a run of 3 left unpacked`).toBe(false);
  }
}

/** Storage records with every row cut at the given fractions into separate rows (what different batches would store). */
function splitRows(records: StorageRecord[], cuts: number[]): StorageRecord[] {
  const out: StorageRecord[] = [];
  let c = 0;
  for (const r of records) {
    if (!('seq0' in r)) {
      out.push(r);
      continue;
    }
    const events = expandRow(r as ChunkRow);
    let from = 0;
    while (from < events.length) {
      const frac = cuts.length > 0 ? (cuts[c++ % cuts.length] as number) : 1;
      const len = Math.max(1, Math.round(frac * (events.length - from)));
      // A piece of a row stored alone: packed if it has 3 or more members, plain events otherwise.
      for (const s of packBatch(events.slice(from, from + len))) out.push(s);
      from += len;
    }
  }
  return out;
}

function repack(feed: (p: RunPacker) => void): PageRecord[] {
  const out: PageRecord[] = [];
  const packer = new RunPacker((item) => {
    if ('event' in item) out.push(item);
    else out.push(...runToRecords(item.run));
  });
  feed(packer);
  packer.flush();
  return out;
}

describe('packEvents / expandRecords', () => {
  it('expand(pack(events)) equals events, for every edge of the packing rule', () => {
    fc.assert(
      fc.property(anyStream, (events) => {
        expect(expandRecords(packEvents(events))).toStrictEqual(events);
      }),
      RUNS,
    );
  });

  it('packs canonically: maximal runs, rows of 3 or more members only', () => {
    fc.assert(
      fc.property(anyStream, (events) => {
        assertCanonical(packEvents(events));
      }),
      RUNS,
    );
  });

  it('every row it makes passes validateRow, also after a JSON round trip', () => {
    fc.assert(
      fc.property(anyStream, (events) => {
        for (const r of packEvents(events)) {
          if (!('chunks' in r)) continue;
          expect(validateRow(r.chunks)).toBe(r.chunks);
          expect(validateRow(JSON.parse(JSON.stringify(r.chunks)))).toStrictEqual(r.chunks);
        }
      }),
      RUNS,
    );
  });

  it('is idempotent through stored rows split anywhere (pushRow of whole rows)', () => {
    fc.assert(
      fc.property(anyStream, fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), (events, cuts) => {
        const stored = splitRows(packBatch(events), cuts);
        expect(repack((p) => stored.forEach((r) => p.pushRecord(r)))).toStrictEqual(packEvents(events));
      }),
      RUNS,
    );
  });

  it('is idempotent through member ranges of stored rows (pushRow(row, from, to))', () => {
    fc.assert(
      fc.property(anyStream, fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 5 }), (events, lens) => {
        const stored = packBatch(events);
        let c = 0;
        const got = repack((p) => {
          for (const r of stored) {
            if (!('seq0' in r)) {
              p.pushEvent(r as SessionEvent);
              continue;
            }
            const n = expandRow(r as ChunkRow).length;
            for (let from = 0; from < n; ) {
              const to = Math.min(n, from + (lens[c++ % lens.length] as number));
              p.pushRow(r as ChunkRow, from, to);
              from = to;
            }
          }
        });
        expect(got).toStrictEqual(packEvents(events));
      }),
      RUNS,
    );
  });

  it('is the same whether packed whole or per append batch and re-packed', () => {
    fc.assert(
      fc.property(anyStream, fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 }), (events, sizes) => {
        const stored: StorageRecord[] = [];
        for (let at = 0, b = 0; at < events.length; b++) {
          const size = sizes[b % sizes.length] as number;
          stored.push(...packBatch(events.slice(at, at + size)));
          at += size;
        }
        expect(repack((p) => stored.forEach((r) => p.pushRecord(r)))).toStrictEqual(packEvents(events));
      }),
      RUNS,
    );
  });

  it('merges slices packed apart through pushRun (page fragments)', () => {
    fc.assert(
      fc.property(anyStream, fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 6 }), (events, sizes) => {
        // Each slice is packed alone; its runs (even of 1 or 2 members) are handed on as runs.
        const items: PackedItem[] = [];
        for (let at = 0, b = 0; at < events.length; b++) {
          const size = sizes[b % sizes.length] as number;
          const slice = new RunPacker((item) => items.push(item));
          for (const e of events.slice(at, at + size)) slice.pushEvent(e);
          slice.flush();
          at += size;
        }
        const got = repack((p) => items.forEach((it) => ('event' in it ? p.pushEvent(it.event) : p.pushRun(it.run))));
        expect(got).toStrictEqual(packEvents(events));
      }),
      RUNS,
    );
  });

  it('takeOpen hands back the open run without emitting it', () => {
    const delta = (seq: number, text: string): SessionEvent => ({ type: 'assistant/chunk', seq, time: seq, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text } } });
    const items: PackedItem[] = [];
    const p = new RunPacker((it) => items.push(it));
    [delta(0, 'a'), delta(1, 'b'), delta(2, 'c')].forEach((e) => p.pushEvent(e));
    const open = p.takeOpen();
    expect(items).toEqual([]);
    expect(open?.members).toEqual(['a', 'b', 'c']);
    p.flush();
    expect(items).toEqual([]);
  });
});

describe('packing edges, by example', () => {
  const t = (seq: number, time: number, text: string, extra: Partial<{ kind: string; index: number; turn: number; step: number }> = {}): SessionEvent => ({
    type: 'assistant/chunk',
    seq,
    time,
    data: { turn: extra.turn ?? 1, step: extra.step ?? 1, chunk: { type: extra.kind ?? 'text-delta', index: extra.index ?? 0, text } },
  });
  const tool = (seq: number, id: string, name: string | undefined, args: string): SessionEvent => ({
    type: 'assistant/chunk',
    seq,
    time: 100 + seq,
    data: { turn: 1, step: 1, chunk: name === undefined ? { type: 'tool-call-delta', index: 1, id, argumentsDelta: args } : { type: 'tool-call-delta', index: 1, id, name, argumentsDelta: args } },
  });
  const kinds = (events: SessionEvent[]): string[] => packEvents(events).map((r) => ('chunks' in r ? `${r.chunks.type}:${expandRow(r.chunks).length}` : 'event'));

  it('packs runs of 3 and more, keeps runs of 1 and 2 as events', () => {
    expect(kinds([t(0, 0, 'a')])).toEqual(['event']);
    expect(kinds([t(0, 0, 'a'), t(1, 1, 'b')])).toEqual(['event', 'event']);
    expect(kinds([t(0, 0, 'a'), t(1, 1, 'b'), t(2, 2, 'c')])).toEqual(['text-chunks:3']);
    expect(packEvents([t(5, 10, 'a'), t(6, 7, 'b'), t(7, 7, 'c')])).toEqual([
      { chunks: { type: 'text-chunks', seq0: 5, time0: 10, data: { turn: 1, step: 1, index: 0, dt: [-3, 0], texts: ['a', 'b', 'c'] } } },
    ]);
  });

  it('breaks runs on a seq gap, an unsafe time gap, and any change of kind, turn, step or index', () => {
    expect(kinds([t(0, 0, 'a'), t(1, 0, 'b'), t(3, 0, 'c'), t(4, 0, 'd'), t(5, 0, 'e')])).toEqual(['event', 'event', 'text-chunks:3']);
    const M = Number.MAX_SAFE_INTEGER;
    expect(kinds([t(0, -M, 'a'), t(1, -M, 'b'), t(2, M, 'c'), t(3, M, 'd'), t(4, M, 'e')])).toEqual(['event', 'event', 'text-chunks:3']);
    for (const change of [{ kind: 'reasoning-delta' }, { index: 2 }, { turn: 2 }, { step: 2 }]) {
      expect(kinds([t(0, 0, 'a'), t(1, 0, 'b'), t(2, 0, 'c', change), t(3, 0, 'd', change), t(4, 0, 'e', change)])).toEqual(['event', 'event', expect.stringMatching(/:3$/)]);
    }
  });

  it('keeps huge but safe time gaps inside a row', () => {
    const M = Number.MAX_SAFE_INTEGER;
    const [r] = packEvents([t(0, -(2 ** 52), 'a'), t(1, 2 ** 52 - 1, 'b'), t(2, 0, 'c')]);
    expect(r).toEqual({ chunks: expect.objectContaining({ time0: -(2 ** 52), data: expect.objectContaining({ dt: [M, -(2 ** 52 - 1)] }) }) });
  });

  it('breaks tool-call runs when id changes or name changes in value or presence', () => {
    expect(kinds([tool(0, 'a', 'bash', '{'), tool(1, 'a', 'bash', '"'), tool(2, 'a', 'bash', '}')])).toEqual(['tool-call-chunks:3']);
    expect(kinds([tool(0, 'a', undefined, '{'), tool(1, 'a', undefined, '"'), tool(2, 'a', undefined, '}')])).toEqual(['tool-call-chunks:3']);
    // OpenAI-style: the name on the first delta only.
    expect(kinds([tool(0, 'a', 'bash', ''), tool(1, 'a', undefined, '{'), tool(2, 'a', undefined, '"'), tool(3, 'a', undefined, '}')])).toEqual(['event', 'tool-call-chunks:3']);
    expect(kinds([tool(0, 'a', 'bash', ''), tool(1, 'a', 'read', '{'), tool(2, 'a', 'read', '"'), tool(3, 'a', 'read', '}')])).toEqual(['event', 'tool-call-chunks:3']);
    expect(kinds([tool(0, 'a', 'bash', ''), tool(1, 'b', 'bash', '{'), tool(2, 'b', 'bash', '"'), tool(3, 'b', 'bash', '}')])).toEqual(['event', 'tool-call-chunks:3']);
    const [row] = packEvents([tool(0, 'a', undefined, '{'), tool(1, 'a', undefined, '"'), tool(2, 'a', undefined, '}')]);
    expect('name' in (row as { chunks: ChunkRow }).chunks.data).toBe(false);
  });

  it('keeps events with extra keys and unknown types verbatim, as run breakers', () => {
    const odd: SessionEvent = { type: 'assistant/chunk', seq: 2, time: 2, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'c' } }, ignorable: true };
    const unknown: SessionEvent = { type: 'vendor/thing', seq: 3, time: 3, whatever: [1, { x: null }] };
    const records = packEvents([t(0, 0, 'a'), t(1, 1, 'b'), odd, unknown]);
    expect(records).toEqual([{ event: t(0, 0, 'a') }, { event: t(1, 1, 'b') }, { event: odd }, { event: unknown }]);
  });
});

describe('validateRow', () => {
  const text = (): Record<string, unknown> => ({ type: 'text-chunks', seq0: 5, time0: 1000, data: { turn: 1, step: 2, index: 0, dt: [1, 2], texts: ['a', 'b', 'c'] } });
  const tool = (): Record<string, unknown> => ({ type: 'tool-call-chunks', seq0: 5, time0: 1000, data: { turn: 1, step: 2, index: 1, id: 'call_a', name: 'bash', dt: [0, 0], args: ['{', '"', '}'] } });
  type Mut = (r: Record<string, unknown>, d: Record<string, unknown>) => void;
  const M = Number.MAX_SAFE_INTEGER;
  const cases: [string, 'text' | 'tool', string, Mut][] = [
    ['unknown row type', 'text', 'row-type', (r) => (r.type = 'image-chunks')],
    ['an extra top-level key', 'text', 'row-keys', (r) => (r.extra = 1)],
    ['a missing time0', 'text', 'row-keys', (r) => delete r.time0],
    ['a negative seq0', 'text', 'row-seq0', (r) => (r.seq0 = -1)],
    ['a fractional seq0', 'text', 'row-seq0', (r) => (r.seq0 = 1.5)],
    ['an unsafe seq0', 'text', 'row-seq0', (r) => (r.seq0 = 2 ** 53)],
    ['a last member seq past the safe range', 'text', 'row-seq0', (r) => (r.seq0 = M - 1)],
    ['a string time0', 'text', 'row-time0', (r) => (r.time0 = '1000')],
    ['an unsafe time0', 'text', 'row-time0', (r) => (r.time0 = 2 ** 53)],
    ['data that is an array', 'text', 'row-data', (r) => (r.data = [])],
    ['an extra data key', 'text', 'row-data-keys', (_r, d) => (d.extra = 1)],
    ['text row data with args', 'text', 'row-data-keys', (_r, d) => ((d.args = d.texts), delete d.texts)],
    ['a tool row without id', 'tool', 'row-data-keys', (_r, d) => delete d.id],
    ['a tool row with texts', 'tool', 'row-data-keys', (_r, d) => ((d.texts = d.args), delete d.args)],
    ['a fractional turn', 'text', 'row-int', (_r, d) => (d.turn = 1.5)],
    ['a string index', 'tool', 'row-int', (_r, d) => (d.index = '1')],
    ['an unsafe step', 'text', 'row-int', (_r, d) => (d.step = 2 ** 53)],
    ['a non-string id', 'tool', 'row-id', (_r, d) => (d.id = 7)],
    ['a null name', 'tool', 'row-name', (_r, d) => (d.name = null)],
    ['empty members', 'text', 'row-members', (_r, d) => ((d.texts = []), (d.dt = []))],
    ['members that are not an array', 'tool', 'row-members', (_r, d) => (d.args = 'abc')],
    ['a non-string member', 'text', 'row-members', (_r, d) => (d.texts = ['a', 2, 'c'])],
    ['dt that is not an array', 'text', 'row-dt', (_r, d) => (d.dt = { 0: 1, 1: 2 })],
    ['a fractional dt', 'text', 'row-dt', (_r, d) => (d.dt = [1, 0.5])],
    ['an unsafe dt', 'tool', 'row-dt', (_r, d) => (d.dt = [2 ** 53, 0])],
    ['dt one too long', 'text', 'row-dt-length', (_r, d) => (d.dt = [1, 2, 3])],
    ['dt one too short', 'tool', 'row-dt-length', (_r, d) => (d.dt = [0])],
    ['a member time past the safe range', 'text', 'row-time', (r, d) => ((r.time0 = M - 1), (d.dt = [1, 1]))],
  ];

  it.each(cases)('rejects %s (%s row) with rule %s', (_what, kind, rule, mutate) => {
    const row = kind === 'text' ? text() : tool();
    mutate(row, row.data as Record<string, unknown>);
    let err: unknown;
    try {
      validateRow(row);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RecordError);
    expect((err as RecordError).rule).toBe(rule);
  });

  it('rejects non-objects with rule row-object', () => {
    for (const v of [null, [], 'row', 3]) expect(() => validateRow(v)).toThrow(expect.objectContaining({ rule: 'row-object' }));
  });

  it('names the row in the message', () => {
    const row = text();
    (row.data as Record<string, unknown>).dt = [1];
    expect(() => validateRow(row)).toThrow(/row text-chunks at seq0 5: data\.dt has 1 entries, must be 2/);
  });

  it('accepts valid rows of any member count from 1, with and without a tool name', () => {
    expect(validateRow(text())).toEqual(text());
    expect(validateRow(tool())).toEqual(tool());
    const unnamed = tool();
    delete (unnamed.data as Record<string, unknown>).name;
    expect(validateRow(unnamed)).toEqual(unnamed);
    // Decoding is lenient on length: a 1- or 2-member row is not canonical but is unambiguous (docs/decisions.md).
    const one = { type: 'reasoning-chunks', seq0: 0, time0: 0, data: { turn: 0, step: 0, index: 0, dt: [], texts: [''] } };
    expect(validateRow(one)).toBe(one);
    expect(expandRow(one as ChunkRow)).toHaveLength(1);
    // The last member may sit exactly at the top of the safe range.
    const top = { ...text(), seq0: Number.MAX_SAFE_INTEGER - 2 };
    expect(validateRow(top)).toBe(top);
  });
});

describe('validateEvent / validateRecord', () => {
  it.each([
    ['a non-object', 'x', 'event-object'],
    ['a missing type', { seq: 0, time: 0 }, 'event-type'],
    ['an empty type', { type: '', seq: 0, time: 0 }, 'event-type'],
    ['a negative seq', { type: 'a', seq: -1, time: 0 }, 'event-seq'],
    ['a fractional seq', { type: 'a', seq: 0.5, time: 0 }, 'event-seq'],
    ['a missing time', { type: 'a', seq: 0 }, 'event-time'],
    ['an unsafe time', { type: 'a', seq: 0, time: 2 ** 53 }, 'event-time'],
  ])('rejects %s', (_what, value, rule) => {
    expect(() => validateEvent(value)).toThrow(expect.objectContaining({ name: 'RecordError', rule }));
  });

  it('keeps any other event verbatim, including negative times and unknown types', () => {
    const e = { type: 'vendor/x', seq: 3, time: -5, data: { a: [1] }, more: true };
    expect(validateEvent(e)).toBe(e);
    expect(validateRecord(e)).toBe(e);
  });

  it('routes row types to validateRow and anything else to validateEvent', () => {
    expect(() => validateRecord({ type: 'text-chunks', seq: 0, time: 0 })).toThrow(expect.objectContaining({ rule: 'row-keys' }));
    // A row-looking record of an unknown row type is an event of an unknown type.
    const other = { type: 'image-chunks', seq: 1, time: 1, seq0: 1 };
    expect(validateRecord(other)).toBe(other);
  });
});
