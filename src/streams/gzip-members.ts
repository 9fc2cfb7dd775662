/**
 * A gzip member (RFC 1952) put together from raw deflate pieces compressed
 * apart, pure. A page is compressed by several workers at once, each its own
 * part of the body; the parts join into one valid deflate stream because
 * each ends on a full flush (an empty stored block: byte-aligned, no
 * reference across it, not final), so they only need the gzip header before
 * them, one final empty block after them and the trailer: the CRC-32 and
 * length of the whole body. The CRC-32 of the whole is combined from the
 * pieces' own (crc32Combine), so no pass over the body is needed to join.
 */

/** ID1 ID2, CM = deflate, no flags, MTIME 0 (none), XFL 0, OS 255 (unknown): the bytes never depend on where or when. */
export const GZIP_HEADER: Uint8Array = Uint8Array.of(0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff);

/** A final, empty block with fixed Huffman codes (BFINAL 1, BTYPE 01, end-of-block): ends the deflate stream. */
export const FINAL_EMPTY_BLOCK: Uint8Array = Uint8Array.of(0x03, 0x00);

/** The bytes after the last piece: FINAL_EMPTY_BLOCK, then CRC-32 and ISIZE (length mod 2^32), little-endian. */
export function gzipEnd(crc: number, length: number): Uint8Array {
  const out = new Uint8Array(FINAL_EMPTY_BLOCK.length + 8);
  out.set(FINAL_EMPTY_BLOCK, 0);
  const v = new DataView(out.buffer);
  v.setUint32(2, crc >>> 0, true);
  v.setUint32(6, length % 0x1_0000_0000, true);
  return out;
}

/** The CRC-32 polynomial (IEEE 802.3, as zlib), bit-reflected. */
const POLY = 0xedb88320;

/** a(x) * b(x) modulo the CRC polynomial, both bit-reflected (zlib's multmodp). */
function multModP(a: number, b: number): number {
  let m = 0x8000_0000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0..31. */
const X2N: number[] = [];
{
  let p = 0x4000_0000; // x^1
  for (let k = 0; k < 32; k++) {
    X2N.push(p);
    p = multModP(p, p);
  }
}

/** x^(n * 2^k) modulo the polynomial. */
function x2nModP(n: number, k: number): number {
  let p = 0x8000_0000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 31] as number, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** The CRC-32 of A followed by B, from crc(A), crc(B) and B's length (zlib's crc32_combine). */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(x2nModP(lengthB, 3), crcA >>> 0) ^ (crcB >>> 0)) >>> 0;
}

/** A compressed piece with what the trailer needs of the bytes it stands for. */
export interface CodedPiece {
  bytes: Uint8Array;
  /** CRC-32 and length of the uncompressed bytes. */
  crc: number;
  length: number;
}

/**
 * The gzip member of raw deflate pieces, each ending on a full (or sync)
 * flush and none final, in body order: header, pieces, final block, trailer.
 */
export function gzipMember(pieces: readonly CodedPiece[]): Uint8Array {
  let crc = 0;
  let length = 0;
  let size = GZIP_HEADER.length + FINAL_EMPTY_BLOCK.length + 8;
  for (const p of pieces) {
    crc = length === 0 ? p.crc : crc32Combine(crc, p.crc, p.length);
    length += p.length;
    size += p.bytes.length;
  }
  const out = new Uint8Array(size);
  out.set(GZIP_HEADER, 0);
  let at = GZIP_HEADER.length;
  for (const p of pieces) {
    out.set(p.bytes, at);
    at += p.bytes.length;
  }
  out.set(gzipEnd(crc, length), at);
  return out;
}
