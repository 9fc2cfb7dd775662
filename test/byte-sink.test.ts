/**
 * The worker's growable byte buffer: whatever is written, in whatever
 * sizes, reads back as the same bytes as one concatenation would give.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteSink } from '../src/core/byte-sink.js';

type Op = { k: 'bytes'; v: Uint8Array; from: number; to: number } | { k: 'ascii'; v: string } | { k: 'text'; v: string } | { k: 'int'; v: number } | { k: 'byte'; v: number } | { k: 'clear' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.uint8Array({ maxLength: 300 }).chain((v) => fc.tuple(fc.nat(v.length), fc.nat(v.length)).map(([a, b]) => ({ k: 'bytes' as const, v, from: Math.min(a, b), to: Math.max(a, b) }))),
  fc.string({ unit: fc.constantFrom(...'{}[],:"abc019'.split('')), maxLength: 40 }).map((v) => ({ k: 'ascii' as const, v })),
  fc.string({ unit: 'grapheme', maxLength: 40 }).map((v) => ({ k: 'text' as const, v })),
  fc.oneof(fc.integer({ min: -20, max: 20 }), fc.maxSafeInteger(), fc.maxSafeNat()).map((v) => ({ k: 'int' as const, v })),
  fc.integer({ min: 0, max: 255 }).map((v) => ({ k: 'byte' as const, v })),
  fc.constant({ k: 'clear' as const }),
);

/** An arena holding `source`, then two sinks' regions of `room` bytes each (as a worker lays out a slice's arena). */
function arenaWithTwoSinks(source: Uint8Array, room: number): { arena: Buffer; slice: Buffer; a: ByteSink; b: ByteSink } {
  const arena = Buffer.allocUnsafeSlow(source.length + 2 * room);
  const slice = arena.subarray(0, source.length);
  slice.set(source);
  const a = new ByteSink();
  const b = new ByteSink();
  a.place(arena, source.length, room, slice);
  b.place(arena, source.length + room, room, slice);
  return { arena, slice, a, b };
}

describe('ByteSink', () => {
  it('holds exactly the bytes written, across any growth', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.array(opArb, { maxLength: 60 }), (capacity, ops) => {
        const sink = new ByteSink(capacity);
        let want: Buffer[] = [];
        for (const op of ops) {
          if (op.k === 'bytes') {
            sink.bytes(op.v, op.from, op.to);
            want.push(Buffer.from(op.v.subarray(op.from, op.to)));
          } else if (op.k === 'ascii') {
            sink.ascii(op.v);
            want.push(Buffer.from(op.v, 'latin1'));
          } else if (op.k === 'text') {
            sink.text(op.v);
            want.push(Buffer.from(op.v, 'utf8'));
          } else if (op.k === 'int') {
            sink.int(op.v);
            want.push(Buffer.from(JSON.stringify(op.v)));
          } else if (op.k === 'byte') {
            sink.byte(op.v);
            want.push(Buffer.from([op.v]));
          } else {
            sink.clear();
            want = [];
          }
        }
        const all = Buffer.concat(want);
        expect(Buffer.from(sink.view())).toEqual(all);
        expect(sink.length).toBe(all.length);
        const other = new ByteSink(1);
        other.sink(sink);
        expect(Buffer.from(other.view())).toEqual(all);
      }),
      { numRuns: 300 },
    );
  });

  it('writes the same bytes from an arena region, copying from the arena or from elsewhere, and after outgrowing its region', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 400 }), fc.integer({ min: 1, max: 300 }), fc.array(fc.tuple(fc.nat(), fc.nat(), fc.boolean()), { maxLength: 40 }), (source, room, copies) => {
        const { slice, a, b } = arenaWithTwoSinks(source, room);
        const elsewhere = Buffer.from(source);
        const want: Buffer[] = [];
        for (const [x, y, fromArena] of copies) {
          const from = x % (source.length + 1);
          const to = from + (y % (source.length - from + 1));
          a.bytes(fromArena ? slice : elsewhere, from, to);
          want.push(Buffer.from(source.subarray(from, to)));
        }
        const all = Buffer.concat(want);
        expect(Buffer.from(a.view())).toEqual(all);
        // Sink to sink within the arena (or out of it once either outgrew its region).
        b.sink(a);
        b.sink(a);
        expect(Buffer.from(b.view())).toEqual(Buffer.concat([all, all]));
        // The source region was never written over.
        expect(Buffer.from(slice)).toEqual(Buffer.from(source));
      }),
      { numRuns: 300 },
    );
  });
  it('framed: its bytes between a head written over the end of the source region and a tail in its spare room, or null when they do not fit or it left the arena', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 60 }), fc.integer({ min: 1, max: 80 }), fc.uint8Array({ maxLength: 100 }), fc.string({ maxLength: 12 }), fc.uint8Array({ maxLength: 4 }), (source, room, written, head, tail) => {
        const { arena, slice, a, b } = arenaWithTwoSinks(source, room);
        a.bytes(written, 0, written.length);
        b.bytes(written, 0, written.length);
        const headBytes = Buffer.byteLength(head, 'utf8');
        const want = Buffer.concat([Buffer.from(head, 'utf8'), Buffer.from(written), Buffer.from(tail)]);
        const fits = written.length + tail.length <= room && headBytes <= source.length;
        const got = a.framed(head, headBytes, tail);
        if (fits) {
          expect(got).not.toBeNull();
          expect(Buffer.from(got as Buffer)).toEqual(want);
          // A view of the arena, not a copy.
          expect((got as Buffer).buffer).toBe(arena.buffer);
        } else {
          expect(got).toBeNull();
        }
        // b's region follows a's, not the source: never framed (it would write over a's bytes).
        expect(b.framed(head, headBytes, tail)).toBeNull();
        expect(Buffer.from(b.view())).toEqual(Buffer.from(written));
      }),
      { numRuns: 300 },
    );
  });
});
