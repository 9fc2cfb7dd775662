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
import type { RunKey } from '../core/chunk-codec.js';
import { COLON, COMMA, decodeString, isWs, lastInt, LBRACE, LBRACK, literal, RBRACE, RBRACK, same, scanInt, skipWs, stringEnd, type Literal } from '../core/json-bytes.js';

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
const KEYS: [number, Literal][] = [
  [K_TYPE, literal('"type"')],
  [K_SEQ0, literal('"seq0"')],
  [K_TIME0, literal('"time0"')],
  [K_DATA, literal('"data"')],
  [K_TURN, literal('"turn"')],
  [K_STEP, literal('"step"')],
  [K_INDEX, literal('"index"')],
  [K_ID, literal('"id"')],
  [K_NAME, literal('"name"')],
  [K_DT, literal('"dt"')],
  [K_TEXTS, literal('"texts"')],
  [K_ARGS, literal('"args"')],
];

const ROW_TYPES: [RunKey['kind'], Literal][] = [
  ['text', literal('"text-chunks"')],
  ['reasoning', literal('"reasoning-chunks"')],
  ['tool', literal('"tool-call-chunks"')],
];

/** Result of the list scanners (module-level so the hot loops stay free of closures). */
const list = { count: 0, sum: 0, abs: 0, start: 0, stop: 0 };

/** The gaps array at b[i] ('['): count, sum and the [start, stop) of its tokens into `list`. */
function scanGaps(b: Uint8Array, i: number, end: number): number {
  if (b[i] !== LBRACK) return -1;
  i++;
  i = skipWs(b, i, end);
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
      const g = lastInt();
      if (i < 0 || (g === 0 && 1 / g < 0)) return -1;
      count++;
      sum += g;
      abs += g < 0 ? -g : g;
      if (!Number.isSafeInteger(sum)) return -1;
      stop = i;
      let d = b[i++];
      if (d !== COMMA && d !== RBRACK) {
        i--;
        i = skipWs(b, i, end);
        d = b[i++];
      }
      if (d === RBRACK) break;
      if (d !== COMMA) return -1;
      i = skipWs(b, i, end);
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
  i = skipWs(b, i, end);
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
        i = skipWs(b, i, end);
        d = b[i++];
      }
      if (d === RBRACK) break;
      if (d !== COMMA) return -1;
      i = skipWs(b, i, end);
    }
  }
  list.count = count;
  list.start = start;
  list.stop = stop;
  return i;
}

function keyId(b: Uint8Array, start: number, stop: number): number {
  for (let q = 0; q < KEYS.length; q++) {
    const [kid, kb] = KEYS[q] as [number, Literal];
    if (same(b, start, stop, kb)) return kid;
  }
  return 0;
}

/**
 * Scan the JSONL frame `b[start, end)` (end excludes the newline) as a
 * packed row. Null when it is not a row this scanner fully validates.
 * One function with local state: this is the page path's inner loop.
 */
export function scanJsonlRow(b: Uint8Array, start: number, end: number, trusted = false): RawRow | null {
  let i = start;
  i = skipWs(b, i, end);
  if (b[i] !== LBRACE) return null;
  i++;
  i = skipWs(b, i, end);
  // "type" must come first on the fast path (every writer of this format puts it there).
  let j = stringEnd(b, i, end);
  if (j < 0 || keyId(b, i, j) !== K_TYPE) return null;
  i = j;
  i = skipWs(b, i, end);
  if (b[i] !== COLON) return null;
  i++;
  i = skipWs(b, i, end);
  j = stringEnd(b, i, end);
  if (j < 0) return null;
  let kind: RunKey['kind'] | undefined;
  for (const [k, tb] of ROW_TYPES) if (same(b, i, j, tb)) kind = k;
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
    i = skipWs(b, i, end);
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
      i = skipWs(b, i, end);
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
    i = skipWs(b, i, end);
    if (b[i] !== COLON) return null;
    i++;
    i = skipWs(b, i, end);
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
      if (kid === K_SEQ0) f.seq0 = lastInt();
      else f.time0 = lastInt();
      continue;
    }
    i = dataValue(b, i, end, kid, tool);
    if (i < 0) return null;
  }

  i = skipWs(b, i, end);
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
      if (kid === K_TURN) f.turn = lastInt();
      else if (kid === K_STEP) f.step = lastInt();
      else f.index = lastInt();
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
    i = skipWs(b, i, end);
    starts.push(i);
    i = stringEnd(b, i, end);
    ends.push(i);
    while (i < end && (isWs(b[i] as number) || b[i] === COMMA)) i++;
  }
  return { starts, ends };
}
