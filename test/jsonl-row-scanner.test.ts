/**
 * The JSONL packed-row scanner (the page path's byte-level fast path) against
 * the slow, obviously right path: `validateRow(JSON.parse(text))`.
 *
 * For any line the scanner either declines (null) or returns a row that
 * agrees with the parsed row in every field the page path uses: run key,
 * seq0, time0, member count, sum of gaps, and the byte ranges of the gap and
 * member lists (valid JSON list contents that parse to exactly the row's
 * lists), plus the per-member bounds and gaps used for rows cut at page
 * edges. It must never accept a line JSON.parse or validateRow rejects.
 *
 * Lines come from canonical rows (JSON.stringify), from a noisy serializer
 * (whitespace between tokens, reordered keys, escapes in strings and keys),
 * from structural mutations (duplicate, extra and missing keys, odd number
 * spellings, wrong dt length, empty or non-string members, raw control
 * characters, non-row types) and from byte mutations (flips, deletions,
 * insertions, truncation). Each line is embedded in a larger buffer with
 * adversarial bytes on both sides, so a scan that reads past `end` shows.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rowKey, rowMembers, validateRow } from '../src/core/chunk-codec.js';
import type { ChunkRow } from '../src/core/types.js';
import { rowGaps, rowMemberBounds, scanJsonlRow, type RawRow } from '../src/streams/jsonl-row-scanner.js';
import { decodeString } from '../src/core/json-bytes.js';
import { Rng } from '../src/main/gen/prng.js';

const MAX = Number.MAX_SAFE_INTEGER;
const RUNS = { numRuns: 2000 };

// ---------------------------------------------------------------------------
// Rows.

const intArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: -5, max: 100 }) },
  { weight: 1, arbitrary: fc.maxSafeInteger() },
  { weight: 1, arbitrary: fc.constantFrom(MAX, -MAX, MAX - 1, 2 ** 52, -(2 ** 52), 2 ** 31, 10 ** 15, 10 ** 15 - 1) },
);
const natArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 1000 }) },
  { weight: 1, arbitrary: fc.maxSafeNat() },
  { weight: 1, arbitrary: fc.constantFrom(MAX, MAX - 1, MAX - 7, 2 ** 52, 10 ** 15) },
);
const gapArb = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: -3, max: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: -100_000, max: 100_000 }) },
  { weight: 1, arbitrary: fc.constantFrom(MAX, -MAX, 2 ** 52, -(2 ** 52), 2 ** 53 - 2, 10 ** 15) },
);
/** Strings that stress escaping: quotes, backslashes, controls, multi-byte, astral, lone surrogates, JSON syntax. */
const strArb = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 6 }) },
  {
    weight: 3,
    arbitrary: fc.string({
      unit: fc.constantFrom('"', '\\', '\n', '\r', '\t', '\u0001', '\u0000', '\u001f', '\u007f', 'é', '/', '\u2028', '😀', '\ud800', '\udfff', 'a', ' ', ',', ']', '[', '}', '{', ':', 'u', '0'),
      maxLength: 8,
    }),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 4 }) },
  { weight: 2, arbitrary: fc.constant('') },
);

const rowFieldsArb = fc.record({
    kind: fc.constantFrom('text-chunks' as const, 'reasoning-chunks' as const, 'tool-call-chunks' as const),
    seq0: natArb,
    time0: intArb,
    turn: intArb,
    step: intArb,
    index: intArb,
    id: strArb,
    name: fc.option(strArb, { nil: undefined }),
    members: fc.array(strArb, { minLength: 1, maxLength: 8 }),
    gaps: fc.array(gapArb, { maxLength: 8 }),
  });

function buildRow(type: ChunkRow['type'], seq0: number, time0: number, head: { turn: number; step: number; index: number }, id: string, name: string | undefined, dt: number[], members: string[]): ChunkRow {
  if (type === 'tool-call-chunks') {
    const data: Record<string, unknown> = { ...head, id };
    if (name !== undefined) data.name = name;
    data.dt = dt;
    data.args = members;
    return { type, seq0, time0, data } as unknown as ChunkRow;
  }
  return { type, seq0, time0, data: { ...head, dt, texts: members } };
}

/** Valid rows: seqs and every member time kept in the safe range. */
const rowArb: fc.Arbitrary<ChunkRow> = rowFieldsArb.map((r) => {
    const n = r.members.length;
    const seq0 = Math.min(r.seq0, MAX - (n - 1));
    // Keep every member time a safe integer (the row is valid); a gap that would leave the range is flipped.
    const dt: number[] = [];
    let t = r.time0;
    for (let k = 0; k < n - 1; k++) {
      let g = r.gaps[k] ?? 1;
      if (!Number.isSafeInteger(t + g)) g = -g;
      t += g;
      dt.push(g);
    }
    return buildRow(r.kind, seq0, r.time0, { turn: r.turn, step: r.step, index: r.index }, r.id, r.name, dt, r.members);
  });

/** Rows as generated, unclamped: last seq or member times may leave the safe range (then the row is invalid). */
const looseRowArb: fc.Arbitrary<ChunkRow> = rowFieldsArb.map((r) =>
  buildRow(r.kind, r.seq0, r.time0, { turn: r.turn, step: r.step, index: r.index }, r.id, r.name, r.members.slice(1).map((_, k) => r.gaps[k] ?? 1), r.members),
);

// ---------------------------------------------------------------------------
// A JSON syntax tree, so lines can be written with noise and mutated structurally.

type J = { t: 'lit'; text: string } | { t: 'str'; v: string; raw?: string; plain?: boolean } | { t: 'arr'; items: J[] } | { t: 'obj'; entries: [J & { t: 'str' }, J][] };

const str = (v: string): J & { t: 'str' } => ({ t: 'str', v });

/** A row's tree; its tag is matched as bytes like a key, so it is escaped only when keys are. */
function rowAst(row: ChunkRow): J & { t: 'obj' } {
  const o = toAst(row) as J & { t: 'obj' };
  for (const e of o.entries) if (e[0].v === 'type' && e[1].t === 'str') e[1].plain = true;
  return o;
}

function toAst(v: unknown): J {
  if (typeof v === 'string') return str(v);
  if (Array.isArray(v)) return { t: 'arr', items: v.map(toAst) };
  if (typeof v === 'object' && v !== null) return { t: 'obj', entries: Object.entries(v).map(([k, x]) => [str(k), toAst(x)]) };
  return { t: 'lit', text: JSON.stringify(v) };
}

/** Small deterministic PRNG (mulberry32), so a fast-check seed picks the noise. */
/** Uniform [0, 1) from a seed: the generator's own PRNG (mulberry32). */
function prng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

interface Noise {
  /** Probability of whitespace at each token gap. */
  ws: number;
  /** Whitespace may include '\n' (only when the line is not a JSONL frame). */
  newline: boolean;
  /** Probability of escaping a character that need not be escaped (values). */
  esc: number;
  /** Escape characters of object keys too. */
  keyEsc: boolean;
  /** Shuffle object entries. */
  shuffle: boolean;
}

function hex4(c: number, rnd: () => number): string {
  const h = c.toString(16).padStart(4, '0');
  return rnd() < 0.5 ? h : h.toUpperCase();
}

/** A JSON string token for `s`, escaping at random but always validly (lone surrogates always escaped). */
function quote(s: string, rnd: () => number, esc: number): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i] as string;
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += rnd() < 0.2 ? '\\u005c' : '\\\\';
    else if (c < 0x20) {
      const short: Record<number, string> = { 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r' };
      out += short[c] !== undefined && rnd() < 0.7 ? short[c] : `\\u${hex4(c, rnd)}`;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff) {
      // A valid pair: raw, or both halves escaped.
      if (rnd() < esc) out += `\\u${hex4(c, rnd)}\\u${hex4(s.charCodeAt(i + 1), rnd)}`;
      else out += s.slice(i, i + 2);
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) out += `\\u${hex4(c, rnd)}`;
    else if (ch === '/' && rnd() < 0.5) out += '\\/';
    else if (rnd() < esc) out += `\\u${hex4(c, rnd)}`;
    else out += ch;
  }
  return out + '"';
}

function serialize(j: J, rnd: () => number, noise: Noise, inKey = false): string {
  const ws = (): string => {
    if (rnd() >= noise.ws) return '';
    const pool = noise.newline ? [' ', '\t', '\r', '\n', '  '] : [' ', '\t', '\r', '  '];
    let s = '';
    const n = 1 + Math.floor(rnd() * 2);
    for (let k = 0; k < n; k++) s += pool[Math.floor(rnd() * pool.length)];
    return s;
  };
  switch (j.t) {
    case 'lit':
      return j.text;
    case 'str':
      return j.raw ?? quote(j.v, rnd, (inKey || j.plain === true) && !noise.keyEsc ? 0 : noise.esc);
    case 'arr':
      return `[${ws()}${j.items.map((x) => serialize(x, rnd, noise)).join(`${ws()},${ws()}`)}${ws()}]`;
    case 'obj': {
      const entries = j.entries.slice();
      if (noise.shuffle) {
        for (let i = entries.length - 1; i > 0; i--) {
          const k = Math.floor(rnd() * (i + 1));
          [entries[i], entries[k]] = [entries[k] as [J & { t: 'str' }, J], entries[i] as [J & { t: 'str' }, J]];
        }
      }
      const body = entries.map(([k, v]) => `${serialize(k, rnd, noise, true)}${ws()}:${ws()}${serialize(v, rnd, noise)}`).join(`${ws()},${ws()}`);
      return `{${ws()}${body}${ws()}}`;
    }
  }
}

const noiseArb: fc.Arbitrary<Noise> = fc.record({
  ws: fc.constantFrom(0, 0.1, 0.5, 1),
  newline: fc.boolean(),
  esc: fc.constantFrom(0, 0, 0.2, 1),
  keyEsc: fc.boolean(),
  shuffle: fc.boolean(),
});

// ---------------------------------------------------------------------------
// Structural mutations.

const NUMBER_SPELLINGS = [
  (n: string) => `${n}.0`,
  (n: string) => `${n}.5`,
  (n: string) => `${n}e0`,
  (n: string) => `${n}E+1`,
  (n: string) => `0${n}`,
  (n: string) => `-${n}`,
  (n: string) => `${n}0`,
  () => '-0',
  () => '00',
  () => '-',
  () => '+1',
  () => '1e400',
  () => '9007199254740991',
  () => '9007199254740992',
  () => '9007199254740993',
  () => '-9007199254740992',
  () => '10000000000000000',
  () => '99999999999999999',
  () => '1.7976931348623157e308',
  () => 'null',
  () => 'true',
  () => '"1"',
  () => '[]',
  () => '{}',
];

const MUTATIONS = [
  'dup-key',
  'extra-key',
  'drop-key',
  'number',
  'dt-longer',
  'dt-shorter',
  'empty-members',
  'member-not-string',
  'type',
  'name-on-text',
  'data-not-object',
  'raw-control',
  'bad-escape',
  'nested',
  'swap-lists',
] as const;
type Mutation = (typeof MUTATIONS)[number];

function objects(j: J, out: (J & { t: 'obj' })[] = []): (J & { t: 'obj' })[] {
  if (j.t === 'obj') {
    out.push(j);
    for (const [, v] of j.entries) objects(v, out);
  } else if (j.t === 'arr') for (const x of j.items) objects(x, out);
  return out;
}
function nodes(j: J, pred: (x: J) => boolean, out: J[] = []): J[] {
  if (pred(j)) out.push(j);
  if (j.t === 'obj') for (const [k, v] of j.entries) (nodes(k, pred, out), nodes(v, pred, out));
  else if (j.t === 'arr') for (const x of j.items) nodes(x, pred, out);
  return out;
}
const pick = <T>(xs: readonly T[], rnd: () => number): T | undefined => xs[Math.floor(rnd() * xs.length)];
const dataOf = (root: J & { t: 'obj' }) => root.entries.find(([k]) => k.v === 'data')?.[1];
function listOf(root: J & { t: 'obj' }, names: string[]): (J & { t: 'arr' }) | undefined {
  const d = dataOf(root);
  if (d?.t !== 'obj') return undefined;
  const e = d.entries.find(([k]) => names.includes(k.v))?.[1];
  return e?.t === 'arr' ? e : undefined;
}

function mutate(root: J & { t: 'obj' }, m: Mutation, rnd: () => number): void {
  const objs = objects(root);
  switch (m) {
    case 'dup-key': {
      const o = pick(objs, rnd);
      const e = o && pick(o.entries, rnd);
      if (o && e) o.entries.splice(Math.floor(rnd() * (o.entries.length + 1)), 0, [str(e[0].v), rnd() < 0.5 ? e[1] : { t: 'lit', text: '7' }]);
      break;
    }
    case 'extra-key': {
      const o = pick(objs, rnd);
      const key = pick(['x', 'ignorable', 'seq', 'time', 'chunk', 'Type', 'type ', 'dt2', 'text', 'name', 'id'], rnd) as string;
      o?.entries.splice(Math.floor(rnd() * (o.entries.length + 1)), 0, [str(key), rnd() < 0.5 ? { t: 'lit', text: '1' } : str('v')]);
      break;
    }
    case 'drop-key': {
      const o = pick(objs, rnd);
      if (o && o.entries.length > 0) o.entries.splice(Math.floor(rnd() * o.entries.length), 1);
      break;
    }
    case 'number': {
      const lit = pick(nodes(root, (x) => x.t === 'lit'), rnd);
      if (lit && lit.t === 'lit') lit.text = (pick(NUMBER_SPELLINGS, rnd) as (n: string) => string)(lit.text.replace(/^-/, ''));
      break;
    }
    case 'dt-longer': {
      const dt = listOf(root, ['dt']);
      dt?.items.splice(Math.floor(rnd() * (dt.items.length + 1)), 0, { t: 'lit', text: String(Math.floor(rnd() * 10)) });
      break;
    }
    case 'dt-shorter': {
      const dt = listOf(root, ['dt']);
      if (dt && dt.items.length > 0) dt.items.splice(Math.floor(rnd() * dt.items.length), 1);
      else {
        const ms = listOf(root, ['texts', 'args']);
        ms?.items.push(str('extra'));
      }
      break;
    }
    case 'empty-members': {
      const ms = listOf(root, ['texts', 'args']);
      const dt = listOf(root, ['dt']);
      if (ms) ms.items = [];
      if (dt && rnd() < 0.5) dt.items = [];
      break;
    }
    case 'member-not-string': {
      const ms = listOf(root, ['texts', 'args']);
      if (ms && ms.items.length > 0) ms.items[Math.floor(rnd() * ms.items.length)] = pick<J>([{ t: 'lit', text: '1' }, { t: 'lit', text: 'null' }, { t: 'arr', items: [] }, { t: 'obj', entries: [] }, { t: 'arr', items: [str('a')] }], rnd) as J;
      break;
    }
    case 'type': {
      const e = root.entries.find(([k]) => k.v === 'type');
      if (e) e[1] = str(pick(['text-chunks', 'reasoning-chunks', 'tool-call-chunks', 'assistant/chunk', 'text-chunk', 'Text-chunks', 'text-chunks ', ''], rnd) as string);
      if (e && rnd() < 0.2) e[1] = { t: 'lit', text: pick(['1', 'null', '["text-chunks"]'], rnd) as string };
      break;
    }
    case 'name-on-text': {
      const d = dataOf(root);
      if (d?.t === 'obj') d.entries.splice(Math.floor(rnd() * (d.entries.length + 1)), 0, [str(rnd() < 0.5 ? 'name' : 'id'), rnd() < 0.8 ? str('n') : { t: 'lit', text: '1' }]);
      break;
    }
    case 'data-not-object': {
      const e = root.entries.find(([k]) => k.v === 'data');
      if (e) e[1] = pick<J>([{ t: 'lit', text: 'null' }, { t: 'arr', items: [] }, str('x'), { t: 'obj', entries: [] }, { t: 'lit', text: '1' }], rnd) as J;
      break;
    }
    case 'raw-control': {
      const s = pick(nodes(root, (x) => x.t === 'str'), rnd);
      if (s && s.t === 'str') {
        const c = pick(['\u0000', '\u0001', '\n', '\t', '\r', '\u001f'], rnd) as string;
        const body = JSON.stringify(s.v).slice(1, -1);
        const at = Math.floor(rnd() * (body.length + 1));
        s.raw = `"${body.slice(0, at)}${c}${body.slice(at)}"`;
      }
      break;
    }
    case 'bad-escape': {
      const s = pick(nodes(root, (x) => x.t === 'str'), rnd);
      if (s && s.t === 'str') {
        const bad = pick(['\\x', '\\u12', '\\u12g4', '\\U0041', '\\', '\\ ', '\\a', '\\0', '\\\n'], rnd) as string;
        const body = JSON.stringify(s.v).slice(1, -1);
        s.raw = `"${body}${bad}"`;
      }
      break;
    }
    case 'nested': {
      const ms = listOf(root, ['texts', 'args', 'dt']);
      if (ms) ms.items = [{ t: 'arr', items: ms.items }];
      break;
    }
    case 'swap-lists': {
      const d = dataOf(root);
      if (d?.t === 'obj') {
        const a = d.entries.find(([k]) => k.v === 'dt');
        const b = d.entries.find(([k]) => k.v === 'texts' || k.v === 'args');
        if (a && b) [a[1], b[1]] = [b[1], a[1]];
      }
      break;
    }
  }
}

// ---------------------------------------------------------------------------
// Byte mutations.

const INSERTS = ['"', '\\', ',', ':', '{', '}', '[', ']', ' ', '0', '1', '-', '.', 'e', '\u0001', '\n', 'é', '"x":1,', ',1', '""', 'null', '\\u0041', '\xff'];

function mutateBytes(buf: Buffer, rnd: () => number, times: number): Buffer {
  let b = buf;
  for (let n = 0; n < times; n++) {
    const at = Math.floor(rnd() * (b.length + 1));
    const r = rnd();
    if (r < 0.3 && b.length > 0) {
      const copy = Buffer.from(b);
      const pos = Math.min(at, b.length - 1);
      copy[pos] = rnd() < 0.5 ? Math.floor(rnd() * 256) : (INSERTS[Math.floor(rnd() * INSERTS.length)] as string).charCodeAt(0) & 0xff;
      b = copy;
    } else if (r < 0.55) {
      const len = 1 + Math.floor(rnd() * 4);
      b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + len))]);
    } else if (r < 0.85) {
      b = Buffer.concat([b.subarray(0, at), Buffer.from(INSERTS[Math.floor(rnd() * INSERTS.length)] as string, rnd() < 0.9 ? 'utf8' : 'latin1'), b.subarray(at)]);
    } else {
      b = b.subarray(0, at);
    }
  }
  return b;
}

// ---------------------------------------------------------------------------
// The oracle and the agreement check.

/** The slow path: the parsed, validated row, or null when either step rejects the line. */
function slow(text: string): ChunkRow | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  try {
    return validateRow(v);
  } catch {
    return null;
  }
}

/** `line` inside a larger buffer: adversarial bytes before and after, at a non-zero byteOffset. */
function embed(line: Buffer, before: string, after: string): { buf: Uint8Array; start: number; end: number } {
  const pre = Buffer.from(before, 'latin1');
  const post = Buffer.from(after, 'latin1');
  const whole = Buffer.alloc(3 + pre.length + line.length + post.length);
  pre.copy(whole, 3);
  line.copy(whole, 3 + pre.length);
  post.copy(whole, 3 + pre.length + line.length);
  const buf = new Uint8Array(whole.buffer, whole.byteOffset + 3, whole.length - 3);
  return { buf, start: pre.length, end: pre.length + line.length };
}

const text = (b: Uint8Array, s: number, e: number): string => Buffer.from(b.buffer, b.byteOffset + s, e - s).toString('utf8');
const listText = (b: Uint8Array, s: number, e: number): unknown => JSON.parse(`[${text(b, s, e)}]`);

function agree(r: RawRow, row: ChunkRow, buf: Uint8Array, start: number, end: number): void {
  const members = rowMembers(row);
  const dt = row.data.dt;
  expect(r.key).toStrictEqual(rowKey(row));
  expect(Object.is(r.seq0, row.seq0), 'seq0').toBe(true);
  expect(Object.is(r.time0, row.time0), 'time0').toBe(true);
  expect(r.n).toBe(members.length);
  expect(r.buf).toBe(buf);
  const exact = dt.reduce((s, g) => s + BigInt(g), 0n);
  expect(Number.isSafeInteger(r.dtSum)).toBe(true);
  expect(BigInt(r.dtSum)).toBe(exact);
  // The byte ranges are JSON list contents equal to the row's lists.
  expect(start <= r.dtStart && r.dtStart <= r.dtEnd && r.dtEnd <= end, 'dt range inside the line').toBe(true);
  expect(start <= r.membersStart && r.membersStart < r.membersEnd && r.membersEnd <= end, 'member range inside the line').toBe(true);
  expect(listText(buf, r.dtStart, r.dtEnd)).toStrictEqual(dt);
  expect(listText(buf, r.membersStart, r.membersEnd)).toStrictEqual(members);
  // Rows cut at page edges.
  expect(rowGaps(r)).toStrictEqual(dt);
  const { starts, ends } = rowMemberBounds(r);
  expect(starts.length).toBe(members.length);
  expect(ends.length).toBe(members.length);
  for (let k = 0; k < members.length; k++) {
    expect(r.membersStart <= (starts[k] as number) && (starts[k] as number) < (ends[k] as number) && (ends[k] as number) <= r.membersEnd).toBe(true);
    expect(JSON.parse(text(buf, starts[k] as number, ends[k] as number))).toBe(members[k]);
  }
  // Any contiguous cut [a, b) is a valid list of exactly those members.
  for (let a = 0; a < members.length; a++) {
    const b = members.length - (a % 2);
    if (b <= a) continue;
    expect(listText(buf, starts[a] as number, ends[b - 1] as number)).toStrictEqual(members.slice(a, b));
  }
}

/** The property: a non-null scan implies the slow path accepts the line and agrees. */
function check(line: Buffer, before = '', after = ''): RawRow | null {
  const { buf, start, end } = embed(line, before, after);
  const r = scanJsonlRow(buf, start, end);
  if (r === null) return null;
  const row = slow(text(buf, start, end));
  expect(row, `scanner accepted a line the slow path rejects: ${JSON.stringify(line.toString('latin1'))}`).not.toBeNull();
  try {
    agree(r, row as ChunkRow, buf, start, end);
  } catch (err) {
    (err as Error).message += ` (line ${JSON.stringify(line.toString('latin1'))})`;
    throw err;
  }
  return r;
}

const surroundArb = fc.constantFrom('', ' ', '}', ']', '"', ',', '0', '.5', 'e1', '}}', '"]}}', '\n{', ' }', ',"x":1}', '\\');

/** All prefix sums of the gaps are safe integers (the scanner's own bound on the gap list). */
function gapPrefixesSafe(row: ChunkRow): boolean {
  let s = 0;
  for (const g of row.data.dt) {
    s += g;
    if (!Number.isSafeInteger(s)) return false;
  }
  return true;
}

describe('scanJsonlRow', () => {
  it('accepts canonical rows (JSON.stringify) and agrees with validateRow(JSON.parse)', () => {
    fc.assert(
      fc.property(rowArb, surroundArb, surroundArb, (row, before, after) => {
        expect(() => validateRow(JSON.parse(JSON.stringify(row)))).not.toThrow();
        const r = check(Buffer.from(JSON.stringify(row), 'utf8'), before, after);
        // Declining is always safe, but canonical rows are the fast path's whole point.
        if (gapPrefixesSafe(row)) expect(r).not.toBeNull();
      }),
      RUNS,
    );
  });

  it('never accepts a canonically written row whose last seq or member times are not safe integers', () => {
    fc.assert(
      fc.property(looseRowArb, surroundArb, (row, after) => {
        check(Buffer.from(JSON.stringify(row), 'utf8'), '', after);
      }),
      { numRuns: 5000 },
    );
  });

  it('agrees on rows written with whitespace, reordered keys and escapes', () => {
    fc.assert(
      fc.property(rowArb, noiseArb, fc.integer(), surroundArb, (row, noise, seed, after) => {
        const line = serialize(rowAst(row), prng(seed), noise);
        expect(slow(line)).toStrictEqual(row);
        const r = check(Buffer.from(line, 'utf8'), '', after);
        // Whitespace and escapes in values only: still a row the scanner must take.
        if (!noise.shuffle && !noise.keyEsc && gapPrefixesSafe(row)) expect(r).not.toBeNull();
      }),
      RUNS,
    );
  });

  it('never accepts a structurally mutated line the slow path rejects, and agrees otherwise', () => {
    fc.assert(
      fc.property(rowArb, fc.array(fc.constantFrom(...MUTATIONS), { minLength: 1, maxLength: 3 }), noiseArb, fc.integer(), surroundArb, (row, ms, noise, seed, after) => {
        const rnd = prng(seed);
        const ast = rowAst(row);
        for (const m of ms) mutate(ast, m, rnd);
        check(Buffer.from(serialize(ast, rnd, noise), 'utf8'), '', after);
      }),
      { numRuns: 5000 },
    );
  });

  it('never accepts a byte-mutated line the slow path rejects, and agrees otherwise', () => {
    fc.assert(
      fc.property(rowArb, noiseArb, fc.integer(), fc.integer({ min: 1, max: 4 }), surroundArb, surroundArb, (row, noise, seed, times, before, after) => {
        const rnd = prng(seed);
        const line = Buffer.from(serialize(rowAst(row), rnd, { ...noise, shuffle: false, keyEsc: false }), 'utf8');
        check(mutateBytes(line, rnd, times), before, after);
      }),
      { numRuns: 5000 },
    );
  });

  it('agrees on non-row lines and junk', () => {
    const lines = [
      '',
      ' ',
      '{}',
      '[]',
      'null',
      '{"type":"assistant/chunk","seq":1,"time":2,"data":{"turn":0,"step":0,"chunk":{"type":"text-delta","index":0,"text":"x"}}}',
      '{"type":"text-chunks"}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{}}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"texts":["a"]}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"texts":["a"]}}}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"texts":["a"]},}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"texts":["a",]}}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[,],"texts":["a"]}}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[1 2],"texts":["a","b","c"]}}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[1,2],"texts":["a" "b","c"]}}',
      '{"type":"text-chunks" "seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"texts":["a"]}}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"texts":["a"]}} x',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"texts":["a"]}}\u0000',
      '\ufeff{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"texts":["a"]}}',
      '{"type":"text-chunks","seq0":-1,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"texts":["a"]}}',
      '{"type":"text-chunks","seq0":9007199254740991,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[0],"texts":["a","b"]}}',
      '{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"args":["a"]}}',
      '{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"id":1,"dt":[],"args":["a"]}}',
      '{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"id":"c","name":null,"dt":[],"args":["a"]}}',
      '{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"id":"c","dt":[],"texts":["a"]}}',
      '{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":0,"step":0,"index":0,"dt":[],"args":["a"]}}',
    ];
    for (const l of lines) for (const after of ['', '}', '\n', ']}}']) check(Buffer.from(l, 'utf8'), '', after);
  });

  it('declines a row whose member times leave the safe range though the gaps sum to little', () => {
    // time0 + dt[0] = 2^53 is not safe; dtSum is 0, so a check of the sum alone misses it.
    const line = '{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":0,"step":0,"index":0,"dt":[9007199254740991,-9007199254740991],"texts":["a","b","c"]}}';
    expect(slow(line)).toBeNull();
    expect(check(Buffer.from(line))).toBeNull();
    const neg = '{"type":"text-chunks","seq0":0,"time0":-1,"data":{"turn":0,"step":0,"index":0,"dt":[-9007199254740991,9007199254740991],"texts":["a","b","c"]}}';
    expect(slow(neg)).toBeNull();
    expect(check(Buffer.from(neg))).toBeNull();
  });

  it('declines a "-0" gap (valid, but its bytes would reach the page; canonical is 0)', () => {
    const line = '{"type":"text-chunks","seq0":0,"time0":5,"data":{"turn":0,"step":0,"index":0,"dt":[-0,1],"texts":["a","b","c"]}}';
    expect(slow(line)).not.toBeNull();
    expect(check(Buffer.from(line))).toBeNull();
    expect(check(Buffer.from(line.replace('-0', '0')))).not.toBeNull();
  });
});

describe('decodeString', () => {
  it('decodes any JSON string token as JSON.parse does, in a Buffer or a plain Uint8Array', () => {
    const tokens = fc.oneof(
      fc.string().map((s) => JSON.stringify(s)),
      fc.string({ unit: 'grapheme' }).map((s) => JSON.stringify(s)),
      fc.string({ unit: 'binary' }).map((s) => JSON.stringify(s)),
      // Escapes JSON.stringify never writes, printable ASCII between.
      fc.array(fc.constantFrom('a', 'Z', '~', ' ', '\\/', '\\u0041', '\\u00e9', '\\"', '\\\\', '\\n')).map((parts) => `"${parts.join('')}"`),
    );
    fc.assert(
      fc.property(tokens, (token) => {
        const buf = Buffer.from(`xy${token}z`);
        const end = 2 + Buffer.byteLength(token);
        expect(decodeString(buf, 2, end)).toBe(JSON.parse(token));
        expect(decodeString(new Uint8Array(buf), 2, end)).toBe(JSON.parse(token));
      }),
      { numRuns: 500 },
    );
  });
});
