/**
 * What the main thread and a page worker exchange for one slice of a page.
 *
 * The worker decodes a contiguous run of frames and returns the slice's
 * records already packed and serialized, so the main thread never parses or
 * re-serializes the bulk of a page. Only the chunk runs touching the slice's
 * two edges stay open (as JSON fragments), because they may continue into
 * the neighbouring slice; the assembler merges those.
 *
 * Result layout: one freshly allocated ArrayBuffer, moved (not copied) out
 * of the worker:  [u32 header length][header JSON][byte sections...]; the
 * header lists the sections in order with their lengths.
 */
import type { RunKey } from '../main/core/chunk-codec.js';

export interface SliceTask {
  path: string;
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
  crcs?: Uint8Array;
}

/** An open chunk run as JSON fragments: `dt` and `members` are comma-joined JSON values without brackets. */
export interface FragmentRunHeader extends RunKey {
  seq0: number;
  time0: number;
  lastSeq: number;
  lastTime: number;
  n: number;
  /** Bytes of the comma-joined dt and member fragments that follow in the buffer. */
  dtBytes: number;
  memberBytes: number;
}

export interface SliceHeader {
  /** Run open at the slice's start (settled inside the slice unless `whole`). */
  head: FragmentRunHeader | null;
  /** The slice is one single run: `head` only, nothing else. */
  whole: boolean;
  /** Settled records, comma-joined JSON. */
  bodyBytes: number;
  /** Run still open at the slice's end. */
  tail: FragmentRunHeader | null;
  frames: number;
  /** Log bytes the worker read for this slice (the bounded-read guard). */
  bytesRead: number;
  /** Milliseconds the worker spent reading the slice's bytes, and decoding them. */
  readMs: number;
  decodeMs: number;
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
  };
}

export type SliceResult = ArrayBuffer | SliceFault;
