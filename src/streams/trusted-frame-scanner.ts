/**
 * Trusted frames: a JSONL frame whose bytes match the writer's chained CRC
 * (frame-crc-file.ts) is exactly what the writer wrote, so its layout is
 * known to the byte. The writer frames every append through packBatch and
 * JSON.stringify (batch-encoder.ts), which gives three shapes:
 *
 * - a packed row, built by runToRow:
 *     {"type":"<kind>-chunks","seq0":S,"time0":T,"data":{"turn":U,"step":P,
 *      "index":I[,"id":"…"[,"name":"…"]],"dt":[…],"texts"|"args":[…]}}
 *   or, for a tool call, with `"id"` and `"name"` after `"dt"`: the order
 *   dsh writes, kept by an import, whose frames get checksum records where
 *   their bytes are JSON.stringify's (maintenance/checksum-build.ts);
 * - a delta event of a run too short to pack, built by chunkEvent:
 *     {"type":"assistant/chunk","seq":S,"time":T,"data":{"turn":U,"step":P,
 *      "chunk":{"type":"<kind>-delta","index":I,("text"|"id"[,"name"],"argumentsDelta"):"…"}}}
 *   read as a one-member row. Every packable event takes that layout, so a
 *   trusted `assistant/chunk` event in any other layout can join no run.
 * - any other event, as the host sent it.
 *
 * Reading one is a walk over the literals, the integers and (rows) the gap
 * digits, with no allocation for a row that continues the previous one's
 * block: a tail page holds ~15,000 row frames, and a typical page hundreds
 * of events, so the fixed cost per frame is what counts. Member lists and
 * event bodies are never read. A frame in any other layout (another writer,
 * host key orders this walk does not know) is left to the general scanners
 * (jsonl-row-scanner.ts, jsonl-event-scanner.ts), which read every frame
 * this one reads exactly as this one does (tested).
 */
import type { RunKey } from '../core/chunk-codec.js';
import { partialSumsSafe, type RawRow } from './jsonl-row-scanner.js';
import { COMMA, decodeString, has, lastInt, literal as lit, MINUS, plainStringClose, QUOTE, RBRACE, RBRACK, scanInt, stringEnd, type Literal } from '../core/json-bytes.js';

// The writer's literals (json-bytes.ts compares them four bytes per load).
const TEXT = lit('{"type":"text-chunks","seq0":');
const REASONING = lit('{"type":"reasoning-chunks","seq0":');
const TOOL = lit('{"type":"tool-call-chunks","seq0":');
const TIME0 = lit(',"time0":');
const TURN = lit(',"data":{"turn":');
const STEP = lit(',"step":');
const INDEX = lit(',"index":');
const ID = lit(',"id":');
const NAME = lit(',"name":');
const DT = lit(',"dt":[');
const TEXTS = lit('],"texts":[');
const ARGS = lit('],"args":[');
/** The members' key after a tool call's id and name, where those follow its gaps (dsh's order). */
const ARGS_AFTER_IDS = lit(',"args":[');

/**
 * A JSON string token decoded, remembering the last one per slot: a tool call's
 * rows repeat its id and name in every frame, and decoding them (JSON.parse)
 * was the largest cost of a tool-call row. Comparing the bytes is cheap.
 */
class TokenCache {
  /** The token's bytes in [0, rawLength): a buffer of its own, reused (a view would keep the whole slice's bytes alive). */
  private raw = new Uint8Array(64);
  private rawLength = -1;
  private value = '';

  decode(b: Uint8Array, start: number, end: number): string {
    const n = end - start;
    let raw = this.raw;
    if (this.rawLength === n) {
      let k = 0;
      while (k < n && raw[k] === b[start + k]) k++;
      if (k === n) return this.value;
    }
    // A new token (each tool call's first frame): copied into the kept buffer by a byte loop,
    // not sliced off (a new array each time, through the builtin's generic path).
    if (raw.length < n) this.raw = raw = new Uint8Array(Math.max(n, 2 * raw.length));
    for (let k = 0; k < n; k++) raw[k] = b[start + k] as number;
    this.rawLength = n;
    this.value = decodeString(b, start, end);
    return this.value;
  }
}

const ids = new TokenCache();
const names = new TokenCache();

/** The id and name toolIdentity read last. */
let toolId: string | undefined;
let toolName: string | undefined;

/** A tool call's `,"id":"…"[,"name":"…"]` at b[i] into toolId and toolName: the index after it, or -1. */
function toolIdentity(b: Uint8Array, i: number, end: number): number {
  if (!has(b, i, ID)) return -1;
  i += ID.length;
  let e = stringEnd(b, i, end);
  if (e < 0) return -1;
  toolId = ids.decode(b, i, e);
  i = e;
  if (!has(b, i, NAME)) return i;
  i += NAME.length;
  e = stringEnd(b, i, end);
  if (e < 0) return -1;
  toolName = names.decode(b, i, e);
  return e;
}

/** A run key in one object shape (id and name always present, undefined when absent), so the key checks stay monomorphic. */
function newKey(kind: RunKey['kind'], turn: number, step: number, index: number, id: string | undefined, name: string | undefined): RunKey {
  return { kind, turn, step, index, id, name };
}

/** The last key handed out: consecutive frames of one block share it (no allocation per frame). */
let lastKey: RunKey = newKey('text', -1, -1, -1, undefined, undefined);

function keyOf(kind: RunKey['kind'], turn: number, step: number, index: number, id: string | undefined, name: string | undefined): RunKey {
  const k = lastKey;
  if (k.kind === kind && k.turn === turn && k.step === step && k.index === index && k.id === id && k.name === name) return k;
  lastKey = newKey(kind, turn, step, index, id, name);
  return lastKey;
}

/** The result, reused by every call: valid until the next call (callers consume it at once). */
const row: RawRow = { key: lastKey, seq0: 0, time0: 0, n: 0, dtSum: 0, buf: new Uint8Array(0), dtStart: 0, dtEnd: 0, membersStart: 0, membersEnd: 0 };

// The literals of a delta event in chunkEvent's layout.
const CHUNK = lit('{"type":"assistant/chunk","seq":');
const TIME = lit(',"time":');
const CHUNK_TYPE = lit(',"chunk":{"type":"');
const TEXT_DELTA = lit('text-delta","index":');
const REASONING_DELTA = lit('reasoning-delta","index":');
const TOOL_DELTA = lit('tool-call-delta","index":');
const TEXT_KEY = lit(',"text":');
const ARGS_KEY = lit(',"argumentsDelta":');

/**
 * The rest of a delta event whose seq ended at b[i], into `row` as a
 * one-member row (its member token is copied like a stored row's, never
 * parsed). False when the event is in no delta layout: exactly the
 * packable shape, as the literals fix every key and the frame must end
 * right after the member.
 */
function scanTrustedDelta(b: Uint8Array, i: number, seq: number, end: number): boolean {
  // The member string closes right before the three braces (its end is checked below): a
  // chunk ending otherwise (a block's end, usage, finish: an object closes there) is no delta,
  // told before its time, turn and step are read.
  if (b[end - 1] !== RBRACE || b[end - 2] !== RBRACE || b[end - 3] !== RBRACE || b[end - 4] !== QUOTE) return false;
  if (!has(b, i, TIME) || (i = scanInt(b, i + TIME.length, end)) < 0) return false;
  const time = lastInt();
  if (!has(b, i, TURN) || (i = scanInt(b, i + TURN.length, end)) < 0) return false;
  const turn = lastInt();
  if (!has(b, i, STEP) || (i = scanInt(b, i + STEP.length, end)) < 0) return false;
  const step = lastInt();
  if (!has(b, i, CHUNK_TYPE)) return false;
  i += CHUNK_TYPE.length;
  // The chunk type's first letters pick the one delta type it can be (block starts and ends, usage, finish: none).
  const c = b[i];
  const delta = c === 0x72 ? REASONING_DELTA : c !== 0x74 ? null : b[i + 1] === 0x65 ? TEXT_DELTA : TOOL_DELTA;
  if (delta === null || !has(b, i, delta) || (i = scanInt(b, i + delta.length, end)) < 0) return false;
  const index = lastInt();
  const kind: RunKey['kind'] = delta === TEXT_DELTA ? 'text' : delta === REASONING_DELTA ? 'reasoning' : 'tool';
  toolId = undefined;
  toolName = undefined;
  if (kind === 'tool' && (i = toolIdentity(b, i, end)) < 0) return false;
  const key = kind === 'tool' ? ARGS_KEY : TEXT_KEY;
  if (!has(b, i, key)) return false;
  const membersStart = i + key.length;
  const membersEnd = stringEnd(b, membersStart, end);
  if (membersEnd !== end - 3) return false;
  row.key = keyOf(kind, turn, step, index, toolId, toolName);
  row.seq0 = seq;
  row.time0 = time;
  row.n = 1;
  row.dtSum = 0;
  row.buf = b;
  row.dtStart = membersStart;
  row.dtEnd = membersStart;
  row.membersStart = membersStart;
  row.membersEnd = membersEnd;
  return true;
}

/**
 * The functions a trusted frame's read runs that V8 compiles on their own (scanTrustedDelta is
 * too large to inline): the workers' JIT warm-up calls scanTrustedFrame until these are
 * optimized (workers/jit-warmup.ts warmUpFrameReaders). A delta event's read left to a tail page
 * was compiled beside its decode (~10 ms of a helper thread, traced: docs/benchmarks.md, "ready,
 * second round (eleventh session)").
 */
export const TRUSTED_READERS: readonly ((...args: never[]) => unknown)[] = [
  scanTrustedFrame,
  scanTrustedDelta,
  // A tool frame's identity reader: compiled on its own too, and left to the first real pages by
  // one worker in two of the fourteenth session's traced starts (docs/benchmarks.md, "same, second
  // round (fourteenth session)"): the warm-up's tool frames call it, so it has feedback by then.
  toolIdentity,
];

/** What scanTrustedFrame found (a small integer, so the caller's branch stays monomorphic). */
export const OTHER_LAYOUT = 0;
/** A row, or a delta event as a one-member row: read it from `trustedRow`. */
export const TRUSTED_ROW = 1;
/** An event that joins no run: its seq is `trustedEventSeq()`, its bytes are copied as they are. */
export const TRUSTED_EVENT = 2;

/** The row found by the last scanTrustedFrame that returned TRUSTED_ROW (reused: consume it at once). */
export const trustedRow: RawRow = row;

let eventSeq = 0;
/** The seq of the event found by the last scanTrustedFrame that returned TRUSTED_EVENT. */
export function trustedEventSeq(): number {
  return eventSeq;
}

const TYPE_PREFIX = lit('{"type":"');
const SEQ = lit(',"seq":');

/**
 * Read the trusted JSONL frame `b[start, end)` (end excludes the newline)
 * in the writer's layout: TRUSTED_ROW, TRUSTED_EVENT, or OTHER_LAYOUT when
 * the general scanners must read it.
 */
export function scanTrustedFrame(b: Uint8Array, start: number, end: number): number {
  if (!has(b, start, TYPE_PREFIX)) return OTHER_LAYOUT;
  // The type's first letter picks the candidates: a(ssistant/chunk), r(easoning-chunks), t(ext-chunks, ool-call-chunks).
  const c = b[start + TYPE_PREFIX.length];
  if (c === 0x61 && has(b, start, CHUNK)) {
    const i = scanInt(b, start + CHUNK.length, end);
    if (i < 0 || lastInt() < 0) return OTHER_LAYOUT;
    const seq = lastInt();
    if (scanTrustedDelta(b, i, seq, end)) return TRUSTED_ROW;
    if (b[i] !== COMMA && b[i] !== RBRACE) return OTHER_LAYOUT;
    eventSeq = seq;
    return TRUSTED_EVENT;
  }
  if (c === 0x72 || c === 0x74) {
    // Row tags are reserved (no event has one): a frame starting with one is a row or another layout.
    const type = c === 0x72 ? REASONING : b[start + 10] === 0x65 ? TEXT : TOOL;
    if (has(b, start, type)) return scanRow(b, start, end, type) ? TRUSTED_ROW : OTHER_LAYOUT;
  }
  // Any other event: its type (escape-free), then its seq.
  let i = start + TYPE_PREFIX.length;
  i = plainStringClose(b, i, end);
  if (i < 0 || !has(b, i + 1, SEQ)) return OTHER_LAYOUT;
  i = scanInt(b, i + 1 + SEQ.length, end);
  if (i < 0 || lastInt() < 0 || (b[i] !== COMMA && b[i] !== RBRACE)) return OTHER_LAYOUT;
  eventSeq = lastInt();
  return TRUSTED_EVENT;
}

/**
 * A trusted packed row of block `key` whose row metadata the writer recorded
 * (frame-meta-file.ts: time0, gap sum, member count, where its gaps start
 * and end), into `trustedRow` without reading its header or gaps: only its
 * type literal and seq0, which the decoder checks against the sidecar.
 * False when the frame does not start as a row of that kind.
 */
export function continuedRow(b: Uint8Array, start: number, end: number, key: RunKey, time0: number, dtSum: number, n: number, dtStart: number, dtEnd: number): boolean {
  const type = key.kind === 'text' ? TEXT : key.kind === 'reasoning' ? REASONING : TOOL;
  if (!has(b, start, type)) return false;
  const i = scanInt(b, start + type.length, end);
  if (i < 0) return false;
  row.key = key;
  row.seq0 = lastInt();
  row.time0 = time0;
  row.n = n;
  row.dtSum = dtSum;
  row.buf = b;
  row.dtStart = start + dtStart;
  row.dtEnd = start + dtEnd;
  let membersStart = start + dtEnd + (key.kind === 'tool' ? ARGS.length : TEXTS.length);
  // A tool call's id and name after its gaps (dsh's order): the block's own, so only their extent is read.
  if (key.kind === 'tool' && !has(b, start + dtEnd, ARGS) && (membersStart = skipToolIdentity(b, start + dtEnd + 1, end)) < 0) return false;
  row.membersStart = membersStart;
  row.membersEnd = end - 3;
  return true;
}

/** Past `,"id":"…"[,"name":"…"],"args":[` at b[i]: where the members start, or -1. */
function skipToolIdentity(b: Uint8Array, i: number, end: number): number {
  if (!has(b, i, ID) || (i = stringEnd(b, i + ID.length, end)) < 0) return -1;
  if (has(b, i, NAME) && (i = stringEnd(b, i + NAME.length, end)) < 0) return -1;
  return has(b, i, ARGS_AFTER_IDS) ? i + ARGS_AFTER_IDS.length : -1;
}

/** A packed row whose type literal `type` starts at b[start], into `row`; false when it is in another layout. */
function scanRow(b: Uint8Array, start: number, end: number, type: Literal): boolean {
  if (b[end - 1] !== RBRACE || b[end - 2] !== RBRACE || b[end - 3] !== RBRACK) return false;
  const kind: RunKey['kind'] = type === TEXT ? 'text' : type === REASONING ? 'reasoning' : 'tool';
  let i = scanInt(b, start + type.length, end);
  if (i < 0) return false;
  const seq0 = lastInt();
  if (!has(b, i, TIME0) || (i = scanInt(b, i + TIME0.length, end)) < 0) return false;
  const time0 = lastInt();
  if (!has(b, i, TURN) || (i = scanInt(b, i + TURN.length, end)) < 0) return false;
  const turn = lastInt();
  if (!has(b, i, STEP) || (i = scanInt(b, i + STEP.length, end)) < 0) return false;
  const step = lastInt();
  if (!has(b, i, INDEX) || (i = scanInt(b, i + INDEX.length, end)) < 0) return false;
  const index = lastInt();
  toolId = undefined;
  toolName = undefined;
  // A tool call's id and name: before its gaps (runToRow's order), or after them (dsh's, kept by import).
  const idsFirst = kind === 'tool' && has(b, i, ID);
  if (idsFirst && (i = toolIdentity(b, i, end)) < 0) return false;
  if (!has(b, i, DT)) return false;
  i += DT.length;
  // The gaps: the only per-member bytes read.
  const dtStart = i;
  let count = 0;
  let sum = 0;
  let abs = 0;
  if (b[i] !== RBRACK) {
    // One gap per turn: a tight loop over its digits, then the separator (a tail page
    // reads ~416,000 gaps, mostly one digit each, and this loop is most of its scan).
    for (;;) {
      let c = b[i] as number;
      if (b[i + 1] === COMMA && c >= 0x30 && c <= 0x39) {
        // A one-digit gap, the most common by far.
        count++;
        sum += c - 0x30;
        abs += c - 0x30;
        i += 2;
        continue;
      }
      const neg = c === MINUS;
      if (neg) c = b[++i] as number;
      if (c < 0x30 || c > 0x39) return false;
      let v = c - 0x30;
      c = b[++i] as number;
      while (c >= 0x30 && c <= 0x39) {
        v = v * 10 + (c - 0x30);
        c = b[++i] as number;
      }
      if (v > Number.MAX_SAFE_INTEGER) return false;
      count++;
      sum += neg ? -v : v;
      abs += v;
      if (c === COMMA) {
        i++;
        continue;
      }
      if (c !== RBRACK) return false;
      break;
    }
  }
  const dtEnd = i;
  let members = kind === 'tool' ? ARGS : TEXTS;
  if (kind === 'tool' && !idsFirst) {
    if ((i = toolIdentity(b, i + 1, end)) < 0) return false;
    members = ARGS_AFTER_IDS;
  }
  if (!has(b, i, members)) return false;
  const membersStart = i + members.length;
  const membersEnd = end - 3;
  const n = count + 1;
  if (seq0 < 0 || membersEnd <= membersStart || !Number.isSafeInteger(seq0 + (n - 1)) || !Number.isSafeInteger(time0 + sum)) return false;
  // As the general scanner: every running sum of the gaps, and every member time, must be safe
  // (always so while the sum of |gaps| and |time0| stay small).
  if (abs > Number.MAX_SAFE_INTEGER && !partialSumsSafe(b, dtStart, dtEnd, 0)) return false;
  if (Math.abs(time0) + abs > 2 ** 52 && !partialSumsSafe(b, dtStart, dtEnd, time0)) return false;
  // Field by field, not through a shared setter: one measured 5-10% slower on a tail page's rows.
  row.key = keyOf(kind, turn, step, index, toolId, toolName);
  row.seq0 = seq0;
  row.time0 = time0;
  row.n = n;
  row.dtSum = sum;
  row.buf = b;
  row.dtStart = dtStart;
  row.dtEnd = dtEnd;
  row.membersStart = membersStart;
  row.membersEnd = membersEnd;
  return true;
}
