/**
 * A short piece of a coded page, stored instead of compressed, pure
 * (docs/decisions.md "Short pieces are stored"). The page's envelope, its
 * commas and short runs are a few bytes to a few hundred, joined between the
 * pieces the workers compressed (main/coded-page.ts). Compressing one costs
 * a compression context's set-up (the zstd binding makes a stream context
 * sized for the level per call, ~0.1-0.2 ms; zlib one deflate stream), which
 * on a page of eight such pieces was most of the main thread's compression
 * time, to save a few dozen bytes. Stored, it costs a copy:
 *
 * - zstd: one frame of one raw block (RFC 8878: single segment, content
 *   size given, no checksum);
 * - deflate: one stored block, not final (BFINAL 0, BTYPE 00): byte-aligned
 *   at both ends, referring to nothing, so it joins raw deflate pieces as a
 *   full flush does (streams/gzip-members.ts).
 */

/** Pieces shorter than this are stored, in every coding, whoever codes them. */
export const STORED_PIECE = 1024;

const ZSTD_MAGIC = 0xfd2fb528;
/** Raw blocks and stored blocks hold at most these many bytes each (zstd's block maximum; deflate's LEN). */
const ZSTD_BLOCK_MAX = 128 * 1024;
const DEFLATE_BLOCK_MAX = 0xffff;

/** `bytes` as one zstd frame of raw blocks (under 2^32 bytes). */
export function zstdStored(bytes: Uint8Array): Buffer {
  const n = bytes.length;
  // Frame_Content_Size field: 1 byte under 256, 2 bytes (n - 256) up to 65,791, else 4.
  const fcs = n < 256 ? 1 : n < 65536 + 256 ? 2 : 4;
  const blocks = Math.max(1, Math.ceil(n / ZSTD_BLOCK_MAX));
  const out = Buffer.allocUnsafe(4 + 1 + fcs + 3 * blocks + n);
  out.writeUInt32LE(ZSTD_MAGIC, 0);
  // Frame_Header_Descriptor: Frame_Content_Size_flag (bits 7-6), Single_Segment_flag (bit 5).
  out[4] = ((fcs === 1 ? 0 : fcs === 2 ? 1 : 2) << 6) | 0x20;
  let at = 5;
  if (fcs === 1) out[at] = n;
  else if (fcs === 2) out.writeUInt16LE(n - 256, at);
  else out.writeUInt32LE(n, at);
  at += fcs;
  for (let b = 0; b < blocks; b++) {
    const from = b * ZSTD_BLOCK_MAX;
    const size = Math.min(ZSTD_BLOCK_MAX, n - from);
    // Block_Header, 3 bytes LE: Last_Block (bit 0), Block_Type 0 = raw (bits 2-1), Block_Size (bits 23-3).
    const h = (size << 3) | (b === blocks - 1 ? 1 : 0);
    out[at] = h & 0xff;
    out[at + 1] = (h >>> 8) & 0xff;
    out[at + 2] = (h >>> 16) & 0xff;
    out.set(bytes.subarray(from, from + size), at + 3);
    at += 3 + size;
  }
  return out;
}

/** `bytes` as raw deflate stored blocks, none final (ends byte-aligned: a piece to join). */
export function deflateStored(bytes: Uint8Array): Buffer {
  const n = bytes.length;
  const blocks = Math.max(1, Math.ceil(n / DEFLATE_BLOCK_MAX));
  const out = Buffer.allocUnsafe(5 * blocks + n);
  let at = 0;
  for (let b = 0; b < blocks; b++) {
    const from = b * DEFLATE_BLOCK_MAX;
    const size = Math.min(DEFLATE_BLOCK_MAX, n - from);
    // BFINAL 0, BTYPE 00, padded to the byte; LEN, then NLEN (its one's complement), LE.
    out[at] = 0;
    out.writeUInt16LE(size, at + 1);
    out.writeUInt16LE(~size & 0xffff, at + 3);
    out.set(bytes.subarray(from, from + size), at + 5);
    at += 5 + size;
  }
  return out;
}
