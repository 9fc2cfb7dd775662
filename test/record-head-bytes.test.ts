/**
 * The worker writes a packed row's head and a short run's events as bytes
 * (core/fragment-run.ts writePackedRowHead, writeShortRun; numbers through
 * core/int-digits.ts), not through strings: whatever the run's numbers
 * (large times, negative or unsafe values, -0) and its tool id and name
 * (any Unicode), the bytes are exactly the string forms' (packedRowHead,
 * chunkEvent's JSON).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteSink } from '../src/core/byte-sink.js';
import { chunkEvent, type RunKey } from '../src/core/chunk-codec.js';
import { packedRowHead, writePackedRowHead, writeShortRun } from '../src/core/fragment-run.js';
import { writeInt } from '../src/core/int-digits.js';

const anyNumber = fc.oneof(
  fc.integer({ min: -20, max: 20 }),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
  fc.constantFrom(-0, 2 ** 31, -(2 ** 31), 2 ** 32, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 53, 2 ** 70, 1.5, -0.25, 1e21),
);
const text = fc.string({ unit: 'grapheme', maxLength: 12 });

const keyArb: fc.Arbitrary<RunKey> = fc.record({
  kind: fc.constantFrom('text', 'reasoning', 'tool') as fc.Arbitrary<RunKey['kind']>,
  turn: anyNumber,
  step: anyNumber,
  index: anyNumber,
  id: fc.option(text, { nil: undefined }),
  name: fc.option(text, { nil: undefined }),
});

function written(write: (s: ByteSink) => void, capacity = 16): string {
  const s = new ByteSink(capacity);
  write(s);
  return s.toString();
}

describe('integers written without strings', () => {
  it('writeInt writes what String writes, for every safe integer', () => {
    fc.assert(
      fc.property(fc.oneof(fc.maxSafeInteger(), fc.integer(), fc.integer({ min: -1000, max: 1000 }), fc.constantFrom(-0, 2 ** 31, -(2 ** 31), 2 ** 31 - 1, 999_999_999, 1e9, 1e15)), (v) => {
        const out = new Uint8Array(24);
        expect(Buffer.from(out.subarray(0, writeInt(v, out, 0))).toString('latin1')).toBe(String(v));
      }),
      { numRuns: 2000 },
    );
  });

  it('ByteSink#int writes what String writes, for any number', () => {
    fc.assert(
      fc.property(anyNumber, fc.integer({ min: 1, max: 40 }), (v, cap) => {
        expect(written((s) => s.int(v), cap)).toBe(String(v));
      }),
    );
  });

  it("ByteSink#json writes JSON.stringify's bytes, for any string (quotes, backslashes, controls, DEL, non-ASCII, lone surrogates) and for undefined", () => {
    const anyString = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: fc.constantFrom('a', 'Z', '0', '_', ':', '"', '\\', '\n', '\u0000', '\u001f', ' ', '~', '\u007f', 'é', '\ud800', '😀'), maxLength: 40 }),
      fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 60 }),
    );
    fc.assert(
      fc.property(fc.option(anyString, { nil: undefined }), fc.integer({ min: 1, max: 40 }), (v, cap) => {
        const sink = new ByteSink(cap);
        sink.ascii('x');
        sink.json(v);
        sink.ascii('y');
        expect(Buffer.from(sink.view())).toEqual(Buffer.from(`x${JSON.stringify(v)}y`, 'utf8'));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('a packed row head written as bytes', () => {
  it('is packedRowHead exactly', () => {
    fc.assert(
      fc.property(keyArb, anyNumber, anyNumber, fc.integer({ min: 1, max: 64 }), (key, seq0, time0, cap) => {
        const run = { ...key, seq0, time0 };
        expect(written((s) => writePackedRowHead(s, run), cap)).toBe(packedRowHead(run));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('a short run written as events', () => {
  it("is chunkEvent's JSON, its one gap in any JSON spelling of an integer", () => {
    const gapSpelling = fc.oneof(
      fc.integer({ min: -100_000, max: 100_000 }).map((g) => ({ g, text: String(g) })),
      fc.maxSafeInteger().map((g) => ({ g, text: String(g) })),
      fc.constantFrom({ g: 0, text: '-0' }, { g: 5, text: ' 5 ' }, { g: 7, text: '7 ' }, { g: 120, text: '1.2e2' }, { g: 3, text: '3.0' }),
    );
    const member = fc.string({ unit: 'grapheme', maxLength: 8 }).map((m) => JSON.stringify(m));
    fc.assert(
      // (A tool call's run always has an id: chunkEvent leaves an undefined one out.)
      fc.property(keyArb.map((k) => (k.kind === 'tool' && k.id === undefined ? { ...k, id: 'call_1' } : k)), fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: 0, max: 2 ** 42 }), gapSpelling, member, member, fc.boolean(), (key, seq0, time0, gap, m0, m1, two) => {
        const n = two ? 2 : 1;
        const dt = new ByteSink(4);
        if (two) dt.ascii(gap.text);
        const members = new ByteSink(4);
        members.text(two ? `${m0} , ${m1}` : m0);
        const got = written((s) => writeShortRun(s, { ...key, seq0, time0, n }, dt, members), 8);
        const want = [JSON.stringify({ event: chunkEvent(key, seq0, time0, JSON.parse(m0) as string) })];
        if (two) want.push(JSON.stringify({ event: chunkEvent(key, seq0 + 1, time0 + gap.g, JSON.parse(m1) as string) }));
        expect(got).toBe(want.join(','));
      }),
      { numRuns: 1000 },
    );
  });
});
