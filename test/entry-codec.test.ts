/**
 * Entry-sidecar lines (SPEC section 3): the byte-level fast parser
 * `parseEntryBytes` against the slow, obviously right `parseEntry`.
 *
 * Canonical lines (from `encodeEntry`) parse to deep-equal entries both ways;
 * the fast path may decline only what it documents (kinds that need escapes,
 * numbers past 15 digits). For mutated lines, a non-null fast result implies
 * the slow parser returns an equal entry: the fast path never accepts a line
 * the slow path rejects, nor reads one differently. Lines sit inside a larger
 * buffer with adversarial bytes around them, so reads past `end` show.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EntryLine } from '../src/core/types.js';
import { ByteLineBlock, encodeEntry, parseEntry, parseEntryBytes } from '../src/streams/entry-codec.js';
import { Rng } from '../src/main/gen/prng.js';

const MAX = Number.MAX_SAFE_INTEGER;

const uintArb = fc.oneof(
  { weight: 12, arbitrary: fc.integer({ min: 0, max: 5000 }) },
  { weight: 2, arbitrary: fc.maxSafeNat().map((n) => n % 10 ** 15) },
  { weight: 1, arbitrary: fc.maxSafeNat() },
  { weight: 1, arbitrary: fc.constantFrom(0, 1, 9, 10, 10 ** 15 - 1, 10 ** 15, 2 ** 52, MAX - 1, MAX) },
);

const kindArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('session', 'assistant/chunk', 'text-chunks', 'tool-call-chunks', 'user/message', 'assistant/message', 'x') },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('é', 'ß', '文', '😀', '\u2028', '\u007f', '/', 'a', ' ', ',', '}', ':', '{'), minLength: 1, maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\u0001', '\u001f', 'a'), minLength: 1, maxLength: 4 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 4 }) },
);

const entryArb: fc.Arbitrary<EntryLine> = fc
  .record({ seq: uintArb, count: uintArb, offset: uintArb, length: uintArb, kind: kindArb, schema: uintArb, group: fc.option(uintArb, { nil: undefined }) })
  .map((r) => {
    const e: EntryLine = { v: 1, seq: r.seq, count: r.count, offset: r.offset, length: Math.max(1, r.length), kind: r.kind, schema: r.schema };
    if (r.group !== undefined) e.group = Math.min(r.group, r.seq);
    return e;
  });

const surroundArb = fc.constantFrom('', '\n', '}', '0', '9', ',"group":1}', ',', '"', ' ', '\n{"v":1,"seq":1');

function embed(line: Buffer, before: string, after: string): { buf: Uint8Array; start: number; end: number } {
  const pre = Buffer.from(before, 'utf8');
  const post = Buffer.from(after, 'utf8');
  const whole = Buffer.alloc(5 + pre.length + line.length + post.length);
  pre.copy(whole, 5);
  line.copy(whole, 5 + pre.length);
  post.copy(whole, 5 + pre.length + line.length);
  const buf = new Uint8Array(whole.buffer, whole.byteOffset + 5, whole.length - 5);
  return { buf, start: pre.length, end: pre.length + line.length };
}

/** The property for any line: non-null fast implies the slow parser returns an equal entry. */
function check(line: Buffer, before = '', after = ''): EntryLine | null {
  const { buf, start, end } = embed(line, before, after);
  const fast = parseEntryBytes(buf, start, end);
  if (fast === null) return null;
  // The text the entries file hands the slow path on a decline.
  const slow = parseEntry(Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('utf8', start, end));
  expect(typeof slow, `fast path accepted a line the slow path rejects (${String(slow)}): ${JSON.stringify(line.toString('latin1'))}`).toBe('object');
  expect(fast, JSON.stringify(line.toString('latin1'))).toStrictEqual(slow);
  return fast;
}

/** Needs no escape in JSON (what the fast path promises to take). */
const plainKind = (k: string): boolean => JSON.stringify(k) === `"${k}"`;
const short = (e: EntryLine): boolean => [e.seq, e.count, e.offset, e.length, e.schema, e.group ?? 0].every((n) => n < 10 ** 15);

// ---------------------------------------------------------------------------
// Mutations.

const NUMBERS = ['-0', '-1', '1.0', '1e0', '1E2', '01', '00', '0.5', '9007199254740993', '99999999999999999', '1e400', '+1', 'null', '"1"', 'true', '[]', ''];
const INSERTS = ['"', '\\', ',', ':', '{', '}', ' ', '0', '1', '-', '.', 'e', '\u0001', '\t', 'é', '"x":1,', ',"group":0', ',"group":99999', '""', '\\u0061', '\xff'];

function mutateText(line: string, rnd: () => number): string {
  const r = rnd();
  if (r < 0.3) {
    // Replace one number with another spelling.
    const nums = [...line.matchAll(/-?\d+/g)];
    const m = nums[Math.floor(rnd() * nums.length)];
    if (m?.index === undefined) return line;
    return line.slice(0, m.index) + (NUMBERS[Math.floor(rnd() * NUMBERS.length)] as string) + line.slice(m.index + m[0].length);
  }
  if (r < 0.45) {
    // Reorder, duplicate, drop or add keys.
    const o = JSON.parse(line) as Record<string, unknown>;
    const keys = Object.keys(o);
    const pairs = keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(o[k])}`);
    const op = Math.floor(rnd() * 4);
    const at = Math.floor(rnd() * pairs.length);
    if (op === 0) pairs.push(pairs.splice(at, 1)[0] as string);
    else if (op === 1) pairs.splice(at, 0, pairs[at] as string);
    else if (op === 2) pairs.splice(at, 1);
    else pairs.splice(at, 0, `"${['v', 'seq', 'group', 'x', 'kind', 'length'][Math.floor(rnd() * 6)]}":${['2', '0', '"k"', 'null', '1'][Math.floor(rnd() * 5)]}`);
    return `{${pairs.join(',')}}`;
  }
  if (r < 0.55) {
    // Whitespace between tokens.
    return line.replace(/[,:{}]/g, (c) => (rnd() < 0.3 ? ` ${c}` : rnd() < 0.3 ? `${c} ` : c));
  }
  if (r < 0.65) {
    // Escape characters of the kind (equal value, different bytes).
    return line.replace(/"kind":"([^"\\]*)"/, (_, k: string) => `"kind":"${[...k].map((c) => (rnd() < 0.5 && c.length === 1 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c)).join('')}"`);
  }
  return line;
}

function mutateBytes(b: Buffer, rnd: () => number, times: number): Buffer {
  for (let n = 0; n < times; n++) {
    const at = Math.floor(rnd() * (b.length + 1));
    const r = rnd();
    if (r < 0.3 && b.length > 0) {
      b = Buffer.from(b);
      b[Math.min(at, b.length - 1)] = rnd() < 0.5 ? Math.floor(rnd() * 256) : (INSERTS[Math.floor(rnd() * INSERTS.length)] as string).charCodeAt(0) & 0xff;
    } else if (r < 0.55) b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + Math.floor(rnd() * 3)))]);
    else if (r < 0.85) b = Buffer.concat([b.subarray(0, at), Buffer.from(INSERTS[Math.floor(rnd() * INSERTS.length)] as string, 'utf8'), b.subarray(at)]);
    else b = b.subarray(0, at);
  }
  return b;
}

/** Uniform [0, 1) from a seed: the generator's own PRNG (mulberry32). */
function prng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

const attempt = <T>(f: () => T): T | 'threw' => {
  try {
    return f();
  } catch {
    return 'threw';
  }
};

/** A ByteLineBlock over `lines` ('\n'-terminated in one buffer, at file offset `pad`), with parseEntry as its slow path. */
function blockOf(lines: readonly string[], pad: number, encoding: BufferEncoding = 'utf8'): { block: ByteLineBlock } {
  const parts = lines.map((l) => Buffer.from(`${l}\n`, encoding));
  const buf = Buffer.concat([Buffer.alloc(pad, 0x20), ...parts]);
  const starts: number[] = [];
  const ends: number[] = [];
  let at = pad;
  for (const p of parts) {
    starts.push(at);
    ends.push(at + p.length - 1);
    at += p.length;
  }
  const slow = (text: string, fileOffset: number) => {
    const e = parseEntry(text);
    if (typeof e === 'string') throw new Error(`entry line at ${fileOffset}: ${e}`);
    return e;
  };
  return { block: new ByteLineBlock(buf, starts, ends, 0, slow) };
}

describe('parseEntryBytes', () => {
  it('parses canonical lines from encodeEntry to the entry parseEntry returns', () => {
    fc.assert(
      fc.property(entryArb, surroundArb, surroundArb, (entry, before, after) => {
        const line = encodeEntry(entry);
        expect(line.endsWith('\n')).toBe(true);
        const body = line.slice(0, -1);
        expect(parseEntry(body)).toStrictEqual(entry);
        const fast = check(Buffer.from(body, 'utf8'), before, after);
        if (plainKind(entry.kind) && short(entry)) expect(fast).toStrictEqual(entry);
      }),
      { numRuns: 3000 },
    );
  });

  it('parses runs of lines in one buffer, each alike both ways (kind reuse across lines)', () => {
    fc.assert(
      fc.property(fc.array(entryArb, { minLength: 1, maxLength: 12 }), (entries) => {
        const buf = Buffer.from(entries.map(encodeEntry).join(''), 'utf8');
        let s = 0;
        for (const entry of entries) {
          const e = buf.indexOf(0x0a, s);
          const fast = parseEntryBytes(buf, s, e);
          if (fast !== null) expect(fast).toStrictEqual(entry);
          else expect(plainKind(entry.kind) && short(entry)).toBe(false);
          s = e + 1;
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('never accepts a text-mutated line the slow path rejects or reads differently', () => {
    fc.assert(
      fc.property(entryArb, fc.integer(), fc.integer({ min: 1, max: 3 }), surroundArb, (entry, seed, times, after) => {
        const rnd = prng(seed);
        let line = encodeEntry(entry).slice(0, -1);
        for (let k = 0; k < times; k++) {
          try {
            line = mutateText(line, rnd);
          } catch {
            break; // a previous mutation left no JSON to restructure
          }
        }
        check(Buffer.from(line, 'utf8'), '', after);
      }),
      { numRuns: 5000 },
    );
  });

  it('never accepts a byte-mutated line the slow path rejects or reads differently', () => {
    fc.assert(
      fc.property(entryArb, fc.integer(), fc.integer({ min: 1, max: 4 }), surroundArb, surroundArb, (entry, seed, times, before, after) => {
        const rnd = prng(seed);
        check(mutateBytes(Buffer.from(encodeEntry(entry).slice(0, -1), 'utf8'), rnd, times), before, after);
      }),
      { numRuns: 5000 },
    );
  });

  it('ByteLineBlock.seq/group read canonical lines as parseEntry does', () => {
    fc.assert(
      fc.property(fc.array(entryArb, { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 3 }), (entries, pad) => {
        const { block } = blockOf(entries.map((e) => encodeEntry(e).slice(0, -1)), pad);
        const into = new Float64Array(3);
        entries.forEach((entry, k) => {
          expect(block.entry(k)).toStrictEqual(entry);
          expect(block.seq(k)).toBe(entry.seq);
          expect(block.group(k)).toBe(entry.group);
          block.fields(k, into);
          expect([...into]).toEqual([entry.seq, entry.offset, entry.group ?? -1]);
        });
      }),
      { numRuns: 1000 },
    );
  });

  it('ByteLineBlock.seq/group never read a damaged line differently from parseEntry', () => {
    fc.assert(
      fc.property(fc.array(entryArb, { minLength: 1, maxLength: 6 }), fc.integer(), fc.integer({ min: 1, max: 3 }), (entries, seed, times) => {
        const rnd = prng(seed);
        const lines = entries.map((e) => encodeEntry(e).slice(0, -1));
        const k = Math.floor(rnd() * lines.length);
        lines[k] = mutateBytes(Buffer.from(lines[k] as string, 'utf8'), rnd, times).toString('latin1').replace(/\n/g, ' ');
        const { block } = blockOf(lines, 0, 'latin1');
        const slow = parseEntry(Buffer.from(lines[k] as string, 'latin1').toString('utf8'));
        const seq = attempt(() => block.seq(k));
        const group = attempt(() => block.group(k));
        const into = new Float64Array(3);
        const fields = attempt(() => {
          block.fields(k, into);
          return [...into];
        });
        if (typeof slow === 'string') {
          expect(seq, `seq of a line parseEntry rejects (${slow}): ${JSON.stringify(lines[k])}`).toBe('threw');
          expect(group, `group of a line parseEntry rejects (${slow}): ${JSON.stringify(lines[k])}`).toBe('threw');
          expect(fields, `fields of a line parseEntry rejects (${slow}): ${JSON.stringify(lines[k])}`).toBe('threw');
        } else {
          expect(seq, JSON.stringify(lines[k])).toBe(slow.seq);
          expect(group, JSON.stringify(lines[k])).toBe(slow.group);
          expect(fields, JSON.stringify(lines[k])).toEqual([slow.seq, slow.offset, slow.group ?? -1]);
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('ByteLineBlock: damaged or unusual lines found by the property above', () => {
    const lines = [
      // A quote lost in the middle: not JSON, but the prefix still reads seq 5.
      '{"v":1,"seq":5,"count":1,"offset":0,"length:1,"kind":"x","schema":1}',
      // Length 0 is invalid; no group key at the end does not make the line valid.
      '{"v":1,"seq":5,"count":1,"offset":0,"length":0,"kind":"user/message","schema":1}',
      // Valid for parseEntry (extra keys are allowed): a counted message with group 3.
      '{"v":1,"seq":5,"count":1,"offset":0,"length":1,"kind":"user/message","schema":1,"group":3,"x":1}',
      // Torn: no closing brace.
      '{"v":1,"seq":5,"count":1,"offset":0,"length":1,"kind":"x","schema":1',
    ];
    const { block } = blockOf(lines, 0);
    expect(attempt(() => block.seq(0))).toBe('threw');
    expect(attempt(() => block.group(0))).toBe('threw');
    expect(attempt(() => block.seq(1))).toBe('threw');
    expect(attempt(() => block.group(1))).toBe('threw');
    expect(block.seq(2)).toBe(5);
    expect(block.group(2)).toBe(3);
    expect(attempt(() => block.seq(3))).toBe('threw');
    expect(attempt(() => block.group(3))).toBe('threw');
  });

  it('declines or agrees on hand-picked odd lines', () => {
    const lines = [
      '',
      '{}',
      '{"v":1,"seq":0,"count":0,"offset":0,"length":0,"kind":"session","schema":1}',
      '{"v":1,"seq":0,"count":0,"offset":0,"length":1,"kind":"","schema":1}',
      '{"v":1,"seq":0,"count":0,"offset":0,"length":1,"kind":"session","schema":1,"group":1}',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"session","schema":1,"group":1}',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"session","schema":1,"group":1,"x":2}',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"session","schema":1,}',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"session","schema":1} ',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"session","schema":1}}',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"session","schema":1',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"ses\\"sion","schema":1}',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"a\u0001","schema":1}',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"a\xff","schema":1}',
      '{"v":1,"seq":1,"count":0,"offset":0,"length":1,"kind":"session","schema":1,"group":-0}',
      '{"v":1,"seq":01,"count":0,"offset":0,"length":1,"kind":"session","schema":1}',
      '{"v":1,"seq":999999999999999,"count":0,"offset":0,"length":1,"kind":"session","schema":1}',
      '{"v":1,"seq":9007199254740991,"count":0,"offset":0,"length":1,"kind":"session","schema":1}',
      '{"v":1,"seq":9007199254740993,"count":0,"offset":0,"length":1,"kind":"session","schema":1}',
      '{"v":1.0,"seq":1,"count":0,"offset":0,"length":1,"kind":"session","schema":1}',
      '{"v":1,"seq":1e0,"count":0,"offset":0,"length":1,"kind":"session","schema":1}',
    ];
    for (const l of lines) for (const after of ['', '\n', '}', '0', ',"group":0}']) check(Buffer.from(l, 'latin1'), '', after);
    expect(check(Buffer.from(lines[5] as string))).toStrictEqual({ v: 1, seq: 1, count: 0, offset: 0, length: 1, kind: 'session', schema: 1, group: 1 } as never);
  });
});
