/**
 * Main-thread assembly of a page (SPEC section 4) from worker slice results.
 * Each slice arrives packed and serialized; the assembler only merges the
 * chunk runs that continue across slice edges and concatenates bytes. Runs
 * stay JSON fragments throughout (fragment-run.ts): a 400k-member run is
 * never parsed here.
 */
import { continuesRun, type RunKey } from '../core/chunk-codec.js';
import { fragRecords, mergeInto, piecesToBuffer, RecordList, type FragRun, type Piece } from '../core/fragment-run.js';
import type { CodedPiece } from '../streams/gzip-members.js';
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
  /** Sections the worker compressed (workers/slice-compress.ts), by the section's view (as it appears among the page's pieces). */
  coded: Map<Uint8Array, CodedPiece> | null;
  codeMs: number;
  /** The whole page, when the slice was asked for it (SliceTask.pageHead): a view into `buffer`, which is then the page's. */
  page: Uint8Array | null;
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
  const codedAt = new Map((header.coded ?? []).map((c) => [c.of, c]));
  const coded = codedAt.size === 0 ? null : new Map<Uint8Array, CodedPiece>();
  // A section's view, with its coded form when the worker made one.
  const section = (at: number, n: number): Uint8Array => {
    const view = bytes.subarray(at, at + n);
    const c = n > 0 ? codedAt.get(at) : undefined;
    if (c !== undefined && c.length === n) coded?.set(view, { bytes: bytes.subarray(c.at, c.at + c.bytes), crc: c.crc, length: c.length });
    return view;
  };
  const run = (h: FragmentRunHeader | null): FragRun | null => {
    if (h === null) return null;
    const dt = section(h.dtAt, h.dtBytes);
    const members = section(h.membersAt, h.memberBytes);
    return { ...key(h), seq0: h.seq0, time0: h.time0, lastSeq: h.lastSeq, lastTime: h.lastTime, n: h.n, dt: dt.length ? [dt] : [], members: [members] };
  };
  const body = section(header.bodyAt, header.bodyBytes);
  // A whole page is coded as one piece (slice-compress.ts), found by this view.
  const page = header.pageBytes === undefined ? null : section(0, header.pageBytes);
  const head = run(header.head);
  const tail = run(header.tail);
  return { head, whole: header.whole, body, tail, frames: header.frames, bytesRead: header.bytesRead, readMs: header.readMs, decodeMs: header.decodeMs, buffer: ab, coded, codeMs: header.codeMs ?? 0, page };
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
  return piecesToBuffer(assemblePieces(env, slices));
}

/**
 * The page JSON as pieces, in order (concatenated, they are the page): the
 * slices' sections as the very views parseSlice made (so their coded forms
 * are found by identity, main/coded-page.ts) between the strings the
 * assembler writes.
 */
export function assemblePieces(env: PageEnvelope, slices: readonly ParsedSlice[]): Piece[] {
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
  return [pageHead(env), ...records.pieces, ']}'];
}

/** The page's JSON up to its records array (a worker writing a one-slice page whole begins with it too). */
export function pageHead(env: PageEnvelope): string {
  return `{"sessionId":${JSON.stringify(env.sessionId)},"throughSeq":${env.throughSeq},"fromSeq":${env.fromSeq},"toSeq":${env.toSeq},"hasMore":${env.hasMore},"records":[`;
}
