/**
 * Short pieces of a coded page are stored, not compressed
 * (streams/stored-piece.ts): each stored form decodes to its bytes by every
 * decoder the tests have (zlib, fzstd, the zstd binding, the CLIs), at the
 * length edges of its header fields and blocks, alone and joined with
 * compressed pieces into one body; codePiece stores exactly the pieces under
 * STORED_PIECE.
 */
import { crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import { Decoder } from '@toondepauw/node-zstd';
import { describe, expect, it } from 'vitest';
import { joinCodedPieces } from '../src/main/coded-page.js';
import { deflateStored, STORED_PIECE, zstdStored } from '../src/streams/stored-piece.js';
import { codePiece } from '../src/workers/slice-compress.js';
import { CODING_GZIP, CODING_ZSTD } from '../src/workers/slice-protocol.js';
import { decoders } from './helpers/decoders.js';

/** Bytes of `n` that are not all alike (a piece of JSON, repeated and numbered). */
function bytesOf(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + (i >> 7)) & 0xff;
  return b;
}

// The edges: empty, the 1-byte content size's last, the 2-byte field's first and last, one zstd
// block and one more, one deflate block (65,535) and one more.
const LENGTHS = [0, 1, 255, 256, 1023, 65535, 65536, 65791, 65792, 128 * 1024, 128 * 1024 + 1, 300_000];
const zstdBinding = new Decoder();

describe('stored pieces', () => {
  it.each(LENGTHS)('zstd, %i bytes: one frame every decoder reads back', (n) => {
    const b = bytesOf(n);
    const frame = zstdStored(b);
    for (const d of decoders('zstd', n < 70_000)) expect(d.decode(frame).equals(b), d.name).toBe(true);
    expect(zstdBinding.decodeSync(frame).equals(b)).toBe(true);
  });

  it.each(LENGTHS)('deflate, %i bytes: raw blocks, none final, that join into a gzip body', (n) => {
    const b = bytesOf(n);
    const raw = deflateStored(b);
    // Not final: zlib reads the bytes back but waits for more (finishFlush lets it stop there).
    expect(inflateRawSync(raw, { finishFlush: 2 }).equals(b)).toBe(true);
    const other = Buffer.from('{"sessionId":"s","messages":['.repeat(200));
    const pieces = [
      { bytes: deflateStored(other.subarray(0, 100)), crc: crc32(other.subarray(0, 100)), length: 100 },
      { bytes: raw, crc: crc32(b), length: n },
      { bytes: deflateRawSync(other, { finishFlush: 3 }), crc: crc32(other), length: other.length },
    ];
    const body = joinCodedPieces(pieces, 'gzip');
    const want = Buffer.concat([other.subarray(0, 100), b, other]);
    for (const d of decoders('gzip', n < 70_000)) expect(d.decode(body).equals(want), d.name).toBe(true);
  });

  it('zstd frames stored and compressed concatenate into one body', () => {
    const parts = [bytesOf(10), Buffer.from('x'.repeat(50_000)), bytesOf(700)];
    const coded = parts.map((p) => ({ bytes: codePiece(p, CODING_ZSTD, 6), crc: 0, length: p.length }));
    const body = joinCodedPieces(coded, 'zstd');
    for (const d of decoders('zstd')) expect(d.decode(body).equals(Buffer.concat(parts)), d.name).toBe(true);
  });

  it('codePiece stores the pieces under STORED_PIECE and compresses the others', () => {
    const short = Buffer.from('a'.repeat(STORED_PIECE - 1));
    const long = Buffer.from('a'.repeat(STORED_PIECE));
    expect(codePiece(short, CODING_ZSTD, 6).equals(zstdStored(short))).toBe(true);
    expect(codePiece(short, CODING_GZIP, 6).equals(deflateStored(short))).toBe(true);
    expect(codePiece(long, CODING_ZSTD, 6).length).toBeLessThan(100);
    expect(codePiece(long, CODING_GZIP, 6).length).toBeLessThan(100);
  });
});
