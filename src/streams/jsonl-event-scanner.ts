/**
 * Fast path for JSONL event frames that cannot be packed: validate the line
 * as JSON without building it, read its top-level type, seq and time, and
 * let the page path copy the line's bytes into the response as they are.
 * Messages, tool results and request headers are most of a typical page's
 * bytes; parsing them only to serialize them again was most of its cost.
 *
 * Returns null for anything it does not fully validate, and for
 * `assistant/chunk` events that may be deltas (those may join a packed run
 * and must be decoded); callers then take the full decode path.
 */
import { has, hasEscape, lastInt, literal, plainStringClose, same, scanInt, skipWs, stringEnd, valueEnd, QUOTE, type Literal } from '../core/json-bytes.js';
import { ROW_TYPES } from '../core/types.js';
import { isMessageTypeAt } from './message-group.js';

export interface RawEvent {
  seq: number;
  time: number;
  /** The type is `user/message` or `assistant/message` (a counted message unless surfaceOp says otherwise). */
  message: boolean;
  /** Whether the event may have a `surfaceOp` or `sourceEventSeqs` key (its message group then needs a closer look: message-group.ts). */
  groupKeys: boolean;
}

const TYPE_KEY = literal('"type"');
const TYPE_PREFIX = literal('{"type":"');
const SEQ_PREFIX = literal(',"seq":');
const TIME_PREFIX = literal(',"time":');
const SEQ_KEY = literal('"seq"');
const SURFACE_OP_KEY = literal('"surfaceOp"');
const SOURCES_KEY = literal('"sourceEventSeqs"');
const TIME_KEY = literal('"time"');
const CHUNK_TYPE = literal('"assistant/chunk"');

/**
 * Whether an assistant/chunk line b[start, end) may be a delta: it contains
 * "delta", or a \u escape that could spell it. One pass, no allocation: chunk
 * lines are short, and two Buffer#indexOf calls cost more than the scan.
 */
function mayBeDelta(b: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = b[i];
    if (c === 0x64 /* d */ && b[i + 1] === 0x65 && b[i + 2] === 0x6c && b[i + 3] === 0x74 && b[i + 4] === 0x61 && i + 5 <= end) return true;
    if (c === 0x5c /* \ */ && b[i + 1] === 0x75 && i + 2 <= end) return true;
  }
  return false;
}

const rowTypeTokens: Literal[] = [...ROW_TYPES].map((t) => literal(JSON.stringify(t)));
/** Lengths of the row tags' tokens: a type token of another length is no row tag. */
const rowTypeLengths = new Set(rowTypeTokens.map((t) => t.length));

/** The result of the trusted fast path, reused (callers read it at once). */
const trustedEvent: RawEvent = { seq: 0, time: 0, message: false, groupKeys: false };

/**
 * A trusted frame (it matched the writer's CRC) written with type, seq and
 * time first, as hosts send them: read those three and skip the rest.
 * Undefined when the line does not start that way. Once per event frame of
 * every page: no allocation, and the row-tag check only for tokens of a row
 * tag's length.
 */
function trustedPrefix(b: Uint8Array, start: number, end: number): RawEvent | null | undefined {
  if (!has(b, start, TYPE_PREFIX)) return undefined;
  const vs = start + TYPE_PREFIX.length - 1;
  let i = plainStringClose(b, vs + 1, end);
  if (i < 0) return undefined;
  const ve = i + 1;
  if (!has(b, ve, SEQ_PREFIX)) return undefined;
  i = scanInt(b, ve + SEQ_PREFIX.length, end);
  if (i < 0 || lastInt() < 0) return undefined;
  const seq = lastInt();
  if (!has(b, i, TIME_PREFIX)) return undefined;
  i = scanInt(b, i + TIME_PREFIX.length, end);
  if (i < 0 || (b[i] !== 0x2c && b[i] !== 0x7d)) return undefined;
  const time = lastInt();
  if (rowTypeLengths.has(ve - vs)) for (const t of rowTypeTokens) if (same(b, vs, ve, t)) return null;
  if (same(b, vs, ve, CHUNK_TYPE) && mayBeDelta(b, start, end)) return null;
  trustedEvent.seq = seq;
  trustedEvent.time = time;
  // A message may have the group keys (message-group.ts looks for them in its bytes: the
  // writer's JSON.stringify spells every key literally).
  const message = isMessageTypeAt(b, vs + 1);
  trustedEvent.message = message;
  trustedEvent.groupKeys = message;
  return trustedEvent;
}

export function scanJsonlEvent(b: Uint8Array, start: number, end: number, trusted = false): RawEvent | null {
  if (trusted) {
    const t = trustedPrefix(b, start, end);
    if (t !== undefined) return t;
  }
  let i = skipWs(b, start, end);
  if (b[i] !== 0x7b) return null;
  i = skipWs(b, i + 1, end);
  if (b[i] === 0x7d) return null;
  let seq = -1;
  let time: number | undefined;
  let typeOk = false;
  let chunk = false;
  let message = false;
  let groupKeys = false;
  for (;;) {
    const ks = i;
    i = stringEnd(b, i, end);
    if (i < 0) return null;
    const ke = i;
    i = skipWs(b, i, end);
    if (b[i] !== 0x3a) return null;
    i = skipWs(b, i + 1, end);
    const vs = i;
    // Duplicate keys: JSON.parse keeps the last one, and so does this scan.
    if (same(b, ks, ke, SEQ_KEY)) {
      const e = scanInt(b, i, end);
      if (e < 0 || lastInt() < 0) return null;
      seq = lastInt();
      i = e;
    } else if (same(b, ks, ke, TIME_KEY)) {
      const e = scanInt(b, i, end);
      if (e < 0) return null;
      time = lastInt();
      i = e;
    } else {
      i = valueEnd(b, i, end, 1);
      if (i < 0) return null;
      if (same(b, ks, ke, TYPE_KEY)) {
        // A plain (escape-free), non-empty string that is neither a chunk nor a row tag.
        if (b[vs] !== QUOTE || i - vs < 3) return null;
        chunk = same(b, vs, i, CHUNK_TYPE);
        message = isMessageTypeAt(b, vs + 1);
        if (hasEscape(b, vs, i)) return null;
        for (const t of rowTypeTokens) if (same(b, vs, i, t)) return null;
        typeOk = true;
      } else if (same(b, ks, ke, SURFACE_OP_KEY) || same(b, ks, ke, SOURCES_KEY)) {
        groupKeys = true;
      }
    }
    // An escaped key may decode to "type", "seq" or "time": leave such lines to JSON.parse.
    if (hasEscape(b, ks, ke)) return null;
    i = skipWs(b, i, end);
    const d = b[i];
    if (d === 0x7d) {
      i++;
      break;
    }
    if (d !== 0x2c) return null;
    i = skipWs(b, i + 1, end);
  }
  if (skipWs(b, i, end) !== end) return null;
  if (!typeOk || seq < 0 || time === undefined) return null;
  // An assistant/chunk event may be packable only if its chunk type is one of the
  // *-delta types, whose bytes contain "delta" unless spelled with \u escapes.
  // Without either (block starts and ends, usage, finish) it can never join a run.
  if (chunk && mayBeDelta(b, start, end)) return null;
  return { seq, time, message, groupKeys };
}
