/**
 * The page path's slice machinery against the reference packing, without
 * files or workers: random event streams are framed in random append batches
 * (`packBatch` + `encodeRecords`, JSONL and binary mixed, and JSONL rows
 * re-serialized with whitespace, reordered keys or escapes so the scanner
 * takes a different path or declines), the frames a page covers are cut into
 * random slices at frame boundaries, each slice goes through `decodeSlice`
 * (the worker; most slices from the worker's arena, as a task reads it,
 * some returning the arena itself as their result) and `parseSlice` (the main thread), `assemblePage` joins them,
 * and the parsed page's records must deep-equal
 * `packEvents(events.slice(fromSeq, toSeq))` (SPEC section 4).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeRecords } from '../src/streams/batch-encoder.js';
import { expandRecords, packBatch, packEvents, recordSpan, validateRecord } from '../src/core/chunk-codec.js';
import { isRowType, type ChunkRow, type Page, type SessionEvent, type StorageRecord } from '../src/core/types.js';
import { assemblePage, parseSlice, type ParsedSlice } from '../src/main/page-assembler.js';
import { scanJsonlRow } from '../src/streams/jsonl-row-scanner.js';
import { decodeInArena, decodeSlice } from '../src/workers/page-task.js';
import { sliceTask, type SliceTask } from '../src/workers/slice-protocol.js';
import { eventStreamArb } from './helpers/random-log.js';
import { Rng } from '../src/main/gen/prng.js';

const eventsArb = eventStreamArb();

// ---------------------------------------------------------------------------
// JSONL written by another writer: whitespace, reordered keys, escapes.

/** Uniform [0, 1) from a seed: the generator's own PRNG (mulberry32). */
function prng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

type Style = 'jsonl' | 'binary' | 'spaced' | 'reordered' | 'escaped' | 'numbers';

/** Serialize `v` as one JSON line (no '\n' anywhere) the way `style` says; the value is preserved exactly. */
function noisy(v: unknown, style: Exclude<Style, 'jsonl' | 'binary'>, rnd: () => number): string {
  // 'numbers': half the records only write 0 as "-0" (the scanner still takes them otherwise).
  const onlyNegZero = rnd() < 0.5;
  const ws = (): string => (style === 'spaced' && rnd() < 0.5 ? ([' ', '\t', '\r', '  '][Math.floor(rnd() * 4)] as string) : '');
  const quote = (s: string, plain = false): string => {
    if (style !== 'escaped' || plain) return JSON.stringify(s);
    // Values only (keys and tags stay plain, so the scanner still takes the row and copies
    // the escaped members as they are): about half the characters as \uXXXX, '/' as '\/'.
    let out = '"';
    for (const ch of JSON.stringify(s).slice(1, -1).match(/\\u[0-9a-f]{4}|\\.|[\s\S]/gu) ?? []) {
      if (ch.length > 1 || rnd() < 0.5) out += ch;
      else if (ch === '/') out += '\\/';
      else out += `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
    }
    return `${out}"`;
  };
  const go = (x: unknown): string => {
    if (typeof x === 'string') return quote(x);
    if (Array.isArray(x)) return `[${ws()}${x.map(go).join(`${ws()},${ws()}`)}${ws()}]`;
    if (typeof x === 'object' && x !== null) {
      const entries = Object.entries(x);
      if (style === 'reordered') entries.reverse();
      return `{${ws()}${entries.map(([k, y]) => `${quote(k, true)}${ws()}:${ws()}${k === 'type' && typeof y === 'string' ? quote(y, true) : go(y)}`).join(`${ws()},${ws()}`)}${ws()}}`;
    }
    if (style === 'numbers' && Number.isInteger(x)) {
      // Valid JSON spellings of the same integer; the scanner declines all but the plain one.
      const n = x as number;
      if (onlyNegZero) return n === 0 ? '-0' : String(n);
      const r = rnd();
      if (r < 0.3) return String(n);
      if (r < 0.5) return `${n}.0`;
      if (r < 0.7) return `${n}e0`;
      if (r < 0.8) return `${n}E+0`;
      return n === 0 ? '-0' : String(n);
    }
    return JSON.stringify(x);
  };
  return go(v);
}

// ---------------------------------------------------------------------------
// A log in memory.

interface Frame {
  offset: number;
  length: number;
  seq: number;
  count: number;
}

interface Log {
  bytes: Buffer;
  frames: Frame[];
}

const batchArb = fc.record({
  size: fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 9, max: 200 })),
  style: fc.constantFrom<Style>('jsonl', 'jsonl', 'binary', 'binary', 'spaced', 'reordered', 'escaped', 'numbers'),
});
type Batch = { size: number; style: Style };

function writeLog(events: readonly SessionEvent[], batches: readonly Batch[], seed: number): Log {
  const rnd = prng(seed);
  const parts: Buffer[] = [];
  const frames: Frame[] = [];
  let offset = 0;
  let at = 0;
  for (let b = 0; at < events.length; b++) {
    const batch = batches[b % batches.length] as Batch;
    const records: StorageRecord[] = packBatch(events.slice(at, at + batch.size));
    at += batch.size;
    if (batch.style === 'jsonl' || batch.style === 'binary') {
      const enc = encodeRecords(records, offset, batch.style);
      parts.push(enc.bytes);
      for (const e of enc.entryList) frames.push({ offset: e.offset, length: e.length, seq: e.seq, count: e.count });
      offset += enc.bytes.length;
      continue;
    }
    for (const r of records) {
      // Number spellings only in rows: a non-packable event's bytes may be copied into the page as
      // they are, and e.g. "-0" there is a question for the event scanner, not the row path.
      const text = batch.style === 'numbers' && !isRowType(r.type) ? JSON.stringify(r) : noisy(r, batch.style, rnd);
      const frame = Buffer.from(`${text}\n`, 'utf8');
      const span = recordSpan(r);
      frames.push({ offset, length: frame.length, seq: span.seq, count: span.count });
      parts.push(frame);
      offset += frame.length;
    }
  }
  return { bytes: Buffer.concat(parts), frames };
}

interface Cut {
  /** Extra frames decoded before / after the frames the page covers (cut away by the workers). */
  extraBefore: number;
  extraAfter: number;
  /** Picks the slice boundaries among the frame boundaries. */
  seed: number;
  /** Probability that a frame boundary is a slice boundary. */
  density: number;
}

/** The page [fromSeq, toSeq) through decodeSlice + parseSlice + assemblePage, parsed. */
function pageOf(log: Log, fromSeq: number, toSeq: number, cut: Cut): { page: Page; slices: number } {
  const covering = log.frames.map((f, i) => ({ f, i })).filter(({ f }) => f.seq < toSeq && f.seq + Math.max(f.count, 1) > fromSeq);
  const tasks: SliceTask[] = [];
  if (covering.length > 0 && fromSeq < toSeq) {
    const first = Math.max(0, (covering[0] as { i: number }).i - cut.extraBefore);
    const last = Math.min(log.frames.length - 1, (covering[covering.length - 1] as { i: number }).i + cut.extraAfter);
    const rnd = prng(cut.seed);
    const starts = [first];
    for (let i = first + 1; i <= last; i++) if (rnd() < cut.density) starts.push(i);
    starts.forEach((s, k) => {
      const e = k + 1 < starts.length ? (starts[k + 1] as number) : last + 1;
      const a = log.frames[s] as Frame;
      const z = log.frames[e - 1] as Frame;
      tasks.push(sliceTask('', 'mem', a.offset, z.offset + z.length, a.seq, z.seq + z.count, fromSeq, toSeq));
    });
  }
  const slices: ParsedSlice[] = tasks.map((t, k) => {
    // A view into the log at a non-zero byteOffset, as a pooled read buffer would be;
    // or copied into the worker's arena as a task's read puts it, with the result
    // copied out or (every third slice) the arena itself.
    const bytes = log.bytes.subarray(t.start, t.end);
    const r = k % 3 === 0 ? decodeSlice(t, bytes) : decodeInArena(t, bytes, k % 3 === 2);
    if (!(r instanceof ArrayBuffer)) throw new Error(`slice ${JSON.stringify(t)} failed: ${r.error.message}`);
    return parseSlice(r);
  });
  const buf = assemblePage({ sessionId: 's', throughSeq: toSeq - 1, fromSeq, toSeq, hasMore: fromSeq > 0 }, slices);
  return { page: JSON.parse(buf.toString('utf8')) as Page, slices: slices.length };
}

const cutArb: fc.Arbitrary<Cut> = fc.record({
  extraBefore: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3 })),
  extraAfter: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3 })),
  seed: fc.integer(),
  density: fc.constantFrom(0, 0.1, 0.3, 0.7, 1),
});

/** A page [fromSeq, toSeq) of a stream of n events: edges anywhere, empty pages included. */
function boundsArb(n: number): fc.Arbitrary<[number, number]> {
  return fc.tuple(fc.integer({ min: 0, max: n }), fc.integer({ min: 0, max: n })).map(([a, b]) => (a <= b ? [a, b] : [b, a]));
}

function expectPage(events: readonly SessionEvent[], log: Log, fromSeq: number, toSeq: number, cut: Cut): void {
  const { page } = pageOf(log, fromSeq, toSeq, cut);
  // The canonical packing in wire form (a page is JSON: -0 is written 0).
  const expected = JSON.parse(JSON.stringify(packEvents(events.slice(fromSeq, toSeq)))) as unknown;
  expect(page.fromSeq).toBe(fromSeq);
  expect(page.toSeq).toBe(toSeq);
  expect(page.records).toEqual(expected);
  expect(expandRecords(page.records)).toEqual(JSON.parse(JSON.stringify(events.slice(fromSeq, toSeq))));
}

/** A log of hand-written JSONL lines (one frame each). */
function linesLog(lines: readonly string[]): { log: Log; events: SessionEvent[] } {
  const frames: Frame[] = [];
  const records: StorageRecord[] = [];
  let offset = 0;
  for (const l of lines) {
    const r = validateRecord(JSON.parse(l));
    const span = recordSpan(r);
    const length = Buffer.byteLength(l) + 1;
    frames.push({ offset, length, seq: span.seq, count: span.count });
    records.push(r);
    offset += length;
  }
  const events = expandRecords(records.map((r) => (isRowType(r.type) ? { chunks: r as ChunkRow } : { event: r as SessionEvent })));
  return { log: { bytes: Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8'), frames }, events };
}

describe('slice encoder + assembler against packEvents', () => {
  it('assembles every page of a randomly framed, randomly sliced log to the canonical packing', () => {
    fc.assert(
      fc.property(
        eventsArb.chain((events) => fc.tuple(fc.constant(events), fc.array(batchArb, { minLength: 1, maxLength: 10 }), fc.integer(), boundsArb(events.length), cutArb)),
        ([events, batches, seed, [fromSeq, toSeq], cut]) => {
          const log = writeLog(events, batches, seed);
          expectPage(events, log, fromSeq, toSeq, cut);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('agrees for the whole log and for one-slice-per-frame cuts', () => {
    fc.assert(
      fc.property(eventsArb, fc.array(batchArb, { minLength: 1, maxLength: 10 }), fc.integer(), (events, batches, seed) => {
        const log = writeLog(events, batches, seed);
        expectPage(events, log, 0, events.length, { extraBefore: 0, extraAfter: 0, seed, density: 0 });
        expectPage(events, log, 0, events.length, { extraBefore: 0, extraAfter: 0, seed, density: 1 });
      }),
      { numRuns: 200 },
    );
  });

  it('pages valid rows with non-canonical number spellings (-0, 1.0, 1e0) in canonical form', () => {
    // Another writer's JSONL: every line is a valid row, but the gap tokens are not canonical.
    // The fast path copies gap tokens as bytes, so it must leave such rows to the full decode.
    const { log, events } = linesLog([
      '{"type":"text-chunks","seq0":-0,"time0":-0,"data":{"turn":-0,"step":0,"index":0,"dt":[-0,1],"texts":["a","b","c"]}}',
      '{"type":"text-chunks","seq0":3,"time0":1.0,"data":{"turn":0,"step":0,"index":0,"dt":[1e0,-0.0],"texts":["d","e","f"]}}',
      '{"type":"tool-call-chunks","seq0":6,"time0":20,"data":{"turn":0,"step":0,"index":0,"id":"c","dt":[-0,-0],"args":["x","y","z"]}}',
      '{"type":"reasoning-chunks","seq0":9,"time0":30,"data":{"turn":0,"step":0,"index":0,"dt":[ -0 , 2 ],"texts":["g","h","i"]}}',
    ]);
    for (let a = 0; a <= events.length; a++) {
      for (let b = a; b <= events.length; b++) {
        for (const density of [0, 1]) expectPage(events, log, a, b, { extraBefore: 0, extraAfter: 0, seed: 0, density });
      }
    }
  });

  it('takes the scanner path for canonical and spaced JSONL rows, and the full decode for reordered ones', () => {
    const events: SessionEvent[] = [];
    for (let k = 0; k < 6; k++) events.push({ type: 'assistant/chunk', seq: k, time: 100 + k, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: `t${k}/é` } } });
    const row = packBatch(events)[0] as StorageRecord;
    const canonical = Buffer.from(JSON.stringify(row));
    expect(scanJsonlRow(canonical, 0, canonical.length)).not.toBeNull();
    const spaced = Buffer.from(noisy(row, 'spaced', prng(1)));
    expect(spaced.includes(0x20) || spaced.includes(0x09) || spaced.includes(0x0d)).toBe(true);
    expect(scanJsonlRow(spaced, 0, spaced.length)).not.toBeNull();
    const reordered = Buffer.from(noisy(row, 'reordered', prng(1)));
    expect(scanJsonlRow(reordered, 0, reordered.length)).toBeNull();
    for (const style of ['jsonl', 'binary', 'spaced', 'reordered', 'escaped'] as const) {
      const log = writeLog(events, [{ size: 6, style }], 7);
      for (let a = 0; a <= 6; a++) for (let b = a; b <= 6; b++) expectPage(events, log, a, b, { extraBefore: 0, extraAfter: 0, seed: 0, density: 0 });
    }
  });
});
