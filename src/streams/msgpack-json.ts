/**
 * MessagePack to JSON, byte to byte, pure: the JSON text of one MessagePack
 * value written straight into a byte buffer, with no JS value built for
 * any member (a binary frame's payload becomes the bytes its JSONL frame
 * would hold, so the page path reads both alike).
 *
 * The output is exactly `JSON.stringify(unpack(payload))` for msgpackr's
 * `unpack` with the options of frame-codec.ts: keys in map order, strings
 * escaped as JSON.stringify escapes them (`\"`, `\\`, `\b\f\n\r\t`, other
 * control characters as lowercase `\u00xx`, everything else as UTF-8 bytes),
 * integers in decimal, floats as JS formats numbers (`String(x)`; -0 is `0`).
 *
 * Anything where a straight transcode could differ from that, or that JSON
 * cannot hold, is declined (TRANSCODE_DECLINED) and left to the full decode
 * (frame-codec.ts decodeFrame, whose msgpack-check.ts names the fault):
 * - every type msgpack-check.ts refuses: bin, ext, 0xc1, NaN and infinite
 *   floats, 64-bit integers past the safe ones, keys that are not strings,
 *   nesting past the limit, a cut payload, bytes after the value;
 * - strings whose bytes are not well-formed UTF-8 (decoders differ on
 *   those), and strings starting with a byte-order mark (a TextDecoder
 *   drops it);
 * - in `strict` mode, maps whose decoded object would not list its keys in
 *   map order (an own `__proto__`, which msgpackr renames; a key repeated;
 *   array-index keys such as "7" after other keys or out of order, which JS
 *   objects list first, ascending).
 * Non-strict mode skips the UTF-8 and map-key checks: it is for payloads
 * this service's writer packed itself (a frame whose bytes match the
 * writer's checksum record), which pack JS objects (keys already in object
 * order, no lone surrogates and no `__proto__`: frame-codec.ts
 * keepsVerbatimInMsgpack), so the checks cannot fail on them.
 */
import { MAX_NESTING_DEPTH } from '../core/nesting.js';
import { DataViewCache } from './data-view-cache.js';
import { writeInt } from '../core/int-digits.js';

export { writeInt };

/** What msgpackToJson returns when the payload must take the full decode path. */
export const TRANSCODE_DECLINED = -1;

/**
 * Most JSON bytes a payload of `n` bytes can become: a MessagePack byte
 * becomes at most 6 (a control character in a string, `\u00xx`; `false`
 * plus its separator from one byte is 6 too).
 */
export function jsonBytesBound(n: number): number {
  return 6 * n + 16;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACK = 0x5b;
const RBRACK = 0x5d;

/** Byte classes inside a string: 0 copied as is, 1 escaped, 2 start of a multi-byte UTF-8 sequence (or not UTF-8). */
const CLASS = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) CLASS[c] = 1;
CLASS[QUOTE] = 1;
CLASS[BACKSLASH] = 1;
for (let c = 0x80; c < 0x100; c++) CLASS[c] = 2;
/** The same, for payloads the writer packed: multi-byte sequences are copied as they are. */
const TRUSTED_CLASS = CLASS.map((c) => (c === 2 ? 0 : c));

/** The letter of JSON.stringify's two-character escape for a byte, 0 when it is written `\u00xx`. */
const SHORT_ESCAPE = new Uint8Array(256);
SHORT_ESCAPE[0x08] = 0x62; // b
SHORT_ESCAPE[0x09] = 0x74; // t
SHORT_ESCAPE[0x0a] = 0x6e; // n
SHORT_ESCAPE[0x0c] = 0x66; // f
SHORT_ESCAPE[0x0d] = 0x72; // r
SHORT_ESCAPE[QUOTE] = QUOTE;
SHORT_ESCAPE[BACKSLASH] = BACKSLASH;
const HEX = Buffer.from('0123456789abcdef');

const NULL = Buffer.from('null');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');

/** Most keys of one map whose duplicates strict mode looks for; a larger map is declined (rare: such events take the full path). */
const MAX_CHECKED_KEYS = 64;
/** The largest array index (2^32 - 2): a key spelling one is listed first by JS objects. */
const MAX_INDEX = 4294967294;

// The open containers (no recursion): items left (a map counts keys and values), whether a
// map, and in strict mode where its keys' checks stand.
const left = new Int32Array(MAX_NESTING_DEPTH + 1);
const isMap = new Uint8Array(MAX_NESTING_DEPTH + 1);
const sawName = new Uint8Array(MAX_NESTING_DEPTH + 1);
const lastIndex = new Float64Array(MAX_NESTING_DEPTH + 1);
/** Where each open map's keys start in `keySpans` (strict mode). */
const keyBase = new Int32Array(MAX_NESTING_DEPTH + 1);
/** [start, end) in the output of the keys of every open map, innermost last. */
let keySpans = new Int32Array(256);
let keyTop = 0;

/** End of the well-formed UTF-8 sequence whose lead byte is src[p], or -1 (RFC 3629: no overlongs, no surrogates, at most U+10FFFF). */
function utf8End(src: Uint8Array, p: number, end: number): number {
  const c = src[p] as number;
  let n: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) n = 1;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 2;
    if (c === 0xe0) lo = 0xa0;
    else if (c === 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 3;
    if (c === 0xf0) lo = 0x90;
    else if (c === 0xf4) hi = 0x8f;
  } else return -1;
  if (p + n >= end) return -1;
  const second = src[p + 1] as number;
  if (second < lo || second > hi) return -1;
  for (let k = 2; k <= n; k++) {
    const d = src[p + k] as number;
    if (d < 0x80 || d > 0xbf) return -1;
  }
  return p + n + 1;
}

/**
 * The JSON string for the `len` string bytes at src[p], written at out[o]:
 * the index after its closing quote, or -1 when declined.
 */
export function writeJsonString(src: Uint8Array, p: number, len: number, out: Uint8Array, o: number, strict: boolean): number {
  if (len >= 3 && src[p] === 0xef && src[p + 1] === 0xbb && src[p + 2] === 0xbf) return -1;
  out[o++] = QUOTE;
  o = writeEscaped(src, p, p + len, out, o, strict);
  if (o < 0) return -1;
  out[o++] = QUOTE;
  return o;
}

/** String bytes src[p, end) as they are inside a JSON string (escaped as JSON.stringify escapes), at out[o]: the index after them, or -1 when declined. */
export function writeEscaped(src: Uint8Array, p: number, end: number, out: Uint8Array, o: number, strict: boolean): number {
  if (!strict) return writeTrusted(src, p, end, out, o);
  while (p < end) {
    const c = src[p] as number;
    const k = CLASS[c];
    if (k === 0) {
      out[o++] = c;
      p++;
    } else if (k === 1) {
      o = writeEscape(c, out, o);
      p++;
    } else {
      const e = utf8End(src, p, end);
      if (e < 0) return -1;
      while (p < e) out[o++] = src[p++] as number;
    }
  }
  return o;
}

/** The escape of byte `c` (a control character, a quote or a backslash) at out[o]: the index after it. */
function writeEscape(c: number, out: Uint8Array, o: number): number {
  const s = SHORT_ESCAPE[c] as number;
  out[o++] = BACKSLASH;
  if (s !== 0) out[o++] = s;
  else {
    out[o++] = 0x75; // u
    out[o++] = 0x30;
    out[o++] = 0x30;
    out[o++] = HEX[c >>> 4] as number;
    out[o++] = HEX[c & 15] as number;
  }
  return o;
}

const srcViews = new DataViewCache();
const outViews = new DataViewCache();

/**
 * writeEscaped for a payload the writer packed (UTF-8 already well formed,
 * copied as it is): four bytes a step, tested as a word for a byte to escape
 * (escapes) and stored as that word; only a word holding one is written byte
 * by byte. An event's text has a quote or a newline every few dozen bytes,
 * where a byte loop (or a native copy of only the long stretches) ran.
 */
function writeTrusted(src: Uint8Array, p: number, end: number, out: Uint8Array, o: number): number {
  const sv = srcViews.over(src);
  const ov = outViews.over(out);
  while (p < end) {
    if (p + 4 <= end) {
      const w = sv.getInt32(p, true);
      if (!escapes(w)) {
        ov.setInt32(o, w, true);
        p += 4;
        o += 4;
        continue;
      }
    }
    // The word holding a byte to escape (or the last bytes): byte by byte.
    const stop = Math.min(p + 4, end);
    while (p < stop) {
      const c = src[p++] as number;
      if (TRUSTED_CLASS[c] === 0) out[o++] = c;
      else o = writeEscape(c, out, o);
    }
  }
  return o;
}

/**
 * Whether a word (four bytes, little endian) holds a byte a JSON string
 * escapes: a control character (below 0x20), a quote or a backslash. Exact
 * per word (the classic has-less and has-zero tests); bytes from 0x80 on
 * (UTF-8 sequences) never count.
 */
export function escapes(x: number): boolean {
  return escapeBits(x) !== 0;
}

/** escapes' test before its compare: non-zero when the word holds a byte to escape (so two words are tested with one branch). */
export function escapeBits(x: number): number {
  const q = x ^ 0x22222222;
  const e = x ^ 0x5c5c5c5c;
  return (((x - 0x20202020) & ~x) | ((q - 0x01010101) & ~q) | ((e - 0x01010101) & ~e)) & 0x80808080;
}

function writeAscii(s: string, out: Uint8Array, o: number): number {
  for (let i = 0; i < s.length; i++) out[o++] = s.charCodeAt(i);
  return o;
}

function writeLiteral(lit: Buffer, out: Uint8Array, o: number): number {
  for (let i = 0; i < lit.length; i++) out[o++] = lit[i] as number;
  return o;
}

/** Whether out[s, e) (a key's JSON string, quotes included) spells an array index; its value in `indexValue`. */
let indexValue = 0;
function isIndexKey(out: Uint8Array, s: number, e: number): boolean {
  const n = e - s - 2;
  if (n < 1 || n > 10) return false;
  const first = out[s + 1] as number;
  if (first < 0x30 || first > 0x39 || (first === 0x30 && n > 1)) return false;
  let v = 0;
  for (let i = s + 1; i < e - 1; i++) {
    const d = out[i] as number;
    if (d < 0x30 || d > 0x39) return false;
    v = v * 10 + (d - 0x30);
  }
  if (v > MAX_INDEX) return false;
  indexValue = v;
  return true;
}

const PROTO = Buffer.from('"__proto__"');

function isProto(out: Uint8Array, s: number): boolean {
  for (let i = 0; i < PROTO.length; i++) if (out[s + i] !== PROTO[i]) return false;
  return true;
}

function sameBytes(out: Uint8Array, a: number, b: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (out[a + i] !== out[b + i]) return false;
  return true;
}

/**
 * Strict mode: the key just written at out[s, e) in the map open at depth
 * `top` keeps the decoded object's key order (see the module comment).
 */
function keyKeepsOrder(out: Uint8Array, s: number, e: number, top: number): boolean {
  const n = e - s;
  if (n === PROTO.length && isProto(out, s)) return false;
  if (isIndexKey(out, s, e)) {
    if (sawName[top] === 1 || indexValue <= (lastIndex[top] as number)) return false;
    lastIndex[top] = indexValue;
    return true;
  }
  sawName[top] = 1;
  const base = keyBase[top] as number;
  if (keyTop - base >= 2 * MAX_CHECKED_KEYS) return false;
  for (let k = base; k < keyTop; k += 2) {
    const ks = keySpans[k] as number;
    if ((keySpans[k + 1] as number) - ks === n && sameBytes(out, ks, s, n)) return false;
  }
  if (keyTop + 2 > keySpans.length) {
    const grown = new Int32Array(keySpans.length * 2);
    grown.set(keySpans);
    keySpans = grown;
  }
  keySpans[keyTop++] = s;
  keySpans[keyTop++] = e;
  return true;
}

let view: DataView = new DataView(new ArrayBuffer(8));
let viewOf: Uint8Array | null = null;

/**
 * Write the JSON text of the one MessagePack value src[start, end) at
 * out[at], which must have jsonBytesBound(end - start) bytes of room: the
 * index just after the text, or TRANSCODE_DECLINED.
 */
export function msgpackToJson(src: Uint8Array, start: number, end: number, out: Uint8Array, at: number, strict: boolean): number {
  if (src !== viewOf) {
    view = new DataView(src.buffer, src.byteOffset, src.byteLength);
    viewOf = src;
  }
  const dv = view;
  let top = -1;
  let p = start;
  let o = at;
  keyTop = 0;
  for (;;) {
    if (p >= end) return -1;
    // Where the item goes: after a separator unless first; a map's key must be a string.
    let key = false;
    if (top >= 0) {
      const l = left[top] as number;
      if (isMap[top] === 1) {
        key = (l & 1) === 0;
        if (key && out[o - 1] !== LBRACE) out[o++] = COMMA;
      } else if (out[o - 1] !== LBRACK) out[o++] = COMMA;
    }
    const t = src[p++] as number;
    let open = -1;
    let map = false;
    let strLen = -1;
    if (t <= 0x7f) {
      if (key) return -1;
      o = writeInt(t, out, o);
    } else if (t >= 0xe0) {
      if (key) return -1;
      o = writeInt(t - 0x100, out, o);
    } else if (t <= 0x8f) {
      open = t & 0x0f;
      map = true;
    } else if (t <= 0x9f) {
      open = t & 0x0f;
    } else if (t <= 0xbf) {
      strLen = t & 0x1f;
    } else {
      switch (t) {
        case 0xd9:
          if (p + 1 > end) return -1;
          strLen = src[p] as number;
          p += 1;
          break;
        case 0xda:
          if (p + 2 > end) return -1;
          strLen = dv.getUint16(p);
          p += 2;
          break;
        case 0xdb:
          if (p + 4 > end) return -1;
          strLen = dv.getUint32(p);
          p += 4;
          break;
        case 0xdc:
        case 0xde:
          if (p + 2 > end) return -1;
          open = dv.getUint16(p);
          map = t === 0xde;
          p += 2;
          break;
        case 0xdd:
        case 0xdf:
          if (p + 4 > end) return -1;
          open = dv.getUint32(p);
          map = t === 0xdf;
          p += 4;
          break;
        default: {
          // A scalar that is not a string: never a key.
          if (key) return -1;
          const q = writeScalar(t, src, dv, p, end, out, o);
          if (q < 0) return -1;
          o = q;
          p = scalarEnd;
        }
      }
    }
    if (strLen >= 0) {
      if (p + strLen > end) return -1;
      const s = o;
      o = writeJsonString(src, p, strLen, out, o, strict);
      if (o < 0) return -1;
      p += strLen;
      if (key) {
        if (strict && !keyKeepsOrder(out, s, o, top)) return -1;
        out[o++] = COLON;
        left[top] = (left[top] as number) - 1;
        continue;
      }
    } else if (open >= 0) {
      // Every item takes a byte at least: a count past the payload is a cut payload (and stays an int32).
      if (key || open > end - p) return -1;
      if (top + 2 > MAX_NESTING_DEPTH) return -1;
      out[o++] = map ? LBRACE : LBRACK;
      if (open > 0 && !map) {
        // An array's leading strings and small integers in one tight loop (a row's members
        // and gaps, most of a tail page), the rest item by item below.
        const k = leadingItems(src, p, end, open, out, o, strict);
        if (k < 0) return -1;
        o = itemsOut;
        p = itemsEnd;
        if (k < open) {
          top++;
          left[top] = open - k;
          isMap[top] = 0;
          continue;
        }
        // All of them: the array closes below.
      } else if (open > 0) {
        top++;
        left[top] = map ? open * 2 : open;
        isMap[top] = map ? 1 : 0;
        if (map && strict) {
          sawName[top] = 0;
          lastIndex[top] = -1;
          keyBase[top] = keyTop;
        }
        continue;
      }
      out[o++] = map ? RBRACE : RBRACK;
    }
    // One value done: close every container it completes.
    for (;;) {
      if (top < 0) return p === end ? o : -1;
      const l = (left[top] as number) - 1;
      left[top] = l;
      if (l > 0) break;
      if (isMap[top] === 1) {
        out[o++] = RBRACE;
        if (strict) keyTop = keyBase[top] as number;
      } else out[o++] = RBRACK;
      top--;
    }
  }
}

/** Where leadingItems stopped, in the source and the output. */
let itemsEnd = 0;
let itemsOut = 0;

/**
 * The leading fixstr, str8 and unsigned integer items of an array of
 * `count` items at src[p], written comma-joined at out[o]: how many, or -1
 * when declined; itemsEnd and itemsOut say where it stopped. (A message's
 * `sourceEventSeqs`, hundreds of uint32 seqs, is most of a binary page's
 * event bytes that are not text: item by item, each took the general loop
 * and writeScalar's switch.)
 */
function leadingItems(src: Uint8Array, p: number, end: number, count: number, out: Uint8Array, o: number, strict: boolean): number {
  let k = 0;
  while (k < count && p < end) {
    const t = src[p] as number;
    let n: number;
    let at: number;
    if (t >= 0xa0 && t <= 0xbf) {
      n = t & 0x1f;
      at = p + 1;
    } else if (t === 0xd9 && p + 1 < end) {
      n = src[p + 1] as number;
      at = p + 2;
    } else if (t <= 0x7f) {
      if (k > 0) out[o++] = COMMA;
      o = writeInt(t, out, o);
      p++;
      k++;
      continue;
    } else if (t >= 0xcc && t <= 0xce) {
      // uint8, uint16, uint32 (big endian): always safe integers.
      const w = t === 0xcc ? 1 : t === 0xcd ? 2 : 4;
      if (p + 1 + w > end) break;
      const v = w === 1 ? (src[p + 1] as number) : w === 2 ? ((src[p + 1] as number) << 8) | (src[p + 2] as number) : (src[p + 1] as number) * 16777216 + (((src[p + 2] as number) << 16) | ((src[p + 3] as number) << 8) | (src[p + 4] as number));
      if (k > 0) out[o++] = COMMA;
      o = writeInt(v, out, o);
      p += 1 + w;
      k++;
      continue;
    } else break;
    if (at + n > end) return -1;
    if (k > 0) out[o++] = COMMA;
    o = writeJsonString(src, at, n, out, o, strict);
    if (o < 0) return -1;
    p = at + n;
    k++;
  }
  itemsEnd = p;
  itemsOut = o;
  return k;
}

/** Where the scalar writeScalar read ends in the source. */
let scalarEnd = 0;

/** A number, nil or boolean of type byte `t` (its bytes from src[p]) written at out[o]: the index after it, or -1. */
function writeScalar(t: number, src: Uint8Array, dv: DataView, p: number, end: number, out: Uint8Array, o: number): number {
  let v: number;
  let n: number;
  switch (t) {
    case 0xc0:
      scalarEnd = p;
      return writeLiteral(NULL, out, o);
    case 0xc2:
      scalarEnd = p;
      return writeLiteral(FALSE, out, o);
    case 0xc3:
      scalarEnd = p;
      return writeLiteral(TRUE, out, o);
    case 0xca:
      n = 4;
      if (p + n > end) return -1;
      v = dv.getFloat32(p);
      if (!Number.isFinite(v)) return -1;
      scalarEnd = p + n;
      return writeAscii(String(v), out, o);
    case 0xcb:
      n = 8;
      if (p + n > end) return -1;
      v = dv.getFloat64(p);
      if (!Number.isFinite(v)) return -1;
      scalarEnd = p + n;
      // An integer past 32 bits (msgpackr packs those as float64: every event's time) as writeInt writes it, no string.
      return Number.isSafeInteger(v) ? writeInt(v, out, o) : writeAscii(String(v), out, o);
    case 0xcc:
      n = 1;
      if (p + n > end) return -1;
      v = src[p] as number;
      break;
    case 0xcd:
      n = 2;
      if (p + n > end) return -1;
      v = dv.getUint16(p);
      break;
    case 0xce:
      n = 4;
      if (p + n > end) return -1;
      v = dv.getUint32(p);
      break;
    case 0xcf:
      n = 8;
      if (p + n > end) return -1;
      v = dv.getUint32(p) * 4294967296 + dv.getUint32(p + 4);
      break;
    case 0xd0:
      n = 1;
      if (p + n > end) return -1;
      v = dv.getInt8(p);
      break;
    case 0xd1:
      n = 2;
      if (p + n > end) return -1;
      v = dv.getInt16(p);
      break;
    case 0xd2:
      n = 4;
      if (p + n > end) return -1;
      v = dv.getInt32(p);
      break;
    case 0xd3:
      n = 8;
      if (p + n > end) return -1;
      v = dv.getInt32(p) * 4294967296 + dv.getUint32(p + 4);
      break;
    default:
      // bin, ext, fixext, 0xc1: JSON has no such value.
      return -1;
  }
  // Past the safe integers a 64-bit value would not be exact as a number (msgpack-check.ts refuses it).
  if (!Number.isSafeInteger(v)) return -1;
  scalarEnd = p + n;
  return writeInt(v, out, o);
}
