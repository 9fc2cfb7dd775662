/**
 * A JSONL event frame's message group (SPEC section 5: its group start when
 * it is a counted message, else -1), read from its bytes with as little work
 * as the frame allows. The page workers check every frame's group against
 * the plan's claim (core/frame-claim.ts), so this runs once per event frame
 * of every page: most events are not messages, and are settled by their
 * type token alone; a message without the keys `surfaceOp` and
 * `sourceEventSeqs` anywhere in its bytes is counted from its own seq; only
 * the rest are parsed.
 */
import { countedGroup } from '../main/core/page-rule.js';
import type { SessionEvent } from '../main/core/types.js';
import { tailGroup, UNDECIDED } from './message-group-tail.js';

const USER = Buffer.from('user/message"');
const ASSISTANT = Buffer.from('assistant/message"');
const SURFACE_OP = Buffer.from('"surfaceOp"');
const SOURCES = Buffer.from('"sourceEventSeqs"');

function same(b: Uint8Array, i: number, lit: Buffer): boolean {
  if (i + lit.length > b.length) return false;
  for (let k = 0; k < lit.length; k++) if (b[i + k] !== lit[k]) return false;
  return true;
}

/**
 * Whether the type string whose first character is at b[i] (after its
 * opening quote, escape-free) is `user/message` or `assistant/message`.
 */
export function isMessageTypeAt(b: Uint8Array, i: number): boolean {
  const c = b[i];
  return c === 0x75 ? same(b, i, USER) : c === 0x61 ? same(b, i, ASSISTANT) : false;
}

/** Whether b[start, end) holds either key's token anywhere (when not, neither is a key of the event). */
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

/**
 * The group of a message-typed event frame b[start, end) at seq `seq`,
 * whose keys are spelled literally (the writer's JSON.stringify output, or
 * a frame the validating scanner read, which declines escaped keys):
 * `groupKeys` says whether the event may have either key (unknown: found
 * in its bytes).
 */
export function messageGroup(b: Uint8Array, start: number, end: number, seq: number, groupKeys: boolean): number {
  if (!groupKeys) return seq;
  // Most messages end with their group keys: read them there (message-group-tail.ts), else parse.
  const g = tailGroup(b, start, end, seq);
  return g === UNDECIDED ? parsedGroup(b, start, end) : g;
}
