/**
 * A page's compressed body joined on the main thread from pieces the
 * workers compressed (workers/slice-compress.ts), issue 12. The page is a
 * list of pieces (page-assembler.ts assemblePieces); a piece the worker
 * coded goes in as it came, and each run of pieces between them (the
 * envelope, commas, a row's head, sections too small to be worth a worker's
 * time) is compressed here as one more piece, a few bytes. Decompressed, the
 * result is the concatenation of the pieces: the identity body exactly.
 *
 * - gzip: one member; its pieces are raw deflate ending on a full flush,
 *   and the CRC-32 of the whole is combined from theirs
 *   (streams/gzip-members.ts);
 * - zstd: the pieces' frames, concatenated.
 *
 * A page of one slice is written whole by its worker and compressed there
 * in one call, one piece (wholeCodedPage): nothing is left to compress here.
 */
import { crc32 } from 'node:zlib';
import { piecesToBuffer, type Piece } from '../core/fragment-run.js';
import { gzipMember, type CodedPiece } from '../streams/gzip-members.js';
import { codePiece } from '../workers/slice-compress.js';
import { CODING_GZIP, CODING_NONE, CODING_ZSTD } from '../workers/slice-protocol.js';
import type { CodedForm, PageEncoding } from './page-coding.js';

/** The worker's number for a coding the workers compress in; CODING_NONE for the others (brotli). */
export function workerCoding(encoding: PageEncoding): number {
  return encoding === 'gzip' ? CODING_GZIP : encoding === 'zstd' ? CODING_ZSTD : CODING_NONE;
}

/** Coded pieces in body order as one body of `encoding` (gzip or zstd). */
export function joinCodedPieces(parts: readonly CodedPiece[], encoding: 'gzip' | 'zstd'): Buffer {
  if (encoding === 'gzip') {
    const g = gzipMember(parts);
    return Buffer.from(g.buffer, g.byteOffset, g.byteLength);
  }
  // An empty body is still one (empty) frame: some decoders refuse zero bytes.
  if (parts.length === 0) return Buffer.from(codePiece(Buffer.alloc(0), CODING_ZSTD, 1));
  let n = 0;
  for (const p of parts) n += p.bytes.byteLength;
  const out = Buffer.allocUnsafe(n);
  let at = 0;
  for (const p of parts) {
    out.set(p.bytes, at);
    at += p.bytes.byteLength;
  }
  return out;
}

/** `bytes` as one coded piece, compressed here. */
export function codeHere(bytes: Buffer, encoding: 'gzip' | 'zstd', level: number): CodedPiece {
  const coding = workerCoding(encoding);
  return { bytes: codePiece(bytes, coding, level), crc: coding === CODING_GZIP ? crc32(bytes) : 0, length: bytes.length };
}

/**
 * The page body of `pieces` in `encoding`, using the workers' coded forms
 * (`coded`, by piece identity) and compressing the rest here at `level`.
 */
export function codedPage(pieces: readonly Piece[], coded: ReadonlyMap<Uint8Array, CodedPiece>, encoding: 'gzip' | 'zstd', level: number): CodedForm {
  const parts: CodedPiece[] = [];
  let plain: Piece[] = [];
  const flush = () => {
    if (plain.length === 0) return;
    const bytes = piecesToBuffer(plain);
    plain = [];
    if (bytes.length > 0) parts.push(codeHere(bytes, encoding, level));
  };
  for (const p of pieces) {
    const c = typeof p === 'string' ? undefined : coded.get(p);
    if (c === undefined) plain.push(p);
    else {
      flush();
      parts.push(c);
    }
  }
  flush();
  return codedForm(parts, encoding, level);
}

/**
 * A page its worker wrote whole (SliceTask.pageHead), as one coded piece: the worker's, or
 * compressed here when it had no room for it (the same bytes either way: one piece, one level).
 */
export function wholeCodedPage(page: Uint8Array, coded: CodedPiece | undefined, encoding: 'gzip' | 'zstd', level: number): CodedForm {
  const part = coded ?? codeHere(Buffer.from(page.buffer, page.byteOffset, page.byteLength), encoding, level);
  // zstd: the one frame is the body as it came, a view (no copy): into the page's own result
  // buffer, which is the identity body's too, or a buffer codeHere just made. That buffer goes back
  // to a worker only through the page's release (body-pool.ts spareReleaser), which its one
  // holder calls once nothing reads either form (the route: after the reply's last write).
  if (encoding === 'zstd') return { encoding, body: Buffer.from(part.bytes.buffer, part.bytes.byteOffset, part.bytes.byteLength), level, pieces: [part.length] };
  return codedForm([part], encoding, level);
}

/** Coded pieces joined, named by what made them: their level and identity lengths (the coded tag's parameters). */
export function codedForm(parts: readonly CodedPiece[], encoding: 'gzip' | 'zstd', level: number): CodedForm {
  return { encoding, body: joinCodedPieces(parts, encoding), level, pieces: parts.map((p) => p.length) };
}
