/**
 * What the main thread and a page worker exchange for one slice of a page.
 *
 * The worker decodes a contiguous run of frames and returns the slice's
 * records already packed and serialized, so the main thread never parses or
 * re-serializes the bulk of a page. Only the chunk runs touching the slice's
 * two edges stay open (as JSON fragments), because they may continue into
 * the neighbouring slice; the assembler merges those.
 *
 * Result layout: one ArrayBuffer, moved (not copied) out of the worker:
 * byte sections anywhere in it, the header JSON, and an 8-byte trailer at
 * its very end, [u32 header offset][u32 header length]; the header gives
 * every section's offset and length. A small slice's result is a fresh,
 * exactly sized copy; a large slice's is the worker's new arena itself, its
 * sections where the worker built them, or (once the worker holds an arena)
 * a copy into a buffer of their size (page-task.ts); the main thread hands
 * such buffers back with later tasks (`arena`) to be used again.
 */
import type { RunKey } from '../core/chunk-codec.js';
import { NO_CLAIM } from '../core/frame-claim.js';

export interface SliceTask {
  /**
   * Where the worker reads the slice itself (storage/worker-reads.ts: a
   * backend's worker source, `file:<folder of the logs>` for local files); empty when
   * the slice's bytes come with the task (`bytes`).
   */
  source: string;
  /** The session whose log the slice is of: what to read is `{session, start, end}`, never a file path. */
  session: string;
  /**
   * The log's incarnation as the page's view stat'ed it (ObjectStat.incarnation): a worker reading
   * from `source` may read it through a descriptor it kept open on that very file
   * (storage/local/log-range.ts); '' when unknown (the log is opened for the read).
   */
  incarnation: string;
  /** Byte range of the slice's frames in the log. */
  start: number;
  end: number;
  /** Seq the first frame must start at, and the seq just after the last frame. */
  firstSeq: number;
  endSeq: number;
  /** The page's event range; frames are cut to it. */
  fromSeq: number;
  toSeq: number;
  /** Frame-checksum projection records for the slice's frames, when the session has them (frame-crc-file.ts). */
  crcs: Uint8Array | undefined;
  /** Row-metadata records for the same frames as `crcs`, record for record (frame-meta-file.ts), when the session has them. */
  meta: Uint8Array | undefined;
  /** The slice's bytes [start, end), read by the main thread (a backend workers cannot reach: memory, say); moved, not copied. */
  bytes: Uint8Array | undefined;
  /** A consumed result handed back (transferred): the worker may take it as its arena. */
  arena: ArrayBuffer | undefined;
  /** The result may be the worker's arena itself (large slices: no copy of their bytes). */
  inPlace: boolean;
  /**
   * What the plan claims of the slice's frames (core/frame-claim.ts): the
   * digest of every frame's seq, offset and message group, which the worker
   * checks against the frames; NO_CLAIM for tasks not built from a plan.
   */
  digest: number;
  /**
   * The output coding the worker compresses the slice's sections in
   * (slice-compress.ts): CODING_NONE, CODING_GZIP or CODING_ZSTD, at `level`.
   */
  coding: number;
  level: number;
  /**
   * Non-empty when this slice is the whole page (one slice, not in place): the page's envelope
   * up to its records array (page-assembler.ts pageHead). The worker then settles the edge runs
   * itself and writes the page whole into the result, this text first and `]}` last, so the main
   * thread hands out a view of the result instead of assembling a copy; with an output coding,
   * the worker compresses that page as one piece, as it writes it (slice-encoder.ts finishPage).
   */
  pageHead: string;
}

/**
 * Compresses a whole page as one piece in the task's coding (slice-compress.ts PieceCoder): the
 * coded bytes and, for gzip, the page's CRC-32 (0 for zstd). Handed to the encoder, which writes
 * the page and its coded form into the result together (slice-encoder.ts finishPage).
 */
export interface PageCoder {
  code(page: Buffer): { bytes: Buffer; crc: number };
}

/** Output codings of a slice task (numbers: the task keeps one shape, see decodeTask). */
export const CODING_NONE = 0;
export const CODING_GZIP = 1;
export const CODING_ZSTD = 2;

/**
 * A task, in the one object shape every task has: all fields present, in
 * this order. The worker's decode loop is optimized for the task shapes its
 * warm-up showed it; a task of another shape (one that carried an arena,
 * say) deoptimized it at the start of the first large page.
 */
export function sliceTask(source: string, session: string, start: number, end: number, firstSeq: number, endSeq: number, fromSeq: number, toSeq: number): SliceTask {
  return { source, session, incarnation: '', start, end, firstSeq, endSeq, fromSeq, toSeq, crcs: undefined, meta: undefined, bytes: undefined, arena: undefined, inPlace: false, digest: NO_CLAIM, coding: CODING_NONE, level: 0, pageHead: '' };
}

/**
 * Gives `t` its own copy of a slice's checksum and metadata records, in one buffer (returned), to
 * move to a worker: a view would take its whole backing buffer along, and two copies were two
 * buffers a slice for the main thread to allocate and detach. The metadata follows the checksums
 * (16-byte records), so it starts 8-byte aligned as the worker's float64 view of it needs
 * (frame-crc-file.ts).
 */
export function copyRecordsInto(t: SliceTask, crcs: Uint8Array, meta: Uint8Array | null | undefined): ArrayBuffer {
  const both = new Uint8Array(crcs.byteLength + (meta?.byteLength ?? 0));
  both.set(crcs, 0);
  t.crcs = both.subarray(0, crcs.byteLength);
  if (meta !== null && meta !== undefined) {
    both.set(meta, crcs.byteLength);
    t.meta = both.subarray(crcs.byteLength);
  }
  return both.buffer;
}

/**
 * The task as the worker's decode loop takes it: a copy made here, so every
 * task it sees has this one object shape, whatever made the original. A
 * task arrives as a structured clone, whose object shape is not the one
 * `sliceTask` literals have: the first real task after the JIT warm-up
 * deoptimized the decode loop ("wrong map"), and when that happened at the
 * end of the warm-up, one worker's first page ran unoptimized while V8
 * recompiled the loop beside it (30-60 ms of compile on a 2-CPU machine:
 * the slow half of the bimodal cold tail pages, seen with --trace-opt).
 * The handed-back arena and the slice's bytes stay with the original (the
 * loop never reads them).
 */
export function decodeTask(t: SliceTask): SliceTask {
  const c = sliceTask(t.source, t.session, t.start, t.end, t.firstSeq, t.endSeq, t.fromSeq, t.toSeq);
  c.crcs = t.crcs;
  c.meta = t.meta;
  c.inPlace = t.inPlace;
  c.digest = t.digest;
  c.coding = t.coding;
  c.level = t.level;
  c.pageHead = t.pageHead;
  return c;
}

/** An open chunk run as JSON fragments: `dt` and `members` are comma-joined JSON values without brackets. */
export interface FragmentRunHeader extends RunKey {
  seq0: number;
  time0: number;
  lastSeq: number;
  lastTime: number;
  n: number;
  /** Where in the buffer the comma-joined dt and member fragments are, and their bytes. */
  dtAt: number;
  dtBytes: number;
  membersAt: number;
  memberBytes: number;
}

export interface SliceHeader {
  /** Run open at the slice's start (settled inside the slice unless `whole`). */
  head: FragmentRunHeader | null;
  /** The slice is one single run: `head` only, nothing else. */
  whole: boolean;
  /** Settled records, comma-joined JSON: where in the buffer, and their bytes. */
  bodyAt: number;
  bodyBytes: number;
  /** Run still open at the slice's end. */
  tail: FragmentRunHeader | null;
  frames: number;
  /** Log bytes the worker read for this slice (the bounded-read guard). */
  bytesRead: number;
  /** Milliseconds the worker spent reading the slice's bytes, and decoding them. */
  readMs: number;
  decodeMs: number;
  /** Sections the worker compressed in the task's coding (slice-compress.ts), and the milliseconds it took. */
  coded?: CodedSectionHeader[];
  codeMs?: number;
  /** A whole-page task's result (SliceTask.pageHead): the page's bytes, from the buffer's start. */
  pageBytes?: number;
}

/** A compressed section: the identity section at `of` (`length` bytes, CRC-32 `crc` for gzip), coded at `at` (`bytes` bytes). */
export interface CodedSectionHeader {
  of: number;
  length: number;
  crc: number;
  at: number;
  bytes: number;
}

/** A task that only compresses bytes (a prepared page asked in a coding it was not built in; the catalog). */
export interface CompressTask {
  compress: Uint8Array;
  coding: number;
  level: number;
}

/**
 * Several small slices in one message to a worker (main/slice-batches.ts):
 * while every worker is busy, the slices queued behind them go together, so
 * a post, a wake-up and a receive are paid once for all of them.
 */
export interface SliceBatch {
  batch: SliceTask[];
}

/** A batch's answer: one result per task, in order; a string where the task threw (its message). */
export interface BatchResult {
  results: (SliceResult | string)[];
}

export interface SliceFault {
  error: {
    code: 'corrupt_range';
    message: string;
    /** What is wrong with the frame, without the seq range. */
    reason: string;
    offset: number;
    fromSeq: number;
    toSeq: number;
    /**
     * What failed: a frame (damaged, or not the one the plan names), the
     * plan's claims about the slice's frames as a whole (a damaged index or
     * sidecar: the frames may be fine), or the decoder itself.
     */
    kind: 'frame' | 'claim' | 'decoder';
  };
}

export type SliceResult = ArrayBuffer | SliceFault;

/** Bytes of the trailer at the end of every result: [u32 header offset][u32 header length]. */
export const RESULT_TRAILER_BYTES = 8;
