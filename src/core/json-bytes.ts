/**
 * The JSON byte primitives every scanner shares (the trusted-frame, row and
 * event scanners of the page workers, the message-group reader, the
 * planner's entry-line reader), pure: bytes and indexes in, indexes and
 * flags out, nothing allocated. One copy of each, so a fix or a speed-up
 * reaches every scanner, and they all agree on what a token is.
 *
 * Conventions: `b` is the buffer, `i` the index of a token's first byte,
 * `end` the exclusive bound the token must end before; a function that
 * finds the end of a token returns the index just past it, or -1 when the
 * bytes there are not that token.
 */

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const LBRACE = 0x7b;
export const RBRACE = 0x7d;
export const LBRACK = 0x5b;
export const RBRACK = 0x5d;
export const MINUS = 0x2d;

/** Deeper nesting than this is left to JSON.parse (which names the error). */
export const MAX_SCAN_DEPTH = 512;

export function isWs(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** The first index at or after i that is not JSON whitespace (end at most). */
export function skipWs(b: Uint8Array, i: number, end: number): number {
  while (i < end && isWs(b[i] as number)) i++;
  return i;
}

export function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

// ---------------------------------------------------------------------------
// Literals: byte strings compared four bytes per load (28 vs 62 ns a literal
// against a byte loop, measured on the trusted scanner's literals).

/** A literal: its bytes, and their whole 4-byte groups as little-endian words. */
export interface Literal {
  readonly length: number;
  readonly bytes: Buffer;
  readonly words: Uint32Array;
}

export function literal(text: string): Literal {
  const bytes = Buffer.from(text);
  const words = new Uint32Array(bytes.length >>> 2);
  for (let k = 0; k < words.length; k++) words[k] = bytes.readUInt32LE(4 * k);
  return { length: bytes.length, bytes, words };
}

/** A view of the buffer last compared against, for word loads (a slice's frames, or a block's lines, share one buffer). */
let dv: DataView = new DataView(new ArrayBuffer(0));
let dvOf: Uint8Array | null = null;

function viewOf(b: Uint8Array): DataView {
  if (b !== dvOf) {
    dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    dvOf = b;
  }
  return dv;
}

/** b[i..] starts with `l` (b's bounds respected). */
export function has(b: Uint8Array, i: number, l: Literal): boolean {
  const n = l.length;
  if (i < 0 || i + n > b.length) return false;
  const v = viewOf(b);
  const w = l.words;
  const m = w.length;
  for (let k = 0; k < m; k++) if (v.getUint32(i + 4 * k, true) !== w[k]) return false;
  const bytes = l.bytes;
  for (let k = 4 * m; k < n; k++) if (b[i + k] !== bytes[k]) return false;
  return true;
}

/** b[s, e) is exactly `l`. */
export function same(b: Uint8Array, s: number, e: number, l: Literal): boolean {
  return e - s === l.length && has(b, s, l);
}

/** The index after `l` when b[i..] starts with it, else -1. */
export function after(b: Uint8Array, i: number, l: Literal): number {
  return has(b, i, l) ? i + l.length : -1;
}

// ---------------------------------------------------------------------------
// Strings

/** Byte classes inside a JSON string: 0 plain, 1 quote, 2 backslash, 3 control (invalid raw). */
const STRING_CLASS = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) STRING_CLASS[c] = 3;
STRING_CLASS[QUOTE] = 1;
STRING_CLASS[BACKSLASH] = 2;

/**
 * End of the JSON string token starting at b[j] (a quote): index just past
 * the closing quote, or -1 when the token is not valid JSON. The hot loop of
 * the page path: one table lookup per plain byte.
 */
export function stringEnd(b: Uint8Array, j: number, end: number): number {
  if (b[j] !== QUOTE) return -1;
  j++;
  for (;;) {
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
    if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
      j += 2;
      continue;
    }
    return -1;
  }
}

/**
 * The index of the quote closing an escape-free string whose first character
 * is at b[i]; -1 when a backslash, a raw control character or `end` comes
 * first. (Type and kind tokens: an escaped one is left to the general paths.)
 */
export function plainStringClose(b: Uint8Array, i: number, end: number): number {
  while (i < end) {
    const c = b[i] as number;
    if (c === QUOTE) return i;
    if (c === BACKSLASH || c < 0x20) return -1;
    i++;
  }
  return -1;
}

const indexOfByte = Uint8Array.prototype.indexOf as (this: Uint8Array, value: number, from: number) => number;

/**
 * Index just past the first unescaped quote at or after b[i] (the end of a
 * string whose opening quote is at b[i - 1]), or `end` when none comes:
 * for text that need not be valid, where only the strings' extent matters.
 * Short strings (keys, tokens) by a byte loop; past 32 bytes the quote is
 * searched natively and its escape told from the backslashes before it
 * (message texts: about half the time of the byte loop on a page's messages).
 */
export function looseStringEnd(b: Uint8Array, i: number, end: number): number {
  const stop = i + 32 < end ? i + 32 : end;
  while (i < stop) {
    const c = b[i++] as number;
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i;
  }
  if (i >= end) return end;
  for (;;) {
    const q = indexOfByte.call(b, QUOTE, i);
    if (q < 0 || q >= end) return end;
    let k = q - 1;
    while (k >= i && b[k] === BACKSLASH) k--;
    // An even run of backslashes before it (none included): the quote ends the string.
    if (((q - 1 - k) & 1) === 0) return q + 1;
    i = q + 1;
  }
}

/** Whether the string token b[start, stop) (quotes included) holds an escape. */
export function hasEscape(b: Uint8Array, start: number, stop: number): boolean {
  for (let k = start + 1; k < stop - 1; k++) if (b[k] === BACKSLASH) return true;
  return false;
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
    if (c >= 0x7f || c < 0x20 || c === BACKSLASH) return JSON.parse(Buffer.from(b.buffer, b.byteOffset + start, stop - start).toString('utf8')) as string;
  }
  return latin1Slice.call(b, start + 1, stop - 1);
}

// ---------------------------------------------------------------------------
// Numbers

/** The value of the last integer scanInt read. Module-level: the hot loops stay free of result objects. */
let intOut = 0;
export function lastInt(): number {
  return intOut;
}

/**
 * A JSON integer at b[i] (optional minus, no leading zero, no fraction or
 * exponent after it, a safe integer): its value into lastInt(), the index
 * after it; -1 for anything else (a number JSON.parse must read).
 */
export function scanInt(b: Uint8Array, i: number, end: number): number {
  let neg = false;
  if (b[i] === MINUS) {
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

/** scanInt for a non-negative integer only (no minus sign: "-0" is not one). */
export function scanUint(b: Uint8Array, i: number, end: number): number {
  return b[i] === MINUS ? -1 : scanInt(b, i, end);
}

/** End of the JSON number at b[i], or -1 (grammar of RFC 8259). */
export function numberEnd(b: Uint8Array, i: number, end: number): number {
  if (b[i] === MINUS) i++;
  if (b[i] === 0x30) i++;
  else if (isDigit(b[i])) while (i < end && isDigit(b[i])) i++;
  else return -1;
  if (b[i] === 0x2e) {
    i++;
    if (!isDigit(b[i])) return -1;
    while (i < end && isDigit(b[i])) i++;
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    i++;
    if (b[i] === 0x2b || b[i] === MINUS) i++;
    if (!isDigit(b[i])) return -1;
    while (i < end && isDigit(b[i])) i++;
  }
  return i;
}

// ---------------------------------------------------------------------------
// Values

const TRUE = literal('true');
const FALSE = literal('false');
const NULL = literal('null');

/** End of the JSON value at b[i] (after leading whitespace), validated, or -1 (also past MAX_SCAN_DEPTH). */
export function valueEnd(b: Uint8Array, i: number, end: number, depth: number): number {
  i = skipWs(b, i, end);
  const c = b[i];
  if (c === QUOTE) return stringEnd(b, i, end);
  if (c === LBRACE || c === LBRACK) {
    if (depth >= MAX_SCAN_DEPTH) return -1;
    const obj = c === LBRACE;
    const close = obj ? RBRACE : RBRACK;
    i = skipWs(b, i + 1, end);
    if (b[i] === close) return i + 1;
    for (;;) {
      if (obj) {
        i = stringEnd(b, i, end);
        if (i < 0) return -1;
        i = skipWs(b, i, end);
        if (b[i] !== COLON) return -1;
        i++;
      }
      i = valueEnd(b, i, end, depth + 1);
      if (i < 0) return -1;
      i = skipWs(b, i, end);
      const d = b[i];
      if (d === close) return i + 1;
      if (d !== COMMA) return -1;
      i = skipWs(b, i + 1, end);
    }
  }
  if (c === 0x74) return has(b, i, TRUE) && i + 4 <= end ? i + 4 : -1;
  if (c === 0x66) return has(b, i, FALSE) && i + 5 <= end ? i + 5 : -1;
  if (c === 0x6e) return has(b, i, NULL) && i + 4 <= end ? i + 4 : -1;
  return numberEnd(b, i, end);
}

/**
 * End of the value at b[i] (no leading whitespace) in JSON already known to
 * be valid (a frame its writer's checksum or a validating scan vouched
 * for): only its extent is found, at about a compare per byte; -1 when the
 * bytes run out first.
 */
export function skipValidValue(b: Uint8Array, i: number, end: number): number {
  let c = b[i] as number;
  if (c === QUOTE) return looseStringEnd(b, i + 1, end);
  if (c === LBRACE || c === LBRACK) {
    let depth = 0;
    while (i < end) {
      c = b[i++] as number;
      if (c === QUOTE) i = looseStringEnd(b, i, end);
      else if (c === LBRACE || c === LBRACK) depth++;
      else if ((c === RBRACE || c === RBRACK) && --depth === 0) return i;
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  while (i < end) {
    c = b[i] as number;
    if (c === COMMA || c === RBRACE || c === RBRACK || isWs(c)) return i;
    i++;
  }
  return i;
}

// ---------------------------------------------------------------------------
// Walking back: the top-level members of a valid JSON object read from its
// end (the last of a repeated key is the one JSON.parse keeps, and hosts put
// small keys after the large ones).

const lastIndexOfByte = Uint8Array.prototype.lastIndexOf as (this: Uint8Array, value: number, from: number) => number;

/** Whether the quote at b[q] is escaped (an odd run of backslashes before it, none before `start`). */
export function quoteEscaped(b: Uint8Array, q: number, start: number): boolean {
  let k = q - 1;
  while (k >= start && b[k] === BACKSLASH) k--;
  return ((q - 1 - k) & 1) === 1;
}

/** The index of the opening quote of the valid string token whose closing quote is at b[e], or -1 (none at or after `start`). */
export function stringStartBack(b: Uint8Array, e: number, start: number): number {
  let j = e - 1;
  while (j >= start) {
    const q = lastIndexOfByte.call(b, QUOTE, j);
    if (q < start) return -1;
    if (!quoteEscaped(b, q, start)) return q;
    j = q - 1;
  }
  return -1;
}

/** The last index at or before i that is not JSON whitespace (start - 1 at least). */
export function skipWsBack(b: Uint8Array, i: number, start: number): number {
  while (i >= start && isWs(b[i] as number)) i--;
  return i;
}

/** The first index of the valid JSON value whose last byte is b[e], or -1. */
export function valueStartBack(b: Uint8Array, e: number, start: number): number {
  let c = b[e] as number;
  if (c === QUOTE) return stringStartBack(b, e, start);
  if (c === RBRACE || c === RBRACK) {
    let depth = 0;
    let j = e;
    while (j >= start) {
      c = b[j] as number;
      if (c === QUOTE) {
        j = stringStartBack(b, j, start);
        if (j < 0) return -1;
      } else if (c === RBRACE || c === RBRACK) depth++;
      else if ((c === LBRACE || c === LBRACK) && --depth === 0) return j;
      j--;
    }
    return -1;
  }
  // A number, true, false or null: back to the delimiter before it.
  let j = e;
  while (j >= start) {
    c = b[j] as number;
    if (c === COMMA || c === COLON || c === LBRACE || c === LBRACK || isWs(c)) return j + 1;
    j--;
  }
  return -1;
}
