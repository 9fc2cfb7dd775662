/**
 * The worker's output coding (issue 12): each slice's byte sections
 * compressed by the worker that built them, so a page is compressed by all
 * workers at once and the main thread only joins the pieces
 * (main/coded-page.ts).
 *
 * A section is the unit because it is what appears verbatim in the page:
 * the settled records (`body`) as one run of bytes, an edge run's gaps and
 * members each as one run inside the merged row's lists. Everything the
 * main thread writes around them (the page envelope, commas, a row's head,
 * a short run re-serialized) is a few bytes it compresses itself. So the
 * slice boundaries of the compressed stream fall exactly at section edges,
 * and the decompressed concatenation is the identity body byte for byte.
 *
 * - gzip: raw deflate ending on a full flush (byte-aligned, no reference
 *   across, not final) and the section's CRC-32, for the trailer
 *   (streams/gzip-members.ts);
 * - zstd: one frame per section (frames concatenate).
 *
 * The coded bytes go into the same result buffer: for a result that is the
 * worker's arena (in place), into its leading region, which held the slice's
 * log bytes and is free once they are decoded; else into a copy of the
 * (small) result with room after its sections. A section whose coded form
 * does not fit stays uncoded, and the main thread compresses it instead:
 * the room only decides who compresses, never what is sent.
 */
import type { Encoder as ZstdEncoderClass } from '@toondepauw/node-zstd';
import { constants as zc, crc32, deflateRawSync } from 'node:zlib';
import { deflateStored, STORED_PIECE, zstdStored } from '../streams/stored-piece.js';
import { requireCjs } from './cjs.js';
import { freedOnLoop } from './loop-turn.js';
import { CODING_GZIP, CODING_NONE, CODING_ZSTD, RESULT_TRAILER_BYTES, type CodedSectionHeader, type PageCoder, type SliceHeader, type SliceTask } from './slice-protocol.js';
import { ARENA_HEADER_ROOM } from './slice-encoder.js';

const { Encoder: ZstdEncoder } = requireCjs('@toondepauw/node-zstd') as { Encoder: typeof ZstdEncoderClass };
type ZstdEncoder = ZstdEncoderClass;
const { workerData } = requireCjs('piscina') as { workerData: unknown };

/** Sections shorter than this are left to the main thread (joined with the envelope and commas there, they cost it nothing). */
export const MIN_CODED_SECTION = 4096;

/** This worker's threshold: the pool's (PoolOptions.minCodedSection, tests lower it), else MIN_CODED_SECTION. */
const minSection = (workerData as { minCodedSection?: number } | undefined)?.minCodedSection ?? MIN_CODED_SECTION;

const zstdEncoders = new Map<number, ZstdEncoder>();

function zstdEncoder(level: number): ZstdEncoder {
  let enc = zstdEncoders.get(level);
  if (enc === undefined) zstdEncoders.set(level, (enc = new ZstdEncoder(level)));
  return enc;
}

/** `bytes` compressed as one independent piece of `coding` (see the file comment). */
export function codePiece(bytes: Buffer, coding: number, level: number): Buffer {
  // Short pieces (the envelope, commas, short runs) are stored: compressing them cost a context each.
  if (bytes.length < STORED_PIECE) return coding === CODING_ZSTD ? zstdStored(bytes) : coding === CODING_GZIP ? deflateStored(bytes) : unknownCoding(coding);
  if (coding === CODING_ZSTD) {
    const coded = zstdEncoder(level).encodeSync(bytes);
    // The binding's own memory, freed only from this thread's event loop (loop-turn.ts).
    freedOnLoop(coded.length);
    return coded;
  }
  if (coding === CODING_GZIP) return deflateRawSync(bytes, { level, finishFlush: zc.Z_FULL_FLUSH });
  return unknownCoding(coding);
}

/**
 * A whole-page task's coder: compresses the page as one piece as the encoder writes it
 * (slice-encoder.ts finishPage). `used`: it did, so the result needs no codeSlice (whose header
 * parse it saves); it does not when the records were not in the arena.
 */
export class PieceCoder implements PageCoder {
  used = false;
  constructor(
    private readonly coding: number,
    private readonly level: number,
  ) {}

  code(page: Buffer): { bytes: Buffer; crc: number } {
    this.used = true;
    return { bytes: codePiece(page, this.coding, this.level), crc: this.coding === CODING_GZIP ? crc32(page) : 0 };
  }
}

/** The coder for a whole-page task in an output coding; null for any other task (codeSlice codes its result). */
export function pageCoder(task: SliceTask): PieceCoder | null {
  return task.pageHead === '' || task.coding === CODING_NONE ? null : new PieceCoder(task.coding, task.level);
}

function unknownCoding(coding: number): never {
  throw new Error(`unknown output coding ${coding}`);
}

function readHeader(ab: ArrayBuffer): { header: SliceHeader; headerAt: number } {
  const trailer = new DataView(ab, ab.byteLength - RESULT_TRAILER_BYTES);
  const headerAt = trailer.getUint32(0, true);
  const header = JSON.parse(Buffer.from(ab, headerAt, trailer.getUint32(4, true)).toString('utf8')) as SliceHeader;
  return { header, headerAt };
}

/** The header (and trailer) written at the end of `out`, which ends at `end`; false when it would reach below `floor`. */
function writeHeader(out: Buffer, header: SliceHeader, end: number, floor: number): boolean {
  const h = Buffer.from(JSON.stringify(header), 'utf8');
  const at = end - RESULT_TRAILER_BYTES - h.length;
  if (at < floor) return false;
  out.set(h, at);
  out.writeUInt32LE(at, end - RESULT_TRAILER_BYTES);
  out.writeUInt32LE(h.length, end - 4);
  return true;
}

/**
 * The result with its sections of at least MIN_CODED_SECTION bytes coded
 * (`header.coded`). `free`: bytes at the start of `result` no section uses
 * (an in-place result: the slice's log bytes), 0 for a copied result.
 */
export function codeSlice(result: ArrayBuffer, coding: number, level: number, free: number): ArrayBuffer {
  const t0 = performance.now();
  const { header, headerAt } = readHeader(result);
  // Coded already, as it was written (a whole page: slice-encoder.ts finishPage).
  if (header.coded !== undefined) return result;
  const sections: { at: number; bytes: number }[] = [];
  // A whole page (SliceTask.pageHead) is one piece, whatever its size: one call here and nothing
  // left for the main thread to compress (docs/decisions.md "A one-slice page is one coded piece").
  const page = header.pageBytes;
  if (page !== undefined) sections.push({ at: 0, bytes: page });
  else {
    for (const run of [header.head, header.tail]) {
      if (run === null) continue;
      sections.push({ at: run.dtAt, bytes: run.dtBytes }, { at: run.membersAt, bytes: run.memberBytes });
    }
    sections.push({ at: header.bodyAt, bytes: header.bodyBytes });
  }
  const coded: { h: CodedSectionHeader; bytes: Buffer }[] = [];
  for (const s of sections) {
    if ((s.bytes < minSection && page === undefined) || s.bytes === 0) continue;
    const view = Buffer.from(result, s.at, s.bytes);
    const bytes = codePiece(view, coding, level);
    coded.push({ h: { of: s.at, length: s.bytes, crc: coding === CODING_GZIP ? crc32(view) : 0, at: 0, bytes: bytes.length }, bytes });
  }
  if (coded.length === 0) return result;
  if (free > 0) {
    // In place: coded sections into the free leading region, as many as fit.
    const out = Buffer.from(result);
    let at = 0;
    const placed: CodedSectionHeader[] = [];
    for (const c of coded) {
      if (at + c.bytes.length > free) continue;
      out.set(c.bytes, at);
      placed.push({ ...c.h, at });
      at += c.bytes.length;
    }
    const next = { ...header, coded: placed, codeMs: performance.now() - t0 };
    // The header room at the arena's end holds the longer header; if it did not, the old header
    // stands (nothing written over it) and the main thread codes every section.
    writeHeader(out, next, out.length, out.length - ARENA_HEADER_ROOM);
    return result;
  }
  // A copy: its sections, then the coded ones, then the header.
  let total = headerAt;
  for (const c of coded) total += c.bytes.length;
  const placed = coded.map((c) => ({ ...c.h }));
  const next = { ...header, coded: placed, codeMs: 0 };
  let at = headerAt;
  for (const p of placed) {
    p.at = at;
    at += p.bytes;
  }
  next.codeMs = performance.now() - t0;
  const h = Buffer.from(JSON.stringify(next), 'utf8');
  const out = Buffer.allocUnsafeSlow(total + h.length + RESULT_TRAILER_BYTES);
  out.set(new Uint8Array(result, 0, headerAt), 0);
  coded.forEach((c, i) => out.set(c.bytes, (placed[i] as CodedSectionHeader).at));
  return writeHeader(out, next, out.length, total) ? (out.buffer as ArrayBuffer) : result;
}

/**
 * A compress-only task's result: `bytes` coded as one piece, then its
 * CRC-32 (gzip; 0 for zstd) as a u32 LE, in a fresh buffer to move.
 */
export function codeBytes(bytes: Uint8Array, coding: number, level: number): ArrayBuffer {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const coded = codePiece(view, coding, level);
  const out = Buffer.allocUnsafeSlow(coded.length + 4);
  out.set(coded, 0);
  out.writeUInt32LE(coding === CODING_GZIP ? crc32(view) : 0, coded.length);
  return out.buffer as ArrayBuffer;
}
