/**
 * Fast path for JSONL packed-row frames: scan the line's bytes and validate
 * the row without building a JS value per member. The member list and the
 * gap list stay byte ranges of the frame (valid JSON), so the page path can
 * copy them into the response untouched. A 400k-delta run then costs one
 * byte scan, not 400k string allocations.
 *
 * The scanner accepts only what it fully understands (the row shape of SPEC
 * section 2, integers without fraction or exponent, no duplicate keys) and
 * returns null for anything else; callers then decode the frame the slow way
 * (JSON.parse + validateRow), which also produces the precise error message.
 */
import type { RunKey } from '../main/core/chunk-codec.js';

export interface RawRow {
  key: RunKey;
  seq0: number;
  time0: number;
  /** Number of members. */
  n: number;
  /** Sum of all gaps: the last member's time is time0 + dtSum. */
  dtSum: number;
  /** The frame's bytes. */
  buf: Uint8Array;
  /** [start, end) of the gaps inside `[...]`, from the first to the last token (empty when n = 1). */
  dtStart: number;
  dtEnd: number;
  /** [start, end) of the member tokens inside `[...]`, from the first to the last token. */
  membersStart: number;
  membersEnd: number;
}

const Q = 0x22;
const BS = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACK = 0x5b;
const RBRACK = 0x5d;

const KIND: Record<string, RunKey['kind']> = { 'text-chunks': 'text', 'reasoning-chunks': 'reasoning', 'tool-call-chunks': 'tool' };

// Key ids, matched on bytes so no key string is ever built.
const K_TYPE = 1;
const K_SEQ0 = 2;
const K_TIME0 = 3;
const K_DATA = 4;
const K_TURN = 5;
const K_STEP = 6;
const K_INDEX = 7;
const K_ID = 8;
const K_NAME = 9;
const K_DT = 10;
const K_TEXTS = 11;
const K_ARGS = 12;
const KEYS: [number, Buffer][] = [
  [K_TYPE, Buffer.from('"type"')],
  [K_SEQ0, Buffer.from('"seq0"')],
  [K_TIME0, Buffer.from('"time0"')],
  [K_DATA, Buffer.from('"data"')],
  [K_TURN, Buffer.from('"turn"')],
  [K_STEP, Buffer.from('"step"')],
  [K_INDEX, Buffer.from('"index"')],
  [K_ID, Buffer.from('"id"')],
  [K_NAME, Buffer.from('"name"')],
  [K_DT, Buffer.from('"dt"')],
  [K_TEXTS, Buffer.from('"texts"')],
  [K_ARGS, Buffer.from('"args"')],
];

const ROW_TYPES: [RunKey['kind'], Buffer][] = [
  ['text', Buffer.from('"text-chunks"')],
  ['reasoning', Buffer.from('"reasoning-chunks"')],
  ['tool', Buffer.from('"tool-call-chunks"')],
];

export function isWs(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/**
 * End of the JSON string token starting at b[j] (a quote): index just past
 * the closing quote, or -1 when the token is not valid JSON. The hot loop of
 * the page path: one compare per byte for plain text.
 */
/** Byte classes inside a JSON string: 0 plain, 1 quote, 2 backslash, 3 control (invalid raw). */
const STRING_CLASS = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) STRING_CLASS[c] = 3;
STRING_CLASS[Q] = 1;
STRING_CLASS[BS] = 2;

export function stringEnd(b: Uint8Array, j: number, end: number): number {
  if (b[j] !== Q) return -1;
  j++;
  for (;;) {
    // The hot loop of the page path: one table lookup per plain byte.
    while (j < end && STRING_CLASS[b[j] as number] === 0) j++;
    if (j >= end) return -1;
    const cls = STRING_CLASS[b[j] as number];
    if (cls === 1) return j + 1;
    if (cls === 3) return -1;
    const e = b[j + 1];
    if (e === 0x75) {
      for (let k = 2; k < 6; k++) {
        const h = b[j + k] as number;
        if (!((h >= 0x30 && h <= 0x39) || (h >= 0x41 && h <= 0x46) || (h >= 0x61 && h <= 0x66))) return -1;
      }
      j += 6;
      continue;
    }
    if (e === Q || e === BS || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
      j += 2;
      continue;
    }
    return -1;
  }
}

/** Result of the list scanners (module-level so the hot loops stay free of closures). */
const list = { count: 0, sum: 0, abs: 0, start: 0, stop: 0 };

/** Parse an integer at b[i] into intOut; returns the index after it or -1. */
let intOut = 0;
/** The value of the last integer scanInt parsed. */
export function lastInt(): number {
  return intOut;
}

export function scanInt(b: Uint8Array, i: number, end: number): number {
  let neg = false;
  if (b[i] === 0x2d) {
    neg = true;
    i++;
  }
  const first = i;
  let v = 0;
  while (i < end) {
    const d = b[i] as number;
    if (d < 0x30 || d > 0x39) break;
    v = v * 10 + (d - 0x30);
    i++;
  }
  const digits = i - first;
  if (digits === 0 || digits > 16 || (digits > 1 && b[first] === 0x30)) return -1;
  const d = b[i];
  if (d === 0x2e || d === 0x65 || d === 0x45 || !Number.isSafeInteger(v)) return -1;
  intOut = neg ? -v : v;
  return i;
}

/** The gaps array at b[i] ('['): count, sum and the [start, stop) of its tokens into `list`. */
function scanGaps(b: Uint8Array, i: number, end: number): number {
  if (b[i] !== LBRACK) return -1;
  i++;
  while (i < end && isWs(b[i] as number)) i++;
  let count = 0;
  let sum = 0;
  let abs = 0;
  const start = i;
  let stop = i;
  if (b[i] === RBRACK) i++;
  else {
    for (;;) {
      i = scanInt(b, i, end);
      // A "-0" gap is valid JSON but its bytes would reach the page as they are; canonical is 0.
      if (i < 0 || (intOut === 0 && 1 / intOut < 0)) return -1;
      count++;
      sum += intOut;
      abs += intOut < 0 ? -intOut : intOut;
      if (!Number.isSafeInteger(sum)) return -1;
      stop = i;
      let d = b[i++];
      if (d !== COMMA && d !== RBRACK) {
        i--;
        while (i < end && isWs(b[i] as number)) i++;
        d = b[i++];
      }
      if (d === RBRACK) break;
      if (d !== COMMA) return -1;
      while (i < end && isWs(b[i] as number)) i++;
    }
  }
  list.count = count;
  list.sum = sum;
  list.abs = abs;
  list.start = start;
  list.stop = stop;
  return i;
}

/** The member array at b[i] ('['): count and the [start, stop) of its tokens into `list`. */
function scanMembers(b: Uint8Array, i: number, end: number): number {
  if (b[i] !== LBRACK) return -1;
  i++;
  while (i < end && isWs(b[i] as number)) i++;
  let count = 0;
  const start = i;
  let stop = i;
  if (b[i] === RBRACK) i++;
  else {
    for (;;) {
      i = stringEnd(b, i, end);
      if (i < 0) return -1;
      count++;
      stop = i;
      let d = b[i++];
      if (d !== COMMA && d !== RBRACK) {
        i--;
        while (i < end && isWs(b[i] as number)) i++;
        d = b[i++];
      }
      if (d === RBRACK) break;
      if (d !== COMMA) return -1;
      while (i < end && isWs(b[i] as number)) i++;
    }
  }
  list.count = count;
  list.start = start;
  list.stop = stop;
  return i;
}

function keyId(b: Uint8Array, start: number, stop: number): number {
  const len = stop - start;
  for (let q = 0; q < KEYS.length; q++) {
    const [kid, kb] = KEYS[q] as [number, Buffer];
    if (kb.length !== len) continue;
    let k = 1;
    while (k < len && b[start + k] === kb[k]) k++;
    if (k === len) return kid;
  }
  return 0;
}

const latin1Slice = Buffer.prototype.latin1Slice as (this: Uint8Array, start: number, end: number) => string;

/**
 * The JSON string token b[start, stop) (quotes included, already scanned
 * valid). A token of printable ASCII without escapes, as tool ids and names
 * are, is its bytes: read without JSON.parse (a quarter of the cost).
 */
export function decodeString(b: Uint8Array, start: number, stop: number): string {
  for (let i = start + 1; i < stop - 1; i++) {
    const c = b[i] as number;
    if (c >= 0x7f || c < 0x20 || c === 0x5c) return JSON.parse(Buffer.from(b.buffer, b.byteOffset + start, stop - start).toString('utf8')) as string;
  }
  return latin1Slice.call(b, start + 1, stop - 1);
}

/**
 * Scan the JSONL frame `b[start, end)` (end excludes the newline) as a
 * packed row. Null when it is not a row this scanner fully validates.
 * One function with local state: this is the page path's inner loop.
 */
export function scanJsonlRow(b: Uint8Array, start: number, end: number, trusted = false): RawRow | null {
  let i = start;
  while (i < end && isWs(b[i] as number)) i++;
  if (b[i] !== LBRACE) return null;
  i++;
  while (i < end && isWs(b[i] as number)) i++;
  // "type" must come first on the fast path (every writer of this format puts it there).
  let j = stringEnd(b, i, end);
  if (j < 0 || keyId(b, i, j) !== K_TYPE) return null;
  i = j;
  while (i < end && isWs(b[i] as number)) i++;
  if (b[i] !== COLON) return null;
  i++;
  while (i < end && isWs(b[i] as number)) i++;
  j = stringEnd(b, i, end);
  if (j < 0) return null;
  let kind: RunKey['kind'] | undefined;
  for (const [k, tb] of ROW_TYPES) {
    if (tb.length !== j - i) continue;
    let m = 1;
    while (m < tb.length && b[i + m] === tb[m]) m++;
    if (m === tb.length) kind = k;
  }
  if (kind === undefined) return null;
  const tool = kind === 'tool';
  i = j;

  const f = fields;
  f.seq0 = -1;
  f.time0 = 0;
  f.turn = 0;
  f.step = 0;
  f.index = 0;
  f.id = undefined;
  f.name = undefined;
  f.n = 0;
  f.dtCount = 0;
  f.dtSum = 0;
  f.dtAbs = 0;
  f.dtStart = 0;
  f.dtEnd = 0;
  f.membersStart = 0;
  f.membersEnd = 0;
  f.dtSeen = false;
  f.trusted = trusted;
  let seen = 0;
  // depth 0: the row object; 1: its data object. needComma is false right after '{' of data.
  let depth = 0;
  let needComma = true;
  for (;;) {
    while (i < end && isWs(b[i] as number)) i++;
    const c = b[i];
    if (c === RBRACE) {
      if (!needComma) return null; // empty data object
      i++;
      if (depth === 0) break;
      depth = 0;
      continue;
    }
    if (needComma) {
      if (c !== COMMA) return null;
      i++;
      while (i < end && isWs(b[i] as number)) i++;
    }
    needComma = true;
    j = stringEnd(b, i, end);
    if (j < 0) return null;
    const kid = keyId(b, i, j);
    if (kid === 0 || kid === K_TYPE || (depth === 0) !== (kid <= K_DATA)) return null;
    const bit = 1 << kid;
    if (seen & bit) return null;
    seen |= bit;
    i = j;
    while (i < end && isWs(b[i] as number)) i++;
    if (b[i] !== COLON) return null;
    i++;
    while (i < end && isWs(b[i] as number)) i++;
    if (kid === K_DATA) {
      if (b[i] !== LBRACE) return null;
      i++;
      depth = 1;
      needComma = false;
      continue;
    }
    if (depth === 0) {
      i = scanInt(b, i, end);
      if (i < 0) return null;
      if (kid === K_SEQ0) f.seq0 = intOut;
      else f.time0 = intOut;
      continue;
    }
    i = dataValue(b, i, end, kid, tool);
    if (i < 0) return null;
  }

  while (i < end && isWs(b[i] as number)) i++;
  if (i !== end) return null;
  const need = (1 << K_SEQ0) | (1 << K_TIME0) | (1 << K_DATA) | (1 << K_TURN) | (1 << K_STEP) | (1 << K_INDEX) | (1 << K_DT) | (tool ? (1 << K_ID) | (1 << K_ARGS) : 1 << K_TEXTS);
  if ((seen & need) !== need || (!tool && (seen & ((1 << K_ID) | (1 << K_NAME))) !== 0)) return null;
  const { seq0, time0, n, dtSum } = f;
  if (seq0 < 0 || n === 0 || f.dtCount !== n - 1 || !Number.isSafeInteger(seq0 + (n - 1))) return null;
  if (!Number.isSafeInteger(time0 + dtSum)) return null;
  // Every member time must be safe too. |time0| + sum of |gaps| bounds them all, so re-check
  // only when that bound is large (|dtSum| is no bound: [2^53-1, -(2^53-1)] sums to 0).
  if (Math.abs(time0) + f.dtAbs > 2 ** 52 && !partialSumsSafe(b, f.dtStart, f.dtEnd, time0)) return null;
  const key: RunKey = { kind, turn: f.turn, step: f.step, index: f.index };
  if (tool) {
    if (f.id === undefined) return null;
    key.id = f.id;
    if (f.name !== undefined) key.name = f.name;
  }
  return { key, seq0, time0, n, dtSum, buf: b, dtStart: f.dtStart, dtEnd: f.dtEnd, membersStart: f.membersStart, membersEnd: f.membersEnd };
}

/**
 * What the row scan has read so far. Module-level, reset per row: nested
 * functions closing over the scan's locals would move them (and the hot
 * index) into a heap context, which costs more than the scan itself.
 */
const fields = {
  seq0: -1,
  time0: 0,
  turn: 0,
  step: 0,
  index: 0,
  id: undefined as string | undefined,
  name: undefined as string | undefined,
  n: 0,
  dtCount: 0,
  dtSum: 0,
  dtAbs: 0,
  dtStart: 0,
  dtEnd: 0,
  membersStart: 0,
  membersEnd: 0,
  dtSeen: false,
  /** The frame matched the writer's CRC: its bytes are JSON.stringify output of a validated row. */
  trusted: false,
};

/** The value of data key `kid` at b[i]; returns the index after it or -1. */
function dataValue(b: Uint8Array, i: number, end: number, kid: number, tool: boolean): number {
  const f = fields;
  switch (kid) {
    case K_TURN:
    case K_STEP:
    case K_INDEX: {
      i = scanInt(b, i, end);
      if (i < 0) return -1;
      if (kid === K_TURN) f.turn = intOut;
      else if (kid === K_STEP) f.step = intOut;
      else f.index = intOut;
      return i;
    }
    case K_ID:
    case K_NAME: {
      if (!tool) return -1;
      const e = stringEnd(b, i, end);
      if (e < 0) return -1;
      const v = decodeString(b, i, e);
      if (kid === K_ID) f.id = v;
      else f.name = v;
      return e;
    }
    case K_DT: {
      i = scanGaps(b, i, end);
      if (i < 0) return -1;
      f.dtCount = list.count;
      f.dtSum = list.sum;
      f.dtAbs = list.abs;
      f.dtStart = list.start;
      f.dtEnd = list.stop;
      f.dtSeen = true;
      return i;
    }
    case K_TEXTS:
    case K_ARGS: {
      if ((kid === K_ARGS) !== tool) return -1;
      // A trusted frame is the writer's own JSON.stringify output: members come last
      // (after dt), so the list runs to the closing "]}}" and need not be scanned.
      if (f.trusted && f.dtSeen && b[i] === LBRACK && b[end - 3] === RBRACK && b[end - 2] === RBRACE && b[end - 1] === RBRACE) {
        f.n = f.dtCount + 1;
        f.membersStart = i + 1;
        f.membersEnd = end - 3;
        return end - 2;
      }
      i = scanMembers(b, i, end);
      if (i < 0) return -1;
      f.n = list.count;
      f.membersStart = list.start;
      f.membersEnd = list.stop;
      return i;
    }
    default:
      return -1;
  }
}

/** Every running sum time0 + g1 + … of the gaps in buf[from, to) is a safe integer. */
export function partialSumsSafe(buf: Uint8Array, from: number, to: number, time0: number): boolean {
  let t = time0;
  for (const g of rowGaps({ buf, dtStart: from, dtEnd: to } as RawRow)) {
    t += g;
    if (!Number.isSafeInteger(t)) return false;
  }
  return true;
}

/** The gaps of a scanned row as numbers (for rows cut at a page edge). */
export function rowGaps(row: RawRow): number[] {
  const text = Buffer.from(row.buf.buffer, row.buf.byteOffset + row.dtStart, row.dtEnd - row.dtStart).toString('latin1');
  return text.length === 0 ? [] : (JSON.parse(`[${text}]`) as number[]);
}

/** Byte offsets [start, end) of each member token of a scanned row (for rows cut at a page edge). */
export function rowMemberBounds(row: RawRow): { starts: number[]; ends: number[] } {
  const b = row.buf;
  const end = row.membersEnd;
  let i = row.membersStart;
  const starts: number[] = [];
  const ends: number[] = [];
  for (let k = 0; k < row.n; k++) {
    while (i < end && isWs(b[i] as number)) i++;
    starts.push(i);
    i = stringEnd(b, i, end);
    ends.push(i);
    while (i < end && (isWs(b[i] as number) || b[i] === COMMA)) i++;
  }
  return { starts, ends };
}
