/**
 * Main-thread assembly of a page (SPEC section 4) from worker slice results.
 * Each slice arrives packed and serialized; the assembler only merges the
 * chunk runs that continue across slice edges and concatenates bytes. Runs
 * stay JSON fragments throughout: a 400k-member run is never parsed here.
 */
import { chunkEvent, continuesRun, MIN_PACKED_RUN, rowTypeOf, type RunKey } from './core/chunk-codec.js';
import type { FragmentRunHeader, SliceHeader } from '../workers/slice-protocol.js';

interface FragRun extends RunKey {
  seq0: number;
  time0: number;
  lastSeq: number;
  lastTime: number;
  n: number;
  /** Comma-joinable pieces, each a non-empty fragment. */
  dt: Uint8Array[];
  members: Uint8Array[];
}

export interface ParsedSlice {
  head: FragRun | null;
  whole: boolean;
  body: Uint8Array;
  tail: FragRun | null;
  frames: number;
  bytesRead: number;
}

function key(h: FragmentRunHeader): RunKey {
  const k: RunKey = { kind: h.kind, turn: h.turn, step: h.step, index: h.index };
  if (h.id !== undefined) k.id = h.id;
  if ('name' in h && h.name !== undefined) k.name = h.name;
  return k;
}

export function parseSlice(ab: ArrayBuffer): ParsedSlice {
  const bytes = new Uint8Array(ab);
  const headerLen = new DataView(ab).getUint32(0, true);
  const header = JSON.parse(Buffer.from(ab, 4, headerLen).toString('utf8')) as SliceHeader;
  let at = 4 + headerLen;
  const take = (n: number): Uint8Array => {
    const v = bytes.subarray(at, at + n);
    at += n;
    return v;
  };
  const run = (h: FragmentRunHeader | null): FragRun | null => {
    if (h === null) return null;
    const dt = take(h.dtBytes);
    const members = take(h.memberBytes);
    return { ...key(h), seq0: h.seq0, time0: h.time0, lastSeq: h.lastSeq, lastTime: h.lastTime, n: h.n, dt: dt.length ? [dt] : [], members: [members] };
  };
  const head = run(header.head);
  const body = take(header.bodyBytes);
  const tail = run(header.tail);
  return { head, whole: header.whole, body, tail, frames: header.frames, bytesRead: header.bytesRead };
}

const COMMA = Buffer.from(',');

function joinPieces(out: Uint8Array[], pieces: Uint8Array[]): void {
  pieces.forEach((p, i) => {
    if (i > 0) out.push(COMMA);
    out.push(p);
  });
}

/** The records of a settled run: one packed row, or plain events when short. */
function runRecords(run: FragRun): Uint8Array[] {
  if (run.n >= MIN_PACKED_RUN) {
    const tool = run.kind === 'tool';
    let pre = `{"chunks":{"type":"${rowTypeOf(run.kind)}","seq0":${run.seq0},"time0":${run.time0},"data":{"turn":${run.turn},"step":${run.step},"index":${run.index}`;
    if (tool) {
      pre += `,"id":${JSON.stringify(run.id)}`;
      if ('name' in run) pre += `,"name":${JSON.stringify(run.name)}`;
    }
    pre += ',"dt":[';
    const out: Uint8Array[] = [Buffer.from(pre)];
    joinPieces(out, run.dt);
    out.push(Buffer.from(tool ? '],"args":[' : '],"texts":['));
    joinPieces(out, run.members);
    out.push(Buffer.from(']}}}'));
    return out;
  }
  // Short runs (at most 2 members) are parsed: they are tiny.
  const text = (pieces: Uint8Array[]) => '[' + pieces.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('utf8')).join(',') + ']';
  const dt = JSON.parse(text(run.dt)) as number[];
  const members = JSON.parse(text(run.members)) as string[];
  const out: Uint8Array[] = [];
  let time = run.time0;
  for (let k = 0; k < members.length; k++) {
    if (k > 0) {
      out.push(COMMA);
      time += dt[k - 1] as number;
    }
    out.push(Buffer.from(JSON.stringify({ event: chunkEvent(run, run.seq0 + k, time, members[k] as string) })));
  }
  return out;
}

function merge(a: FragRun, b: FragRun): FragRun {
  const gap = Buffer.from(String(b.time0 - a.lastTime));
  return { ...a, lastSeq: b.lastSeq, lastTime: b.lastTime, n: a.n + b.n, dt: [...a.dt, gap, ...b.dt], members: [...a.members, ...b.members] };
}

export interface PageEnvelope {
  sessionId: string;
  throughSeq: number;
  fromSeq: number;
  toSeq: number;
  hasMore: boolean;
}

/** Concatenate slices (in page order) into the page JSON. */
export function assemblePage(env: PageEnvelope, slices: readonly ParsedSlice[]): Buffer {
  const out: Uint8Array[] = [
    Buffer.from(
      `{"sessionId":${JSON.stringify(env.sessionId)},"throughSeq":${env.throughSeq},"fromSeq":${env.fromSeq},"toSeq":${env.toSeq},"hasMore":${env.hasMore},"records":[`,
    ),
  ];
  let empty = true;
  const emit = (pieces: Uint8Array[]) => {
    if (!empty) out.push(COMMA);
    for (const p of pieces) out.push(p);
    empty = false;
  };
  let open: FragRun | null = null;
  const flush = () => {
    if (open !== null) emit(runRecords(open));
    open = null;
  };
  for (const s of slices) {
    if (s.head !== null) {
      if (open !== null && continuesRun(open, s.head, s.head.seq0, s.head.time0)) open = merge(open, s.head);
      else {
        flush();
        open = s.head;
      }
      if (s.whole) continue;
      flush();
    }
    if (s.body.length > 0) {
      flush();
      emit([s.body]);
    }
    if (s.tail !== null) {
      flush();
      open = s.tail;
    }
  }
  flush();
  out.push(Buffer.from(']}'));
  return Buffer.concat(out);
}
