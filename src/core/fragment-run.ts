/**
 * Chunk runs held as JSON fragments instead of arrays, pure. This is the
 * page path's representation of a run: members are JSON string tokens
 * (copied from stored rows byte for byte, or serialized once), time gaps are
 * JSON numbers. Workers write them into byte sinks (slice-encoder.ts); the
 * assembler merges the few runs that cross slice edges as lists of pieces.
 * Both write settled runs out with the same row framing (or as plain events
 * when a run is shorter than MIN_PACKED_RUN), without ever materializing one
 * JS string per member.
 */
import { ByteSink } from './byte-sink.js';
import { MIN_PACKED_RUN, rowTypeOf, type RunKey } from './chunk-codec.js';
import { isWs, stringEnd } from './json-bytes.js';

/** A JSON fragment: bytes, or a string to be UTF-8 encoded at output. */
export type Piece = Uint8Array | string;

export interface FragRun extends RunKey {
  seq0: number;
  time0: number;
  lastSeq: number;
  lastTime: number;
  n: number;
  /** n - 1 gaps, as comma-joinable non-empty pieces. */
  dt: Piece[];
  /** n member tokens, as comma-joinable non-empty pieces. */
  members: Piece[];
}

/** Append a comma-joinable piece; adjacent strings are joined (cheap ropes in V8) to keep piece counts low. */
function pushPiece(pieces: Piece[], p: Piece): void {
  const last = pieces.length - 1;
  if (typeof p === 'string' && last >= 0 && typeof pieces[last] === 'string') pieces[last] = `${pieces[last] as string},${p}`;
  else pieces.push(p);
}

/** Append run `b` (which continues `a`) to `a`. */
export function mergeInto(a: FragRun, b: FragRun): void {
  pushPiece(a.dt, String(b.time0 - a.lastTime));
  for (const p of b.dt) pushPiece(a.dt, p);
  for (const p of b.members) pushPiece(a.members, p);
  a.n += b.n;
  a.lastSeq = b.lastSeq;
  a.lastTime = b.lastTime;
}

const COMMA = ',';

function joined(pieces: Piece[], out: Piece[]): void {
  pieces.forEach((p, i) => {
    if (i > 0) out.push(COMMA);
    out.push(p);
  });
}

/** A packed row record up to its gap list: `{"chunks":{…,"data":{…,"dt":[`. */
export function packedRowHead(run: RunKey & { seq0: number; time0: number }): string {
  let pre = `{"chunks":{"type":"${rowTypeOf(run.kind)}","seq0":${run.seq0},"time0":${run.time0},"data":{"turn":${run.turn},"step":${run.step},"index":${run.index}`;
  if (run.kind === 'tool') {
    pre += `,"id":${JSON.stringify(run.id)}`;
    if (run.name !== undefined) pre += `,"name":${JSON.stringify(run.name)}`;
  }
  return pre + ',"dt":[';
}

/**
 * packedRowHead's bytes written into `body` (the worker's encoder, once per settled row): the
 * literals and numbers as bytes, a tool call's id and name as JSON.stringify spells them (ByteSink#json); building
 * the head as a string first cost its numbers' conversions, the concatenation and the UTF-8
 * encode of the whole.
 */
export function writePackedRowHead(body: ByteSink, run: RunKey & { seq0: number; time0: number }): void {
  const kind = run.kind;
  if (kind === 'text' || kind === 'reasoning' || kind === 'tool') body.ascii(kind === 'text' ? TEXT_ROW_HEAD : kind === 'reasoning' ? REASONING_ROW_HEAD : TOOL_ROW_HEAD);
  else body.text(`{"chunks":{"type":"${rowTypeOf(kind)}","seq0":`);
  body.int(run.seq0);
  body.ascii(',"time0":');
  body.int(run.time0);
  body.ascii(',"data":{"turn":');
  body.int(run.turn);
  body.ascii(',"step":');
  body.int(run.step);
  body.ascii(',"index":');
  body.int(run.index);
  if (kind === 'tool') writeToolIdName(body, run);
  body.ascii(',"dt":[');
}

/** A tool call's `,"id":…` and, when it has one, `,"name":…` (a row's head and a member's chunk alike). */
function writeToolIdName(body: ByteSink, run: RunKey): void {
  body.ascii(',"id":');
  body.json(run.id);
  if (run.name !== undefined) {
    body.ascii(',"name":');
    body.json(run.name);
  }
}

const TEXT_ROW_HEAD = `{"chunks":{"type":"${rowTypeOf('text')}","seq0":`;
const REASONING_ROW_HEAD = `{"chunks":{"type":"${rowTypeOf('reasoning')}","seq0":`;
const TOOL_ROW_HEAD = `{"chunks":{"type":"${rowTypeOf('tool')}","seq0":`;

/** Between a packed row record's gap list and its member list. */
export function packedRowMiddle(kind: RunKey['kind']): string {
  return kind === 'tool' ? '],"args":[' : '],"texts":[';
}

export const PACKED_ROW_END = ']}}}';

/** A settled run as the short-run writer needs it. */
export type ShortRun = RunKey & { seq0: number; time0: number; n: number };

const COMMA_BYTE = 0x2c;
const MINUS_BYTE = 0x2d;

/**
 * A settled run of one or two members (fewer than MIN_PACKED_RUN) as event
 * records in chunkEvent's layout, written as bytes, each member token copied
 * as it was stored (a typical page holds dozens; parsing and re-serializing
 * them was a tenth of its decode). `dt`: its one gap (two members), `members`:
 * its comma-joined tokens (a hand-formatted row may have whitespace around
 * the comma). The one writer of short runs: the worker's encoder calls it
 * for a run inside a slice, the assembler for a run at a slice's edge, so a
 * page's bytes do not depend on where it was cut (its strong ETag names only
 * its parameters; docs/decisions.md, "A page's bytes do not depend on how it
 * was cut").
 */
export function writeShortRun(body: ByteSink, run: ShortRun, dt: ByteSink, members: ByteSink): void {
  const m = members.buf;
  const len = members.length;
  // Two members: the first token ends at its closing quote; the second starts after the comma.
  const firstEnd = run.n === 2 ? stringEnd(m, 0, len) : len;
  let second = firstEnd;
  while (second < len && m[second] !== COMMA_BYTE) second++;
  second++;
  while (second < len && isWs(m[second] as number)) second++;
  const gap = run.n === 2 ? gapOf(dt) : 0;
  // Literals and numbers written as bytes (see writePackedRowHead): a typical page holds dozens of these events.
  for (let k = 0; k < run.n; k++) {
    if (k > 0) body.byte(COMMA_BYTE);
    body.ascii('{"event":{"type":"assistant/chunk","seq":');
    body.int(run.seq0 + k);
    body.ascii(',"time":');
    body.int(run.time0 + (k > 0 ? gap : 0));
    body.ascii(',"data":{"turn":');
    body.int(run.turn);
    body.ascii(',"step":');
    body.int(run.step);
    body.ascii(',"chunk":');
    writeChunkPrefix(body, run);
    if (k === 0) body.bytes(m, 0, firstEnd);
    else body.bytes(m, second, len);
    body.ascii('}}}}');
  }
}

/** The one gap a two-member run's `dt` holds, as `Number` reads its JSON: plain digits (the writer's) read here, anything else by Number. */
function gapOf(dt: ByteSink): number {
  const b = dt.buf;
  const n = dt.length;
  const neg = n > 0 && b[0] === MINUS_BYTE;
  const from = neg ? 1 : 0;
  // Up to 15 digits: exact in a double; a leading zero ("05") is left to Number, which reads it too.
  if (n - from < 1 || n - from > 15 || (b[from] === 0x30 && n - from > 1)) return Number(dt.toString());
  let v = 0;
  for (let i = from; i < n; i++) {
    const c = b[i] as number;
    if (c < 0x30 || c > 0x39) return Number(dt.toString());
    v = v * 10 + (c - 0x30);
  }
  return neg ? -v : v;
}

/** A delta chunk object up to its member value: `{"type":"…-delta","index":I,` then the member's key, as chunkEvent lays it out. */
function writeChunkPrefix(body: ByteSink, run: RunKey): void {
  const kind = run.kind;
  if (kind !== 'tool') {
    if (kind === 'text' || kind === 'reasoning') body.ascii(kind === 'text' ? '{"type":"text-delta","index":' : '{"type":"reasoning-delta","index":');
    else body.text(`{"type":"${kind}-delta","index":`);
    body.int(run.index);
    body.ascii(',"text":');
    return;
  }
  body.ascii('{"type":"tool-call-delta","index":');
  body.int(run.index);
  writeToolIdName(body, run);
  body.ascii(',"argumentsDelta":');
}

/** Comma-joined pieces into a sink. */
function joinedInto(pieces: readonly Piece[], out: ByteSink): void {
  pieces.forEach((p, i) => {
    if (i > 0) out.byte(COMMA_BYTE);
    if (typeof p === 'string') out.text(p);
    else out.bytes(p, 0, p.byteLength);
  });
}

/** The page records of a settled run, as output pieces (concatenate, no separators added). */
export function fragRecords(run: FragRun): Piece[] {
  if (run.n >= MIN_PACKED_RUN) {
    const out: Piece[] = [packedRowHead(run)];
    joined(run.dt, out);
    out.push(packedRowMiddle(run.kind));
    joined(run.members, out);
    out.push(PACKED_ROW_END);
    return out;
  }
  // The worker's own writer (writeShortRun), from the run's gaps and member tokens joined as a worker joins them.
  const dt = new ByteSink(16);
  joinedInto(run.dt, dt);
  const members = new ByteSink();
  joinedInto(run.members, members);
  const out = new ByteSink();
  writeShortRun(out, run, dt, members);
  return [out.view()];
}

/** Adjacent string pieces joined into one (one UTF-8 encode instead of many small ones). */
function coalesce(pieces: readonly Piece[]): Piece[] {
  const out: Piece[] = [];
  let text = '';
  for (const p of pieces) {
    if (typeof p === 'string') text += p;
    else {
      if (text.length > 0) out.push(text);
      text = '';
      if (p.byteLength > 0) out.push(p);
    }
  }
  if (text.length > 0) out.push(text);
  return out;
}

/** A sequence of pieces ready to be written: its exact UTF-8 length is known. */
export class PieceWriter {
  readonly pieces: Piece[];
  readonly byteLength: number;

  constructor(pieces: readonly Piece[]) {
    this.pieces = coalesce(pieces);
    let n = 0;
    for (const p of this.pieces) n += typeof p === 'string' ? Buffer.byteLength(p, 'utf8') : p.byteLength;
    this.byteLength = n;
  }

  /** Write into `target` at `at`; returns the offset after. */
  writeTo(target: Buffer, at: number): number {
    for (const p of this.pieces) {
      if (typeof p === 'string') at += target.write(p, at, 'utf8');
      else {
        target.set(p, at);
        at += p.byteLength;
      }
    }
    return at;
  }
}

/** UTF-8 bytes of concatenated pieces, allocated once. */
export function piecesToBuffer(pieces: readonly Piece[]): Buffer {
  const w = new PieceWriter(pieces);
  const out = Buffer.allocUnsafe(w.byteLength);
  w.writeTo(out, 0);
  return out;
}

/** A growing list of page records as output pieces, comma-separated. */
export class RecordList {
  readonly pieces: Piece[] = [];
  private empty = true;

  add(record: Piece[]): void {
    if (!this.empty) this.pieces.push(COMMA);
    for (const p of record) this.pieces.push(p);
    this.empty = false;
  }

  get isEmpty(): boolean {
    return this.empty;
  }
}

/**
 * One instance of each class above, kept alive on purpose. V8 holds the
 * hidden classes an instance goes through as its constructor adds fields
 * only weakly: when none is alive at a full collection (every few hundred
 * pages under load) they die, and the optimized code that embeds them
 * (piecesToBuffer, writeTo, the assembler, the page build they are inlined
 * into) is thrown away and compiled again ("reason: weak objects" in
 * --trace-deopt). Their fields keep one representation (arrays, small
 * integers, booleans), so instances made later share these classes.
 * Exported so that it stays alive: a module constant nothing reads is a
 * local of the module's top-level code, gone once the module has run.
 */
export const KEPT_SHAPES: readonly object[] = [new PieceWriter([]), new RecordList()];
