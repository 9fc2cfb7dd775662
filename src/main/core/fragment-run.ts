/**
 * Chunk runs held as JSON fragments instead of arrays, pure. This is the
 * page path's representation of a run: members are JSON string tokens
 * (copied from stored rows byte for byte, or serialized once), time gaps are
 * JSON numbers, both kept as comma-joinable pieces. Workers build them,
 * the assembler merges them across slices, and both write them out as rows
 * (or as plain events when a run is shorter than MIN_PACKED_RUN), without
 * ever materializing one JS string per member.
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

export function newFragRun(key: RunKey, seq: number, time: number): FragRun {
  const run: FragRun = { kind: key.kind, turn: key.turn, step: key.step, index: key.index, seq0: seq, time0: time, lastSeq: seq - 1, lastTime: time, n: 0, dt: [], members: [] };
  if (key.id !== undefined) run.id = key.id;
  if ('name' in key) run.name = key.name;
  return run;
}

/** Append a comma-joinable piece; adjacent strings are joined (cheap ropes in V8) to keep piece counts low. */
function pushPiece(pieces: Piece[], p: Piece): void {
  const last = pieces.length - 1;
  if (typeof p === 'string' && last >= 0 && typeof pieces[last] === 'string') pieces[last] = `${pieces[last] as string},${p}`;
  else pieces.push(p);
}

/**
 * Append `count` members (pieces `members`, gaps inside them `dt`) starting
 * at (seq, time) and ending at `lastTime`. The gap from the run's last
 * member is added when the run is not empty.
 */
export function appendMembers(run: FragRun, seq: number, time: number, lastTime: number, count: number, dt: Piece | null, members: Piece): void {
  if (run.n > 0) pushPiece(run.dt, String(time - run.lastTime));
  if (dt !== null && (typeof dt === 'string' ? dt.length > 0 : dt.byteLength > 0)) pushPiece(run.dt, dt);
  pushPiece(run.members, members);
  run.n += count;
  run.lastSeq = seq + count - 1;
  run.lastTime = lastTime;
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

/** The page records of a settled run, as output pieces (concatenate, no separators added). */
export function fragRecords(run: FragRun): Piece[] {
  if (run.n >= MIN_PACKED_RUN) {
    const tool = run.kind === 'tool';
    let pre = `{"chunks":{"type":"${rowTypeOf(run.kind)}","seq0":${run.seq0},"time0":${run.time0},"data":{"turn":${run.turn},"step":${run.step},"index":${run.index}`;
    if (tool) {
      pre += `,"id":${JSON.stringify(run.id)}`;
      if ('name' in run) pre += `,"name":${JSON.stringify(run.name)}`;
    }
    const out: Piece[] = [pre + ',"dt":['];
    joined(run.dt, out);
    out.push(tool ? '],"args":[' : '],"texts":[');
    joined(run.members, out);
    out.push(']}}}');
    return out;
  }
  // Short runs (one or two members) become plain events; parsing them is cheap.
  const dt = JSON.parse(`[${run.dt.map(pieceText).join(',')}]`) as number[];
  const members = JSON.parse(`[${run.members.map(pieceText).join(',')}]`) as string[];
  const out: Piece[] = [];
  let time = run.time0;
  for (let k = 0; k < members.length; k++) {
    if (k > 0) {
      out.push(COMMA);
      time += dt[k - 1] as number;
    }
    out.push(JSON.stringify({ event: chunkEvent(run, run.seq0 + k, time, members[k] as string) }));
  }
  return out;
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

/** UTF-8 bytes of comma-joined pieces. */
export function joinedToBuffer(pieces: Piece[]): Buffer {
  const out: Piece[] = [];
  joined(pieces, out);
  return piecesToBuffer(out);
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
