/**
 * A message event's group start read from the end of its bytes, without
 * parsing it. Hosts write `surfaceOp` and `sourceEventSeqs` as the event's
 * last keys (`…},"sourceEventSeqs":[9,10,11],"surfaceOp":"append"}`), and
 * most messages carry them, so the general path (message-group.ts: a full
 * JSON.parse of the event, kilobytes of content) ran for most message
 * frames of a page.
 *
 * Why reading the tail is sound, for a frame that is valid JSON (a trusted
 * or scanned frame): the frame's last byte `}` closes the top-level object.
 * A literal `,"k":` whose quotes follow `,` and precede `:` cannot sit
 * inside a string (an inner quote is escaped, so preceded by `\`, and an
 * unescaped one would end the string where valid JSON cannot go on with a
 * letter), so each matched token here is structural, and the members matched
 * back from the last `}` are members of the top-level object, the last ones.
 * JSON.parse keeps the last of duplicate keys, so a trailing
 * `"surfaceOp":"append"` decides that key; `sourceEventSeqs` is decided
 * only when its token occurs nowhere else in the bytes (then it is this
 * member, or absent when it occurs nowhere at all), and `surfaceOp` is
 * absent only when its token occurs nowhere. Anything else (other values,
 * other orders, numbers that are not plain digits) is left UNDECIDED for the
 * full parse.
 */

/** The tail does not decide: parse the event. */
export const UNDECIDED = -2;

const SURFACE_APPEND = Buffer.from(',"surfaceOp":"append"');
const SOURCES_MEMBER = Buffer.from(',"sourceEventSeqs":[');
const SURFACE_OP = Buffer.from('"surfaceOp"');
const SOURCES = Buffer.from('"sourceEventSeqs"');

const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const ZERO = 0x30;
const NINE = 0x39;

function same(b: Uint8Array, i: number, lit: Buffer): boolean {
  for (let k = 0; k < lit.length; k++) if (b[i + k] !== lit[k]) return false;
  return true;
}

/**
 * The group start of the counted message event b[start, end) (its last byte
 * the object's `}`) whose seq is `seq`: the minimum of `seq` and its
 * `sourceEventSeqs`, when its tail says it is counted (`surfaceOp` absent
 * or "append"); UNDECIDED when the tail does not settle it.
 */
export function tailGroup(b: Uint8Array, start: number, end: number, seq: number): number {
  let p = end - 1;
  if (p <= start || b[p] !== CLOSE_BRACE) return UNDECIDED;
  let appendLast = false;
  if (p - SURFACE_APPEND.length > start && same(b, p - SURFACE_APPEND.length, SURFACE_APPEND)) {
    appendLast = true;
    p -= SURFACE_APPEND.length;
  }
  let group = seq;
  let sourcesAt = -1;
  if (b[p - 1] === CLOSE_BRACKET) {
    // Plain non-negative integers back to the array's `[` (JSON.stringify's spelling of safe integers).
    let q = p - 2;
    let value = 0;
    let scale = 1;
    let digits = 0;
    let lead = 0;
    for (; q > start; q--) {
      const c = b[q] as number;
      if (c >= ZERO && c <= NINE) {
        if (++digits > 15) return UNDECIDED;
        value += (c - ZERO) * scale;
        scale *= 10;
        lead = c;
        continue;
      }
      if (c !== COMMA && c !== OPEN_BRACKET) return UNDECIDED;
      if (digits === 0) {
        if (c === OPEN_BRACKET && q === p - 2) break; // []
        return UNDECIDED;
      }
      if (lead === ZERO && digits > 1) return UNDECIDED;
      if (value < group) group = value;
      value = 0;
      scale = 1;
      digits = 0;
      if (c === OPEN_BRACKET) break;
    }
    const key = q + 1 - SOURCES_MEMBER.length;
    if (key <= start || !same(b, key, SOURCES_MEMBER)) return UNDECIDED;
    sourcesAt = key + 1;
  }
  const frame = Buffer.from(b.buffer, b.byteOffset + start, end - start);
  if (!appendLast && frame.indexOf(SURFACE_OP) >= 0) return UNDECIDED;
  const firstSources = frame.indexOf(SOURCES);
  if (firstSources >= 0 && start + firstSources !== sourcesAt) return UNDECIDED;
  return group;
}
