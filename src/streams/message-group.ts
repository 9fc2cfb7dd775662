/**
 * A JSONL event frame's message group (SPEC section 5: its group start when
 * it is a counted message, else -1), read from its bytes with as little work
 * as the frame allows. The page workers check every frame's group against
 * the plan's claim (core/frame-claim.ts), so this runs once per event frame
 * of every page: most events are not messages, and are settled by their
 * type token alone; a message without the keys `surfaceOp` and
 * `sourceEventSeqs` anywhere in its bytes is counted from its own seq; the
 * rest have their top-level keys walked from the end (core/json-bytes.ts),
 * never parsed into objects: messages are most of a page's bytes, and
 * JSON.parse of each one that named a key was the largest cost the
 * verification added to a tail page (docs/benchmarks.md).
 */
import { countedGroup } from '../core/page-rule.js';
import type { SessionEvent } from '../core/types.js';
import { COLON, COMMA, has, hasEscape, isWs, LBRACE, LBRACK, literal, MINUS, QUOTE, quoteEscaped, RBRACE, RBRACK, same, skipValidValue, skipWs, skipWsBack, stringStartBack, valueStartBack } from '../core/json-bytes.js';

const USER = literal('user/message"');
const ASSISTANT = literal('assistant/message"');
const SURFACE_OP = Buffer.from('"surfaceOp"');
const SOURCES = Buffer.from('"sourceEventSeqs"');
const SURFACE_OP_KEY = literal('"surfaceOp"');
const SOURCES_KEY = literal('"sourceEventSeqs"');
const APPEND = literal('"append"');
const lastIndexOfByte = Uint8Array.prototype.lastIndexOf as (this: Uint8Array, value: number, from: number) => number;

/**
 * Whether the type string whose first character is at b[i] (after its
 * opening quote, escape-free) is `user/message` or `assistant/message`.
 */
export function isMessageTypeAt(b: Uint8Array, i: number): boolean {
  const c = b[i];
  return c === 0x75 ? has(b, i, USER) : c === 0x61 ? has(b, i, ASSISTANT) : false;
}

/** Whether the frame b[start, end) names `surfaceOp` or `sourceEventSeqs` anywhere (else a message is its own group). */
export function mentionsGroupKeys(b: Uint8Array, start: number, end: number): boolean {
  const frame = Buffer.from(b.buffer, b.byteOffset + start, end - start);
  return frame.indexOf(SURFACE_OP) >= 0 || frame.indexOf(SOURCES) >= 0;
}

/** The group of the JSON event b[start, end), parsed in full; -1 when not a counted message (or not an event). */
export function parsedGroup(b: Uint8Array, start: number, end: number): number {
  const e = JSON.parse(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('utf8')) as SessionEvent;
  return recordGroup(e);
}

/** The group of a decoded record; -1 when not a counted message. */
export function recordGroup(r: SessionEvent): number {
  return countedGroup(r) ?? -1;
}

/** What keysGroup could not settle from the bytes alone: the caller parses the frame. */
const UNSURE = -2;

/** The least element numberArrayEnd last read (Infinity: none). */
let leastOut = Infinity;

/**
 * End (index after its `]`) of the array at b[i] when it holds only
 * integers in plain digits (an assistant message's chunk seqs), their least
 * into leastOut; -1 for any other array (minOfSources reads those).
 */
function numberArrayEnd(b: Uint8Array, i: number, end: number): number {
  let least = Infinity;
  i = skipWs(b, i + 1, end);
  let c = b[i] as number;
  if (c === RBRACK) {
    leastOut = least;
    return i + 1;
  }
  for (;;) {
    if (c < 0x30 || c > 0x39) return -1;
    let v = c - 0x30;
    c = b[++i] as number;
    while (c >= 0x30 && c <= 0x39) {
      v = v * 10 + (c - 0x30);
      c = b[++i] as number;
    }
    if (i >= end) return -1;
    if (v < least && v <= Number.MAX_SAFE_INTEGER) least = v;
    if (c === COMMA) {
      c = b[++i] as number;
      if (isWs(c)) {
        i = skipWs(b, i, end);
        c = b[i] as number;
      }
      continue;
    }
    if (isWs(c)) {
      i = skipWs(b, i, end);
      c = b[i] as number;
    }
    if (c === RBRACK) {
      leastOut = least;
      return i + 1;
    }
    if (c !== COMMA) return -1;
    i = skipWs(b, i + 1, end);
    c = b[i] as number;
  }
}

/** Longest number digitArrayStart reads (a value below 10^15 is exact, and safe, however its digits are summed). */
const MAX_BACK_DIGITS = 15;

/**
 * Start (its `[`) of the array whose `]` is at b[close] when it holds only
 * integers in plain digits, none longer than MAX_BACK_DIGITS (an assistant
 * message's chunk seqs), their least into leastOut; -1 for any other array
 * (numberArrayEnd then reads it forwards, from the nearest `[`). The same
 * grammar as numberArrayEnd's, read backwards in one pass: finding the `[`
 * first (a native backward search of hundreds of digits) and then parsing
 * forwards read every byte twice.
 */
function digitArrayStart(b: Uint8Array, close: number, start: number): number {
  let least = Infinity;
  let i = close - 1;
  while (i >= start && isWs(b[i] as number)) i--;
  if (i < start) return -1;
  if (b[i] === LBRACK) {
    leastOut = least;
    return i;
  }
  for (;;) {
    // A number ending at b[i]: its digits from the last.
    let c = b[i] as number;
    if (c < 0x30 || c > 0x39) return -1;
    let v = 0;
    let unit = 1;
    const last = i;
    do {
      v += (c - 0x30) * unit;
      unit *= 10;
      i--;
      c = b[i] as number;
    } while (i >= start && c >= 0x30 && c <= 0x39);
    if (last - i > MAX_BACK_DIGITS) return -1;
    if (v < least) least = v;
    // Before it: a `[`, or a comma and the number before.
    while (i >= start && isWs(c)) c = b[--i] as number;
    if (i < start) return -1;
    if (c === LBRACK) {
      leastOut = least;
      return i;
    }
    if (c !== COMMA) return -1;
    i--;
    while (i >= start && isWs(b[i] as number)) i--;
    if (i < start) return -1;
  }
}

/**
 * The minimum of `g` and the non-negative safe integers of the JSON array
 * at b[i] (page-rule.ts groupStart; other elements are ignored), or UNSURE
 * for a number in a form this loop does not read (minus, fraction,
 * exponent: JSON.parse decides what those are). A tight digit loop: an
 * assistant message names its hundreds of chunks here.
 */
function minOfSources(b: Uint8Array, i: number, end: number, g: number): number {
  i = skipWs(b, i + 1, end);
  if (b[i] === RBRACK) return g;
  for (;;) {
    let c = b[i] as number;
    if (c >= 0x30 && c <= 0x39) {
      // Valid JSON: the digits stop before the frame's end.
      let v = c - 0x30;
      c = b[++i] as number;
      while (c >= 0x30 && c <= 0x39) {
        v = v * 10 + (c - 0x30);
        c = b[++i] as number;
      }
      if (i >= end || c === 0x2e || c === 0x65 || c === 0x45) return UNSURE;
      // An unsafe integer names no event (and is not read exactly here): ignored, as groupStart does.
      if (v < g && v <= Number.MAX_SAFE_INTEGER) g = v;
    } else if (c === MINUS) {
      return UNSURE;
    } else {
      i = skipValidValue(b, i, end);
      if (i < 0) return UNSURE;
      c = b[i] as number;
    }
    if (c === COMMA) {
      i = skipWs(b, i + 1, end);
      continue;
    }
    if (c === RBRACK) return g;
    i = skipWs(b, i, end);
    c = b[i] as number;
    if (c === RBRACK) return g;
    if (c !== COMMA) return UNSURE;
    i = skipWs(b, i + 1, end);
  }
}

/** A key keysGroup no longer looks for: found (its last occurrence, the one JSON.parse keeps) or proven absent before the walk. */
const SETTLED = -1;
/** A key whose first occurrence in the frame is not looked up yet. */
const UNLOOKED = -2;

/** Where `token` first occurs in b[start, end) (absolute), or SETTLED when nowhere. */
function firstAt(b: Uint8Array, start: number, end: number, token: Buffer): number {
  const at = Buffer.from(b.buffer, b.byteOffset + start, end - start).indexOf(token);
  return at < 0 ? SETTLED : start + at;
}

/**
 * The group of the message event b[start, end) at seq `seq` from its
 * top-level keys, or UNSURE. The frame is valid JSON and its keys are
 * spelled literally (see messageGroup), so its members are walked from the
 * end, skipping values by their extent: the last of a repeated key is the
 * one JSON.parse keeps, hosts write these small keys after the message's
 * body, and the walk stops once neither key is still looked for: each is
 * settled when the walk meets it, or when its token's first occurrence in
 * the bytes lies past the walk (no top-level key of that name can remain
 * before it). The first occurrence is looked up (a scan of the frame) only
 * when the walk is about to skip a value that is not one of these keys'
 * (an object, a number, a literal): a message ending in both keys, as the
 * writer's do, settles them without a scan of its body.
 */
function keysGroup(b: Uint8Array, start: number, end: number, seq: number): number {
  let surfaceFrom = UNLOOKED;
  let sourcesFrom = UNLOOKED;
  let i = skipWsBack(b, end - 1, start);
  if (b[i] !== RBRACE) return UNSURE;
  i = skipWsBack(b, i - 1, start);
  let counted = true;
  let g = seq;
  while (i >= start && b[i] !== LBRACE) {
    // A value neither key would have read from the end (sourceEventSeqs an array, surfaceOp a
    // string, as writers write them): before skipping it, see whether either key can remain.
    if (b[i] !== RBRACK && b[i] !== QUOTE) {
      if (surfaceFrom === UNLOOKED) surfaceFrom = firstAt(b, start, end, SURFACE_OP);
      if (sourcesFrom === UNLOOKED) sourcesFrom = firstAt(b, start, end, SOURCES);
      if (surfaceFrom > i) surfaceFrom = SETTLED;
      if (sourcesFrom > i) sourcesFrom = SETTLED;
    }
    if (surfaceFrom === SETTLED && sourcesFrom === SETTLED) break;
    // The member ending at b[i]: its value, a colon, its key. An array of plain integers is read
    // once, backwards to its '[' (digitArrayStart), or forwards from the nearest '[' when its numbers
    // are longer (sound: no quote or bracket can lie between them).
    const ve = i + 1;
    let vs = -1;
    let least = Infinity;
    if (b[i] === RBRACK) {
      let open = digitArrayStart(b, i, start);
      if (open < 0) {
        open = lastIndexOfByte.call(b, LBRACK, i);
        if (!(open >= start && numberArrayEnd(b, open, ve) === ve)) open = -1;
      }
      if (open >= 0) {
        vs = open;
        least = leastOut;
      }
    }
    if (vs < 0) vs = valueStartBack(b, i, start);
    if (vs < 0) return UNSURE;
    i = skipWsBack(b, vs - 1, start);
    if (b[i] !== COLON) return UNSURE;
    i = skipWsBack(b, i - 1, start);
    if (b[i] !== QUOTE || quoteEscaped(b, i, start)) return UNSURE;
    const ke = i + 1;
    const ks = stringStartBack(b, i, start);
    if (ks < 0) return UNSURE;
    if (surfaceFrom !== SETTLED && same(b, ks, ke, SURFACE_OP_KEY)) {
      // "append" counts; any other value does not (an escaped spelling, rare, is parsed).
      if (b[vs] === QUOTE && hasEscape(b, vs, ve)) return UNSURE;
      counted = same(b, vs, ve, APPEND);
      surfaceFrom = SETTLED;
    } else if (sourcesFrom !== SETTLED && same(b, ks, ke, SOURCES_KEY)) {
      g = seq;
      if (least !== Infinity) g = least < seq ? least : seq;
      else if (b[vs] === LBRACK) {
        g = minOfSources(b, vs, ve, seq);
        if (g === UNSURE) return UNSURE;
      }
      sourcesFrom = SETTLED;
    }
    if (surfaceFrom > ks) surfaceFrom = SETTLED;
    if (sourcesFrom > ks) sourcesFrom = SETTLED;
    i = skipWsBack(b, ks - 1, start);
    if (b[i] === COMMA) i = skipWsBack(b, i - 1, start);
    else if (b[i] !== LBRACE) return UNSURE;
  }
  return counted ? g : -1;
}

/**
 * The group of a message-typed event frame b[start, end) at seq `seq`,
 * whose keys are spelled literally (the writer's JSON.stringify output, or
 * a frame the validating scanner read, which declines escaped keys):
 * `groupKeys` says whether the event may have either key (unknown: found
 * in its bytes).
 */
export function messageGroup(b: Uint8Array, start: number, end: number, seq: number, groupKeys: boolean): number {
  if (!groupKeys) return seq;
  const g = keysGroup(b, start, end, seq);
  return g === UNSURE ? parsedGroup(b, start, end) : g;
}

/**
 * The functions messageGroup runs that V8 compiles on their own (not
 * inlined): the workers' JIT warm-up calls messageGroup until these are
 * optimized (workers/jit-warmup.ts warmUpFrameReaders).
 */
export const GROUP_READERS: readonly ((...args: never[]) => unknown)[] = [keysGroup];
