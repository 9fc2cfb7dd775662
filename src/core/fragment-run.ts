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
import { chunkEvent, MIN_PACKED_RUN, rowTypeOf, type RunKey } from './chunk-codec.js';

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

function pieceText(p: Piece): string {
  return typeof p === 'string' ? p : Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('utf8');
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

/** Between a packed row record's gap list and its member list. */
export function packedRowMiddle(kind: RunKey['kind']): string {
  return kind === 'tool' ? '],"args":[' : '],"texts":[';
}

export const PACKED_ROW_END = ']}}}';

/**
 * A settled run too short to pack (fewer than MIN_PACKED_RUN members) as
 * comma-joined event records, from its comma-joined gaps and member tokens.
 * Parsing them is cheap: there are at most two.
 */
export function shortRunRecords(run: RunKey & { seq0: number; time0: number }, dtJson: string, membersJson: string): string {
  const dt = JSON.parse(`[${dtJson}]`) as number[];
  const members = JSON.parse(`[${membersJson}]`) as string[];
  const out: string[] = [];
  let time = run.time0;
  for (let k = 0; k < members.length; k++) {
    if (k > 0) time += dt[k - 1] as number;
    out.push(JSON.stringify({ event: chunkEvent(run, run.seq0 + k, time, members[k] as string) }));
  }
  return out.join(',');
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
  return [shortRunRecords(run, run.dt.map(pieceText).join(','), run.members.map(pieceText).join(','))];
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
