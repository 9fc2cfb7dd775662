/**
 * What an error line may show of the input: quoted, escaped and cut, so a
 * line of binary garbage, a terminal escape sequence or a 1 MB string never
 * reaches a terminal or a log as it is. Every message that quotes input goes
 * through `quoteInput`; `safeLine` is the last guard on every CLI error line.
 */

/** Characters an excerpt shows at most (before escaping). */
export const EXCERPT_CHARS = 40;

// Controls (C0, DEL, C1), format characters (bidi overrides, zero-width), lone surrogates,
// line/paragraph separators and the replacement character are shown escaped.
const UNSAFE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\uFFFD]/u;

function escapeChar(ch: string): string {
  switch (ch) {
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
  }
  const cp = ch.codePointAt(0) as number;
  return cp <= 0xff ? `\\x${cp.toString(16).padStart(2, '0')}` : cp <= 0xffff ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\u{${cp.toString(16)}}`;
}

/**
 * Decode UTF-8 leniently: valid sequences become their character, every
 * byte of an invalid one becomes `\xNN` (already escaped). Returns escaped
 * pieces, one per shown character, up to `max` of them.
 */
function bytePieces(b: Uint8Array, max: number): { pieces: string[]; complete: boolean } {
  const pieces: string[] = [];
  let i = 0;
  while (i < b.length && pieces.length < max) {
    const c = b[i] as number;
    let need = 0;
    let cp = 0;
    let lo = 0x80;
    let hi = 0xbf;
    if (c < 0x80) {
      cp = c;
    } else if (c >= 0xc2 && c <= 0xdf) {
      need = 1;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      cp = c & 0x0f;
      if (c === 0xe0) lo = 0xa0;
      if (c === 0xed) hi = 0x9f; // no surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      cp = c & 0x07;
      if (c === 0xf0) lo = 0x90;
      if (c === 0xf4) hi = 0x8f;
    } else {
      pieces.push(`\\x${c.toString(16).padStart(2, '0')}`);
      i++;
      continue;
    }
    let ok = i + need < b.length || need === 0;
    for (let k = 1; ok && k <= need; k++) {
      const d = b[i + k] as number;
      if (d < (k === 1 ? lo : 0x80) || d > (k === 1 ? hi : 0xbf)) ok = false;
      else cp = (cp << 6) | (d & 0x3f);
    }
    if (!ok) {
      pieces.push(`\\x${c.toString(16).padStart(2, '0')}`);
      i++;
      continue;
    }
    pieces.push(charPiece(String.fromCodePoint(cp)));
    i += need + 1;
  }
  return { pieces, complete: i >= b.length };
}

function charPiece(ch: string): string {
  if (ch === '"' || ch === '\\') return `\\${ch}`;
  return UNSAFE.test(ch) ? escapeChar(ch) : ch;
}

/**
 * `"…"`: the input's first `max` characters, quoted, with quotes,
 * backslashes, controls and invalid UTF-8 escaped; when cut, followed by
 * `... (N bytes)` or `... (N chars)`.
 */
export function quoteInput(input: string | Uint8Array, max = EXCERPT_CHARS): string {
  let pieces: string[];
  let complete: boolean;
  if (typeof input === 'string') {
    // At most 2 code units per code point: this slice holds the first max + 1 of them.
    const head = Array.from(input.slice(0, 2 * max + 2));
    complete = head.length <= max && input.length <= 2 * max + 2;
    pieces = head.slice(0, max).map(charPiece);
  } else {
    ({ pieces, complete } = bytePieces(input, max));
  }
  const size = typeof input === 'string' ? `${input.length} chars` : `${input.length} bytes`;
  return `"${pieces.join('')}"${complete ? '' : `... (${size})`}`;
}

/** A JSON value named in a message (a type, a kind): strings quoted and cut, the rest as JSON, cut. */
export function quoteValue(v: unknown, max = EXCERPT_CHARS): string {
  if (typeof v === 'string') return quoteInput(v, max);
  if (v === undefined) return 'undefined';
  let text: string;
  try {
    text = JSON.stringify(v) ?? String(v);
  } catch {
    text = String(v);
  }
  return text.length <= max && !UNSAFE.test(text) ? text : quoteInput(text, max);
}

/**
 * V8's JSON.parse messages quote the input raw (`Unexpected token 'x',
 * "…" is not valid JSON`): the reason without that excerpt, the token quoted.
 */
export function jsonErrorReason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const m = /^Unexpected token '([\s\S]*?)', [\s\S]* is not valid JSON$/.exec(msg) ?? /^Unexpected token ([\s\S]) in JSON at position (\d+)/.exec(msg);
  if (m) return `unexpected character ${quoteInput(m[1] as string)}${m[2] !== undefined ? ` at position ${m[2]}` : ''}`;
  const n = /^Unexpected non-whitespace character after JSON at position (\d+)/.exec(msg);
  if (n) return `unexpected data after the JSON value at position ${n[1]}`;
  return safeLine(msg.replace(/^Unexpected/, 'unexpected'));
}

/** One line with no control characters: newlines become spaces, other unsafe characters escaped. */
export function safeLine(msg: string): string {
  let out = '';
  for (const ch of msg.replace(/\s*[\r\n]+\s*/g, ' ')) out += ch !== '\t' && UNSAFE.test(ch) ? escapeChar(ch) : ch;
  return out;
}

/** A name or number from the input shown bare when it is plainly one (`user/message`, `42`), else quoted and cut. */
export function showToken(v: unknown): string {
  if (typeof v === 'string' && /^[A-Za-z0-9][\w./:-]{0,39}$/.test(v)) return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  return quoteValue(v);
}
