/**
 * Entry-sidecar lines (SPEC section 3): one JSON line per frame, in file
 * order, carrying everything the page planner needs without payloads.
 */
import type { EntryLine } from '../core/types.js';
import { keepShape } from '../core/shape-keeper.js';
import { quoteValue } from '../core/excerpt.js';
import { after, lastInt, literal, plainStringClose, scanUint } from '../core/json-bytes.js';

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
  if (e.v !== 1) return `entry version ${quoteValue(e.v)} is not 1`;
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

const PREFIX = literal('{"v":1,"seq":');
const K_COUNT = literal(',"count":');
const K_OFFSET = literal(',"offset":');
const K_LENGTH = literal(',"length":');
const K_KIND = literal(',"kind":"');
const K_SCHEMA = literal('","schema":');
const K_GROUP = literal(',"group":');

let lastKind = '';
let lastKindBytes: Buffer = Buffer.alloc(0);

/** Fields of the line scanEntryBytes last accepted (module-level: no allocation per line). */
const scanned = { seq: 0, count: 0, offset: 0, length: 0, kindStart: 0, kindEnd: 0, schema: 0, group: -1 };

/**
 * Check that b[start, end) (no newline) is a canonical, valid line and read
 * its fields into `scanned`, allocating nothing; false when it is not (the
 * caller then parses it in full). Accepts exactly what parseEntryBytes does.
 */
function scanEntryBytes(b: Uint8Array, start: number, end: number): boolean {
  const s = scanned;
  let i = after(b, start, PREFIX);
  if (i < 0 || (i = scanUint(b, i, end)) < 0) return false;
  s.seq = lastInt();
  if ((i = after(b, i, K_COUNT)) < 0 || (i = scanUint(b, i, end)) < 0) return false;
  s.count = lastInt();
  if ((i = after(b, i, K_OFFSET)) < 0 || (i = scanUint(b, i, end)) < 0) return false;
  s.offset = lastInt();
  if ((i = after(b, i, K_LENGTH)) < 0 || (i = scanUint(b, i, end)) < 0) return false;
  s.length = lastInt();
  if ((i = after(b, i, K_KIND)) < 0) return false;
  s.kindStart = i;
  if ((i = plainStringClose(b, i, end)) < 0) return false;
  s.kindEnd = i;
  if (s.kindEnd === s.kindStart) return false;
  if ((i = after(b, i, K_SCHEMA)) < 0 || (i = scanUint(b, i, end)) < 0) return false;
  s.schema = lastInt();
  s.group = -1;
  if (b[i] === 0x2c) {
    if ((i = after(b, i, K_GROUP)) < 0 || (i = scanUint(b, i, end)) < 0) return false;
    if (lastInt() > s.seq) return false;
    s.group = lastInt();
  }
  return b[i] === 0x7d && i + 1 === end && s.length !== 0;
}

/** Parse the canonical line b[start, end) (no newline); null when not canonical. */
export function parseEntryBytes(b: Uint8Array, start: number, end: number): EntryLine | null {
  if (!scanEntryBytes(b, start, end)) return null;
  const s = scanned;
  // Kinds repeat line after line: reuse the last string when the bytes match.
  let kind: string;
  const kb = b.subarray(s.kindStart, s.kindEnd);
  if (kb.length === lastKindBytes.length && Buffer.compare(kb, lastKindBytes) === 0) kind = lastKind;
  else {
    kind = Buffer.from(kb).toString('utf8');
    lastKind = kind;
    lastKindBytes = Buffer.from(kb);
  }
  const e: EntryLine = { v: 1, seq: s.seq, count: s.count, offset: s.offset, length: s.length, kind, schema: s.schema };
  if (s.group >= 0) e.group = s.group;
  return e;
}

/**
 * A block of entry lines held as bytes, parsed lazily. The planner walks
 * tens of thousands of lines per large page but needs most of them only for
 * their seq and whether they are counted messages; those are read straight
 * from the canonical bytes (the whole line checked, nothing allocated). Lines
 * in any other form, or damaged, fall back to a full parse, which names the error.
 */
export class ByteLineBlock {
  constructor(
    private readonly buf: Uint8Array,
    private readonly starts: number[],
    private readonly ends: number[],
    /** File offset of buf[0]. */
    private readonly base: number,
    private readonly slow: (text: string, fileOffset: number) => EntryLine,
  ) {
    keepShape(this);
  }

  get length(): number {
    return this.starts.length;
  }

  entry(k: number): EntryLine {
    const s = this.starts[k] as number;
    const e = this.ends[k] as number;
    const fast = parseEntryBytes(this.buf, s, e);
    if (fast !== null) return fast;
    const b = this.buf;
    return this.slow(Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8', s, e), this.base + s);
  }

  /** Line last checked by `canonical` (the planner asks group(k), then seq(k) and offset(k)), its seq and group (-1: none). */
  private checkedK = -1;
  private checkedSeq = 0;
  private checkedGroup = -1;
  private checkedOffset = 0;

  /** Whether line k is canonical and valid (the whole line checked, nothing allocated). */
  private canonical(k: number): boolean {
    if (this.checkedK === k) return true;
    if (!scanEntryBytes(this.buf, this.starts[k] as number, this.ends[k] as number)) return false;
    this.checkedK = k;
    this.checkedSeq = scanned.seq;
    this.checkedGroup = scanned.group;
    this.checkedOffset = scanned.offset;
    return true;
  }

  seq(k: number): number {
    if (this.canonical(k)) return this.checkedSeq;
    return this.entry(k).seq;
  }

  offset(k: number): number {
    if (this.canonical(k)) return this.checkedOffset;
    return this.entry(k).offset;
  }

  /** The group start when the line is a counted message, else undefined. */
  group(k: number): number | undefined {
    if (this.canonical(k)) return this.checkedGroup < 0 ? undefined : this.checkedGroup;
    return this.entry(k).group;
  }

  /** Line k's seq, offset and group (-1: none), as seq(k), offset(k) and group(k) would give them (page-planner.ts EntryLines). */
  fields(k: number, into: Float64Array): void {
    if (this.canonical(k)) {
      into[0] = this.checkedSeq;
      into[1] = this.checkedOffset;
      into[2] = this.checkedGroup < 0 ? -1 : this.checkedGroup;
      return;
    }
    const e = this.entry(k);
    into[0] = e.seq;
    into[1] = e.offset;
    into[2] = e.group ?? -1;
  }

  /** Whether line k is the file's first line (the session header's entry). */
  isFirst(k: number): boolean {
    return this.base + (this.starts[k] as number) === 0;
  }
}
