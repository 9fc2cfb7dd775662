/**
 * Entry-sidecar lines (SPEC section 3): one JSON line per frame, in file
 * order, carrying everything the page planner needs without payloads.
 */
import type { EntryLine } from '../main/core/types.js';

/** Encode with the fixed key order of the spec, newline-terminated. */
export function encodeEntry(e: EntryLine): string {
  const group = e.group === undefined ? '' : `,"group":${e.group}`;
  return `{"v":1,"seq":${e.seq},"count":${e.count},"offset":${e.offset},"length":${e.length},"kind":${JSON.stringify(e.kind)},"schema":${e.schema}${group}}\n`;
}

const isUint = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * Parse one line (without its newline). Returns the entry or a reason it is
 * malformed; never throws.
 */
export function parseEntry(line: string): EntryLine | string {
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    return 'entry line is not JSON';
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return 'entry line is not an object';
  const e = o as Record<string, unknown>;
  if (e.v !== 1) return `entry version ${String(e.v)} is not 1`;
  for (const k of ['seq', 'count', 'offset', 'length', 'schema'] as const) {
    if (!isUint(e[k])) return `entry ${k} is not a non-negative safe integer`;
  }
  if (typeof e.kind !== 'string' || e.kind.length === 0) return 'entry kind is not a string';
  if (e.group !== undefined && (!isUint(e.group) || (e.group as number) > (e.seq as number))) return 'entry group is not a seq at or before the entry';
  if ((e.length as number) === 0) return 'entry length is 0';
  return e as unknown as EntryLine;
}

// ---------------------------------------------------------------------------
// Fast path: the planner parses tens of thousands of lines per large page, and
// JSON.parse is most of that. Lines in the canonical form encodeEntry writes
// are parsed straight from the bytes; any other form (reordered keys,
// whitespace, escapes) falls back to parseEntry, which also names the error.

const PREFIX = Buffer.from('{"v":1,"seq":');
const K_COUNT = Buffer.from(',"count":');
const K_OFFSET = Buffer.from(',"offset":');
const K_LENGTH = Buffer.from(',"length":');
const K_KIND = Buffer.from(',"kind":"');
const K_SCHEMA = Buffer.from('","schema":');
const K_GROUP = Buffer.from(',"group":');

function lit(b: Uint8Array, i: number, l: Buffer): number {
  for (let k = 0; k < l.length; k++) if (b[i + k] !== l[k]) return -1;
  return i + l.length;
}

/** Parse an unsigned decimal at b[i]; returns [value, next index] packed, or -1 on failure. */
let lastValue = 0;
function uint(b: Uint8Array, i: number, end: number): number {
  let v = 0;
  const start = i;
  while (i < end) {
    const c = b[i] as number;
    if (c < 0x30 || c > 0x39) break;
    v = v * 10 + (c - 0x30);
    i++;
  }
  const n = i - start;
  if (n === 0 || n > 15 || (n > 1 && b[start] === 0x30)) return -1;
  lastValue = v;
  return i;
}

let lastKind = '';
let lastKindBytes: Buffer = Buffer.alloc(0);

/** Parse the canonical line b[start, end) (no newline); null when not canonical. */
export function parseEntryBytes(b: Uint8Array, start: number, end: number): EntryLine | null {
  let i = lit(b, start, PREFIX);
  if (i < 0 || (i = uint(b, i, end)) < 0) return null;
  const seq = lastValue;
  if ((i = lit(b, i, K_COUNT)) < 0 || (i = uint(b, i, end)) < 0) return null;
  const count = lastValue;
  if ((i = lit(b, i, K_OFFSET)) < 0 || (i = uint(b, i, end)) < 0) return null;
  const offset = lastValue;
  if ((i = lit(b, i, K_LENGTH)) < 0 || (i = uint(b, i, end)) < 0) return null;
  const length = lastValue;
  if ((i = lit(b, i, K_KIND)) < 0) return null;
  const kindStart = i;
  while (i < end && b[i] !== 0x22) {
    const c = b[i] as number;
    if (c === 0x5c || c < 0x20) return null;
    i++;
  }
  const kindEnd = i;
  if (kindEnd === kindStart) return null;
  // Kinds repeat line after line: reuse the last string when the bytes match.
  let kind: string;
  const kb = b.subarray(kindStart, kindEnd);
  if (kb.length === lastKindBytes.length && Buffer.compare(kb, lastKindBytes) === 0) kind = lastKind;
  else {
    kind = Buffer.from(kb).toString('utf8');
    lastKind = kind;
    lastKindBytes = Buffer.from(kb);
  }
  if ((i = lit(b, i, K_SCHEMA)) < 0 || (i = uint(b, i, end)) < 0) return null;
  const schema = lastValue;
  const e: EntryLine = { v: 1, seq, count, offset, length, kind, schema };
  if (b[i] === 0x2c) {
    if ((i = lit(b, i, K_GROUP)) < 0 || (i = uint(b, i, end)) < 0) return null;
    if (lastValue > seq) return null;
    e.group = lastValue;
  }
  if (b[i] !== 0x7d || i + 1 !== end || length === 0) return null;
  return e;
}
