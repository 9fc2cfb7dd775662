/**
 * A packed row in the writer's own MessagePack layout, read without
 * building it, pure: the binary counterpart of trusted-frame-scanner.ts's
 * row walk. The writer packs runToRow's object with msgpackr, so the bytes
 * of a row it wrote are, key for key:
 *
 *   {type: "<kind>-chunks", seq0, time0, data: {turn, step, index,
 *    [id, [name,]] dt: [...], texts | args: [...]}}
 *
 * and a tool call's row may also have its id and name after its gaps
 * (`dt, id, [name,] args`): the order dsh writes, which an import keeps.
 *
 * with keys as fixstrs, integers in whichever width msgpackr picked (a
 * float64 past 32 bits: msgpackr writes large integers so) and members as
 * strings. Reading one checks those literals and reads the integers, walks
 * the gaps (their sum) and the member headers (their count), and leaves
 * the members where they are: the caller writes their JSON straight into
 * the page (writeRowGaps, writeRowMembers), one pass over their bytes.
 *
 * Only for frames that match the writer's checksum record (a validated
 * record the writer packed): what this does not recognize exactly it
 * declines (false), and the frame is read the general way.
 */
import type { RunKey } from '../core/chunk-codec.js';
import { escapeBits, writeEscaped, writeInt } from './msgpack-json.js';
import { DataViewCache } from './data-view-cache.js';

/** One key or value literal as msgpackr packs it (fixstr header and bytes). */
function fixstr(s: string): Uint8Array {
  const b = Buffer.from(s, 'utf8');
  return Uint8Array.from([0xa0 | b.length, ...b]);
}

const TYPE = fixstr('type');
const TEXT = fixstr('text-chunks');
const REASONING = fixstr('reasoning-chunks');
const TOOL = fixstr('tool-call-chunks');
const SEQ0 = fixstr('seq0');
const TIME0 = fixstr('time0');
const DATA = fixstr('data');
const TURN = fixstr('turn');
const STEP = fixstr('step');
const INDEX = fixstr('index');
const ID = fixstr('id');
const NAME = fixstr('name');
const DT = fixstr('dt');
const TEXTS = fixstr('texts');
const ARGS = fixstr('args');

function has(b: Uint8Array, i: number, lit: Uint8Array): boolean {
  const n = lit.length;
  for (let k = 0; k < n; k++) if (b[i + k] !== lit[k]) return false;
  return true;
}

/** Over the payload being read (the helpers below read from it). */
const payloadViews = new DataViewCache();
let dv: DataView = payloadViews.over(new Uint8Array(8));

/** The integer read by int(): value, and where it ended. */
let num = 0;
let numEnd = 0;

/** A MessagePack integer at b[i] (any width; a float64 holding a safe integer, as msgpackr writes those): false when it is none. */
function int(b: Uint8Array, i: number, end: number): boolean {
  const t = b[i] as number;
  if (t <= 0x7f || t >= 0xe0) {
    num = t <= 0x7f ? t : t - 0x100;
    numEnd = i + 1;
    return true;
  }
  const n = t === 0xcc || t === 0xd0 ? 1 : t === 0xcd || t === 0xd1 ? 2 : t === 0xce || t === 0xd2 ? 4 : t === 0xcb ? 8 : 0;
  if (n === 0 || i + 1 + n > end) return false;
  const v = t === 0xcc ? (b[i + 1] as number) : t === 0xcd ? dv.getUint16(i + 1) : t === 0xce ? dv.getUint32(i + 1) : t === 0xd0 ? dv.getInt8(i + 1) : t === 0xd1 ? dv.getInt16(i + 1) : t === 0xd2 ? dv.getInt32(i + 1) : dv.getFloat64(i + 1);
  if (!Number.isSafeInteger(v) || Object.is(v, -0)) return false;
  num = v;
  numEnd = i + 1 + n;
  return true;
}

/** A string at b[i]: its bytes' start in strAt, length in strLen; false when none. */
let strAt = 0;
let strLen = 0;
function str(b: Uint8Array, i: number, end: number): boolean {
  const t = b[i] as number;
  if (t >= 0xa0 && t <= 0xbf) {
    strAt = i + 1;
    strLen = t & 0x1f;
  } else if (t === 0xd9) {
    if (i + 2 > end) return false;
    strAt = i + 2;
    strLen = b[i + 1] as number;
  } else if (t === 0xda) {
    if (i + 3 > end) return false;
    strAt = i + 3;
    strLen = dv.getUint16(i + 1);
  } else if (t === 0xdb) {
    if (i + 5 > end) return false;
    strAt = i + 5;
    strLen = dv.getUint32(i + 1);
  } else return false;
  return strAt + strLen <= end;
}

/** An array header at b[i]: its length in arrLen, items from arrAt; false when none. */
let arrLen = 0;
let arrAt = 0;
function arr(b: Uint8Array, i: number, end: number): boolean {
  const t = b[i] as number;
  if (t >= 0x90 && t <= 0x9f) {
    arrLen = t & 0x0f;
    arrAt = i + 1;
  } else if (t === 0xdc) {
    if (i + 3 > end) return false;
    arrLen = dv.getUint16(i + 1);
    arrAt = i + 3;
  } else if (t === 0xdd) {
    if (i + 5 > end) return false;
    arrLen = dv.getUint32(i + 1);
    arrAt = i + 5;
  } else return false;
  return arrAt + arrLen <= end;
}

function startsWithBom(b: Uint8Array, at: number, len: number): boolean {
  return len >= 3 && b[at] === 0xef && b[at + 1] === 0xbb && b[at + 2] === 0xbf;
}

/** The last id or name decoded, by its bytes: a tool call's rows repeat both in every frame. */
class StringCache {
  private raw = new Uint8Array(0);
  private value = '';

  decode(b: Uint8Array, at: number, len: number): string {
    const raw = this.raw;
    if (raw.length === len) {
      let k = 0;
      while (k < len && raw[k] === b[at + k]) k++;
      if (k === len) return this.value;
    }
    this.raw = Uint8Array.prototype.slice.call(b, at, at + len);
    this.value = Buffer.from(b.buffer, b.byteOffset + at, len).toString('utf8');
    return this.value;
  }
}

const ids = new StringCache();
const names = new StringCache();

function newKey(kind: RunKey['kind'], turn: number, step: number, index: number, id: string | undefined, name: string | undefined): RunKey {
  return { kind, turn, step, index, id, name };
}

/** The id and name toolIdentity read last. */
let toolId: string | undefined;
let toolName: string | undefined;

/** A tool call's id (and, when `named`, name) entries at b[i] into toolId and toolName: the index after them, or -1. */
function toolIdentity(b: Uint8Array, i: number, end: number, named: boolean): number {
  if (!has(b, i, ID) || !str(b, i + ID.length, end) || startsWithBom(b, strAt, strLen)) return -1;
  toolId = ids.decode(b, strAt, strLen);
  i = strAt + strLen;
  if (!named) return i;
  if (!has(b, i, NAME) || !str(b, i + NAME.length, end) || startsWithBom(b, strAt, strLen)) return -1;
  toolName = names.decode(b, strAt, strLen);
  return strAt + strLen;
}

/** The last key handed out: a block's rows share one key object (the encoder compares keys by identity first). */
let lastKey: RunKey = newKey('text', -1, -1, -1, undefined, undefined);

/** The row read by readWriterRow (reused: consume it at once). `dtAt`, `membersAt`: where its gap and member items start in the frame's bytes. */
export const binaryRow = { key: lastKey, seq0: 0, time0: 0, n: 0, dtSum: 0, dtAt: 0, membersAt: 0, end: 0 };

/**
 * Read the MessagePack row b[start, end) in the writer's layout into
 * `binaryRow`; false when it is not one (any other record, another layout,
 * a value outside what the row rule allows, a member beginning with a
 * byte-order mark: see msgpack-json.ts). The members themselves are walked
 * only as writeRowMembers writes them (it throws on one that is not a
 * string: a frame the writer's checksum vouches for has none).
 */
export function readWriterRow(b: Uint8Array, start: number, end: number): boolean {
  dv = payloadViews.over(b);
  let i = start;
  if (b[i] !== 0x84 || !has(b, i + 1, TYPE)) return false;
  i += 1 + TYPE.length;
  let kind: RunKey['kind'];
  let type: Uint8Array;
  const c = b[i + 1];
  if (c === 0x74) {
    type = b[i + 2] === 0x65 ? TEXT : TOOL;
    kind = type === TEXT ? 'text' : 'tool';
  } else if (c === 0x72) {
    type = REASONING;
    kind = 'reasoning';
  } else return false;
  if (!has(b, i, type)) return false;
  i += type.length;
  if (!has(b, i, SEQ0) || !int(b, i + SEQ0.length, end) || num < 0) return false;
  const seq0 = num;
  i = numEnd;
  if (!has(b, i, TIME0) || !int(b, i + TIME0.length, end)) return false;
  const time0 = num;
  i = numEnd;
  const tool = kind === 'tool';
  if (!has(b, i, DATA)) return false;
  i += DATA.length;
  const fields = b[i++] as number;
  if (tool ? fields !== 0x86 && fields !== 0x87 : fields !== 0x85) return false;
  if (!has(b, i, TURN) || !int(b, i + TURN.length, end)) return false;
  const turn = num;
  i = numEnd;
  if (!has(b, i, STEP) || !int(b, i + STEP.length, end)) return false;
  const step = num;
  i = numEnd;
  if (!has(b, i, INDEX) || !int(b, i + INDEX.length, end)) return false;
  const index = num;
  i = numEnd;
  toolId = undefined;
  toolName = undefined;
  // A tool call's id and name: before its gaps (runToRow's order), or after them (dsh's, kept by import).
  const idsFirst = tool && has(b, i, ID);
  if (idsFirst && (i = toolIdentity(b, i, end, fields === 0x87)) < 0) return false;
  if (!has(b, i, DT) || !arr(b, i + DT.length, end)) return false;
  const gaps = arrLen;
  const dtAt = arrAt;
  i = arrAt;
  let sum = 0;
  let abs = 0;
  for (let k = 0; k < gaps; k++) {
    const t = b[i] as number;
    if (t <= 0x7f) {
      sum += t;
      abs += t;
      i++;
      continue;
    }
    if (!int(b, i, end)) return false;
    sum += num;
    abs += Math.abs(num);
    i = numEnd;
  }
  if (tool && !idsFirst && (i = toolIdentity(b, i, end, fields === 0x87)) < 0) return false;
  const id = toolId;
  const name = toolName;
  const members = tool ? ARGS : TEXTS;
  if (!has(b, i, members) || !arr(b, i + members.length, end)) return false;
  const n = arrLen;
  const membersAt = arrAt;
  if (n !== gaps + 1) return false;
  // A member beginning with a byte-order mark needs 0xef: look at the headers only where one is near.
  if (nextEf(b, arrAt) < end && !membersWithoutBom(b, arrAt, n, end)) return false;
  if (!Number.isSafeInteger(seq0 + (n - 1)) || !Number.isSafeInteger(time0 + sum)) return false;
  // Every member's time must be a safe integer too (always so while the gaps and time0 stay small).
  if (Math.abs(time0) + abs > 2 ** 52 && !partialSumsSafe(b, dtAt, gaps, time0, end)) return false;
  const k = lastKey;
  const key = k.kind === kind && k.turn === turn && k.step === step && k.index === index && k.id === id && k.name === name ? k : (lastKey = newKey(kind, turn, step, index, id, name));
  const r = binaryRow;
  r.key = key;
  r.seq0 = seq0;
  r.time0 = time0;
  r.n = n;
  r.dtSum = sum;
  r.dtAt = dtAt;
  r.membersAt = membersAt;
  r.end = end;
  return true;
}

/**
 * A writer's row of block `key` whose row metadata the writer recorded
 * (frame-meta-file.ts: time0, gap sum, member count, where its gap and
 * member items start, relative to `frame`, the frame's first byte), into
 * `binaryRow` without walking its header or gaps: only its type literal
 * and seq0, which the decoder checks against the sidecar. The binary twin
 * of trusted-frame-scanner.ts's continuedRow; false when the payload
 * b[start, end) does not start as a row of that kind.
 */
export function continuedBinaryRow(b: Uint8Array, frame: number, start: number, end: number, key: RunKey, time0: number, dtSum: number, n: number, dtAt: number, membersAt: number): boolean {
  dv = payloadViews.over(b);
  const type = key.kind === 'text' ? TEXT : key.kind === 'reasoning' ? REASONING : TOOL;
  const at = start + 1 + TYPE.length;
  if (b[start] !== 0x84 || !has(b, start + 1, TYPE) || !has(b, at, type) || !has(b, at + type.length, SEQ0) || !int(b, at + type.length + SEQ0.length, end)) return false;
  const r = binaryRow;
  r.key = key;
  r.seq0 = num;
  r.time0 = time0;
  r.n = n;
  r.dtSum = dtSum;
  r.dtAt = frame + dtAt;
  r.membersAt = frame + membersAt;
  r.end = end;
  return true;
}

/** Where the next 0xef byte at or after a position is, per buffer (one native search per stretch of the slice, not per frame). */
let efOf: Uint8Array | null = null;
let efAt = -1;
function nextEf(b: Uint8Array, from: number): number {
  if (b !== efOf || (efAt >= 0 && efAt < from)) {
    efOf = b;
    efAt = Buffer.from(b.buffer, b.byteOffset, b.byteLength).indexOf(0xef, from);
  }
  return efAt < 0 ? Infinity : efAt;
}

/** Whether the `n` string members from b[i] are all strings, none beginning with a byte-order mark. */
function membersWithoutBom(b: Uint8Array, i: number, n: number, end: number): boolean {
  for (let k = 0; k < n; k++) {
    if (!str(b, i, end)) return false;
    if (strLen >= 3 && b[strAt] === 0xef && b[strAt + 1] === 0xbb && b[strAt + 2] === 0xbf) return false;
    i = strAt + strLen;
  }
  return true;
}

function partialSumsSafe(b: Uint8Array, at: number, gaps: number, time0: number, end: number): boolean {
  let t = time0;
  for (let k = 0; k < gaps; k++) {
    if (!int(b, at, end)) return false;
    t += num;
    if (!Number.isSafeInteger(t)) return false;
    at = numEnd;
  }
  return true;
}

/** Most bytes writeRowGaps writes for the last row read (a separator and up to 17 characters a gap), and room for its last word store. */
export function rowGapsBound(): number {
  return binaryRow.n * 18 + 4;
}

/** Most bytes writeRowMembers writes for the last row read: its member bytes escaped (6 a byte at most), quotes and commas, and room for its last two-word store. */
export function rowMembersBound(): number {
  return (binaryRow.end - binaryRow.membersAt) * 6 + binaryRow.n * 3 + 8;
}

/**
 * Views of the outputs for word stores, one per output (the gaps' and the
 * members' sinks are two buffers: one view shared by both was made anew for
 * each of them, twice a row).
 */
let gapView: DataView = new DataView(new ArrayBuffer(8));
let gapOf: Uint8Array | null = null;
const memberViews = new DataViewCache();

/** A comma and the decimal digits of 0..127 (the gaps MessagePack stores in one byte), as little-endian words, and their lengths. */
const GAP_WORDS = new Uint32Array(128);
const GAP_LENGTHS = new Uint8Array(128);
for (let t = 0; t < 128; t++) {
  const s = `,${t}`;
  let w = 0;
  for (let k = 0; k < s.length; k++) w |= s.charCodeAt(k) << (8 * k);
  GAP_WORDS[t] = w >>> 0;
  GAP_LENGTHS[t] = s.length;
}

/**
 * Two gaps below 64 (MessagePack positive fixints: a streamed row's gaps
 * are milliseconds between tokens, nearly all of them), `,a,b`, at index
 * (a << 6) | b: its first and second words, and its length (at most 6).
 * Two at a time, the 600K tail page's 421K gaps took about three
 * quarters of the time they took one at a time (docs/benchmarks.md,
 * "Issue 12, a binary session's first page"). 36 KB.
 */
const PAIR_FIRST = new Int32Array(4096);
const PAIR_SECOND = new Int32Array(4096);
const PAIR_LENGTHS = new Uint8Array(4096);
for (let a = 0; a < 64; a++) {
  for (let c = 0; c < 64; c++) {
    const s = `,${a},${c}`;
    const words = [0, 0];
    for (let k = 0; k < s.length; k++) words[k >> 2] = (words[k >> 2] as number) | (s.charCodeAt(k) << (8 * (k & 3)));
    PAIR_FIRST[(a << 6) | c] = words[0] as number;
    PAIR_SECOND[(a << 6) | c] = words[1] as number;
    PAIR_LENGTHS[(a << 6) | c] = s.length;
  }
}

/**
 * The gaps of the row last read, comma-joined JSON numbers, at out[o] (after
 * a comma when `comma`): the index after them. Two gaps below 64 are two
 * word stores (PAIR_FIRST), any other one-byte gap one (the bytes past them
 * are overwritten by what follows; rowGapsBound leaves room for the words).
 */
export function writeRowGaps(b: Uint8Array, out: Uint8Array, o: number, comma: boolean): number {
  if (out !== gapOf) {
    gapView = new DataView(out.buffer, out.byteOffset, out.byteLength);
    gapOf = out;
  }
  const dst = gapView;
  const gaps = binaryRow.n - 1;
  let i = binaryRow.dtAt;
  const end = binaryRow.end;
  let k = 0;
  if (!comma && gaps > 0) {
    // The run's first gap: no comma before it.
    int(b, i, end);
    o = writeInt(num, out, o);
    i = numEnd;
    k = 1;
  }
  const src = payloadViews.over(b);
  for (; k < gaps; k++) {
    if (k + 1 < gaps) {
      // Both bytes below 0x40: two fixints below 64.
      const w = src.getUint16(i);
      if ((w & 0xc0c0) === 0) {
        const p = ((w >>> 2) & 0xfc0) | (w & 0x3f);
        dst.setInt32(o, PAIR_FIRST[p] as number, true);
        dst.setInt32(o + 4, PAIR_SECOND[p] as number, true);
        o += PAIR_LENGTHS[p] as number;
        i += 2;
        k++;
        continue;
      }
    }
    const t = b[i] as number;
    if (t < 0x80) {
      dst.setUint32(o, GAP_WORDS[t] as number, true);
      o += GAP_LENGTHS[t] as number;
      i++;
    } else {
      out[o++] = 0x2c;
      int(b, i, end);
      o = writeInt(num, out, o);
      i = numEnd;
    }
  }
  return o;
}

/**
 * For a member of `len` bytes read as two words: what, or'ed into each
 * word, sets the bytes past the member to 0xff (never escaped), so that
 * the words' test is the member's own. Index: the member's length (0-8).
 */
const PAST_LO = new Int32Array(9);
const PAST_HI = new Int32Array(9);
for (let len = 0; len <= 8; len++) {
  PAST_LO[len] = len >= 4 ? 0 : ~(2 ** (8 * len) - 1) | 0;
  PAST_HI[len] = len >= 8 ? 0 : len <= 4 ? -1 : ~(2 ** (8 * (len - 4)) - 1) | 0;
}

/**
 * The members of the row last read, comma-joined JSON strings, at out[o]
 * (after a comma when `comma`): the index after them. Throws if they do not
 * end where the row does (a frame the writer's checksum vouched for cannot).
 *
 * A member of up to 8 bytes (a streamed token: nearly all of them) is read
 * as two words, tested for a byte to escape as words (the bytes past it
 * masked out), and written as those two words (the excess overwritten by
 * what follows; rowMembersBound leaves room): no byte loop and no scan of
 * its own. One with such a byte, and any longer one, the general way. A
 * separate scan for the next byte to escape, then the copies, cost a third
 * more (docs/benchmarks.md, "Issue 12, stored formats").
 */
export function writeRowMembers(b: Uint8Array, out: Uint8Array, o: number, comma: boolean): number {
  dv = payloadViews.over(b);
  const src = dv;
  const dst = memberViews.over(out);
  const n = binaryRow.n;
  let i = binaryRow.membersAt;
  const end = binaryRow.end;
  if (n === 0) {
    if (i !== end) throw new Error('a checksummed binary row does not end with its members');
    return o;
  }
  // Word reads go up to eight bytes from a member's start: members starting later are taken the general way.
  const wordEnd = b.length - 8;
  // The first member's opening quote (after a comma when asked); every member is then followed
  // by one word store of `","` (its closing quote, a comma, the next one's opening quote), whose
  // fourth byte the next member overwrites: the last one's `,"` is taken back at the end.
  out[o] = 0x2c;
  o += comma ? 1 : 0;
  out[o++] = 0x22;
  for (let k = 0; k < n; k++) {
    const len = (b[i] as number) - 0xa0;
    const at = i + 1;
    if (len >>> 0 <= 8 && at <= wordEnd) {
      const lo = src.getInt32(at, true);
      const hi = src.getInt32(at + 4, true);
      if ((escapeBits(lo | (PAST_LO[len] as number)) | escapeBits(hi | (PAST_HI[len] as number))) === 0) {
        dst.setInt32(o, lo, true);
        dst.setInt32(o + 4, hi, true);
        o += len;
        dst.setInt32(o, QUOTE_COMMA_QUOTE, true);
        o += 3;
        i = at + len;
        continue;
      }
    }
    if (!str(b, i, end)) throw new Error('a member of a checksummed binary row is not a string');
    o = writeEscaped(b, strAt, strAt + strLen, out, o, false);
    dst.setInt32(o, QUOTE_COMMA_QUOTE, true);
    o += 3;
    i = strAt + strLen;
  }
  if (i !== end) throw new Error('a checksummed binary row does not end with its members');
  return o - 2;
}

/** `","` and one byte more, as a little-endian word. */
const QUOTE_COMMA_QUOTE = 0x22 | (0x2c << 8) | (0x22 << 16);
