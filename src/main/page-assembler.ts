/**
 * Main-thread assembly of a page (SPEC section 4) from worker slice results.
 * Each slice arrives packed and serialized; the assembler only merges the
 * chunk runs that continue across slice edges and concatenates bytes. Runs
 * stay JSON fragments throughout (fragment-run.ts): a 400k-member run is
 * never parsed here.
 */
import { continuesRun, type RunKey } from './core/chunk-codec.js';
import { fragRecords, mergeInto, piecesToBuffer, RecordList, type FragRun } from './core/fragment-run.js';
import { RESULT_TRAILER_BYTES, type FragmentRunHeader, type SliceHeader } from '../workers/slice-protocol.js';

export interface ParsedSlice {
  head: FragRun | null;
  whole: boolean;
  body: Uint8Array;
  tail: FragRun | null;
  frames: number;
  bytesRead: number;
  readMs: number;
  decodeMs: number;
  /** The result buffer the views point into (free for reuse once the page is assembled). */
  buffer: ArrayBuffer;
}

function key(h: FragmentRunHeader): RunKey {
  const k: RunKey = { kind: h.kind, turn: h.turn, step: h.step, index: h.index };
  if (h.id !== undefined) k.id = h.id;
  if ('name' in h && h.name !== undefined) k.name = h.name;
  return k;
}

export function parseSlice(ab: ArrayBuffer): ParsedSlice {
  const bytes = new Uint8Array(ab);
  const trailer = new DataView(ab, ab.byteLength - RESULT_TRAILER_BYTES);
  const header = JSON.parse(Buffer.from(ab, trailer.getUint32(0, true), trailer.getUint32(4, true)).toString('utf8')) as SliceHeader;
  const run = (h: FragmentRunHeader | null): FragRun | null => {
    if (h === null) return null;
    const dt = bytes.subarray(h.dtAt, h.dtAt + h.dtBytes);
    const members = bytes.subarray(h.membersAt, h.membersAt + h.memberBytes);
    return { ...key(h), seq0: h.seq0, time0: h.time0, lastSeq: h.lastSeq, lastTime: h.lastTime, n: h.n, dt: dt.length ? [dt] : [], members: [members] };
  };
  const body = bytes.subarray(header.bodyAt, header.bodyAt + header.bodyBytes);
  return { head: run(header.head), whole: header.whole, body, tail: run(header.tail), frames: header.frames, bytesRead: header.bytesRead, readMs: header.readMs, decodeMs: header.decodeMs, buffer: ab };
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
  const records = new RecordList();
  let open: FragRun | null = null;
  const flush = () => {
    if (open !== null) records.add(fragRecords(open));
    open = null;
  };
  for (const s of slices) {
    if (s.head !== null) {
      if (open !== null && continuesRun(open, s.head, s.head.seq0, s.head.time0)) mergeInto(open, s.head);
      else {
        flush();
        open = s.head;
      }
      if (s.whole) continue;
      flush();
    }
    if (s.body.length > 0) {
      flush();
      records.add([s.body]);
    }
    if (s.tail !== null) {
      flush();
      open = s.tail;
    }
  }
  flush();
  const head = `{"sessionId":${JSON.stringify(env.sessionId)},"throughSeq":${env.throughSeq},"fromSeq":${env.fromSeq},"toSeq":${env.toSeq},"hasMore":${env.hasMore},"records":[`;
  return piecesToBuffer([head, ...records.pieces, ']}']);
}
