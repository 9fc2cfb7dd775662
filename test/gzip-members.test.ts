/**
 * Joining compressed pieces into one body (issue 12): the CRC-32 combine
 * against zlib's own CRC of the whole, and bodies cut anywhere, each piece
 * compressed apart (gzip: raw deflate ending on a full flush; zstd: a
 * frame), decoding to exactly the whole (zlib, fzstd and the gzip and zstd
 * command-line tools).
 */
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { codeHere, joinCodedPieces } from '../src/main/coded-page.js';
import { crc32Combine, gzipMember } from '../src/streams/gzip-members.js';
import { decoders } from './helpers/decoders.js';

/** Bytes that compress like JSON text: words and numbers, some random bytes. */
const bodyArb = fc.oneof(
  fc.uint8Array({ maxLength: 3000 }),
  fc.array(fc.oneof(fc.constantFrom('{"event":', '"text":"', 'delta', '},', '[', ']'), fc.integer().map(String), fc.string()), { maxLength: 2000 }).map((parts) => new Uint8Array(Buffer.from(parts.join('')))),
);

/** `body` cut at `cuts` (fractions), as pieces in order. */
function cut(body: Uint8Array, cuts: number[]): Buffer[] {
  const at = [0, ...cuts.map((c) => Math.floor(c * body.length)).sort((a, b) => a - b), body.length];
  return at.slice(0, -1).map((a, i) => Buffer.from(body.subarray(a, at[i + 1])));
}

describe('crc32Combine', () => {
  it('gives the CRC-32 of A then B from the two CRCs and the length of B', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), fc.uint8Array({ maxLength: 2000 }), (a, b) => {
        expect(crc32Combine(crc32(a), crc32(b), b.length)).toBe(crc32(Buffer.concat([a, b])));
      }),
    );
  });

  it('holds for long pieces (lengths past 2^24) and empty ones', () => {
    const big = Buffer.alloc((1 << 24) + 12345, 0x61);
    const a = Buffer.from('page envelope');
    expect(crc32Combine(crc32(a), crc32(big), big.length)).toBe(crc32(Buffer.concat([a, big])));
    expect(crc32Combine(crc32(a), 0, 0)).toBe(crc32(a));
    expect(crc32Combine(0, crc32(a), a.length)).toBe(crc32(a));
  });
});

describe('bodies joined from pieces compressed apart', () => {
  for (const encoding of ['gzip', 'zstd'] as const) {
    it(`${encoding}: any cut, any level, decodes to the whole (zlib/fzstd)`, () => {
      fc.assert(
        fc.property(bodyArb, fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), fc.constantFrom(1, 3, 6), (body, cuts, level) => {
          const joined = joinCodedPieces(cut(body, cuts).filter((p) => p.length > 0).map((p) => codeHere(p, encoding, level)), encoding);
          for (const d of decoders(encoding, false)) expect(d.decode(joined).equals(Buffer.from(body)), d.name).toBe(true);
        }),
        { numRuns: 200 },
      );
    });

    it(`${encoding}: the command-line decoder agrees`, () => {
      fc.assert(
        fc.property(bodyArb, fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 4 }), (body, cuts) => {
          const joined = joinCodedPieces(cut(body, cuts).filter((p) => p.length > 0).map((p) => codeHere(p, encoding, 1)), encoding);
          for (const d of decoders(encoding)) expect(d.decode(joined).equals(Buffer.from(body)), d.name).toBe(true);
        }),
        { numRuns: 15 },
      );
    });
  }

  it('gzip: an empty body is a valid member; the header names no time, the trailer the length', () => {
    const empty = Buffer.from(gzipMember([]));
    for (const d of decoders('gzip')) expect(d.decode(empty).length, d.name).toBe(0);
    const body = Buffer.from('x'.repeat(70000));
    const g = Buffer.from(gzipMember([codeHere(body.subarray(0, 5), 'gzip', 6), codeHere(body.subarray(5), 'gzip', 6)]));
    expect(g.readUInt32LE(4)).toBe(0);
    expect(g.readUInt32LE(g.length - 4)).toBe(body.length);
    expect(g.readUInt32LE(g.length - 8)).toBe(crc32(body));
  });
});
