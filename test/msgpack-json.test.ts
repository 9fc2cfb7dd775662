/**
 * The MessagePack-to-JSON transcoder (streams/msgpack-json.ts): its bytes
 * are exactly JSON.stringify of msgpackr's decode (with the frame codec's
 * options) for every JSON-compatible value, and on hand-built payloads
 * (every integer and string width, floats of both sizes, repeated and
 * reordered keys, bad UTF-8) it either writes exactly that or declines;
 * it always declines what the full decode refuses as not JSON.
 */
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { jsonBytesBound, msgpackToJson, TRANSCODE_DECLINED } from '../src/streams/msgpack-json.js';
import { msgpackJsonFault } from '../src/streams/msgpack-check.js';
import { keepsVerbatimInMsgpack } from '../src/streams/frame-codec.js';
import { encode, type Node } from './helpers/msgpack-hand.js';

/** The frame codec's options (frame-codec.ts). */
const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true, int64AsType: 'number' });
/** The same, packing every non-integer as a 32-bit float where it is exact (so 0xca meets the transcoder). */
const packr32 = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true, int64AsType: 'number', useFloat32: 1 });

function transcode(payload: Uint8Array, strict: boolean): string | null {
  // Output placed mid-buffer, after junk, to catch a write outside its range.
  const out = Buffer.alloc(jsonBytesBound(payload.length) + 8, 0x7b);
  const end = msgpackToJson(payload, 0, payload.length, out, 3, strict);
  if (end === TRANSCODE_DECLINED) return null;
  expect(end).toBeLessThanOrEqual(3 + jsonBytesBound(payload.length));
  return out.toString('utf8', 3, end);
}

/** What the full decode path serves for a payload: JSON.stringify of msgpackr's value. */
function reference(payload: Uint8Array): string {
  return JSON.stringify(packr.unpack(payload));
}

const specialNumbers = fc.constantFrom(0, -0, 1, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, -128, -129, -32768, -32769, 2 ** 31, -(2 ** 31), 2 ** 32, -(2 ** 32) - 1, 2 ** 53 - 1, -(2 ** 53 - 1), 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 0.1, -2.5, 1 / 3, 123456789.123, 3_000_000_007, -4_000_000_000, 1_783_352_050_748, 9_007_199_000_000_001);

const stringArb = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ maxLength: 80 }),
  fc.constantFrom('', '"', '\\', '\u0000', '\u001f', '\u007f', '\b\f\n\r\t', '\u2028\u2029', 'é', '😀', '\ufeff', 'x'.repeat(40), 'é'.repeat(200), '\ud800', 'a\udc00b'),
);

const jsonValueArb: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    stringArb,
    fc.integer(),
    specialNumbers,
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(fc.oneof(stringArb, fc.constantFrom('0', '1', '10', '4294967294', '4294967295', '01', '__proto__', 'type')), tie('v'), { maxKeys: 5, noNullPrototype: true }),
    // More than 15 items and 16 keys: the 16- and 32-bit container headers.
    fc.array(fc.integer(), { minLength: 16, maxLength: 20 }),
    fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { minKeys: 17, maxKeys: 20, noNullPrototype: true }),
  ),
})).v;

describe('msgpackToJson on JSON-compatible values', () => {
  it('writes JSON.stringify of the decode, in strict mode', () => {
    fc.assert(
      fc.property(jsonValueArb, fc.boolean(), (value, f32) => {
        const payload = (f32 ? packr32 : packr).pack(value);
        const got = transcode(payload, true);
        // Declined only where a straight copy could differ (repeated/reordered/__proto__ keys, bad UTF-8, a BOM).
        if (got !== null) expect(got).toBe(reference(payload));
        else expect(JSON.stringify(value)).toMatch(/"__proto__"|"\d+":|\\ud[89a-f]|\ufeff/);
      }),
      { numRuns: 3000 },
    );
  });

  it('writes the same in trusted mode for what the writer packs (keepsVerbatimInMsgpack)', () => {
    fc.assert(
      fc.property(jsonValueArb, (value) => {
        const json = JSON.stringify(value);
        fc.pre(keepsVerbatimInMsgpack(json) && !json.includes('\ufeff'));
        const payload = packr.pack(value);
        expect(transcode(payload, false)).toBe(reference(payload));
        expect(transcode(payload, true)).toBe(reference(payload));
      }),
      { numRuns: 3000 },
    );
  });

  it('formats numbers as JS does', () => {
    for (const v of [-0, 0.1, 1e21, 1e-7, 5e-324, 2 ** 53 - 1, -(2 ** 53 - 1), 1.5, -1e300, 100, 2 ** 32]) {
      expect(transcode(packr.pack(v), true)).toBe(JSON.stringify(v));
      expect(transcode(packr.pack([v]), true)).toBe(JSON.stringify([v]));
    }
    // A float64 holding an integer, as another encoder may write one.
    const f = Buffer.alloc(9);
    f[0] = 0xcb;
    f.writeDoubleBE(42, 1);
    expect(transcode(f, true)).toBe('42');
    f.writeDoubleBE(-0, 1);
    expect(transcode(f, true)).toBe('0');
  });

  it("writes arrays of unsigned integers of every width, and strings with a byte to escape at every place in a word, as the full decode does, in both modes", () => {
    // The array loop's own integer path (uint8/16/32 amid strings and fixints), ended or cut anywhere.
    const items: unknown[] = [0, 127, 128, 255, 256, 65535, 65536, 162615, 2 ** 32 - 1, 'ab', 5, 4_000_000_000, -1, 1.5, 300];
    const payload = packr.pack({ sourceEventSeqs: items, time: 1_783_012_700_104 });
    for (const strict of [true, false]) {
      expect(transcode(payload, strict)).toBe(reference(payload));
      for (let cut = 0; cut < payload.length; cut++) expect(transcode(payload.subarray(0, cut), strict)).toBeNull();
    }
    // Trusted strings go a word at a time: an escaped byte (or a multi-byte character) at each position, each length.
    for (let len = 0; len <= 13; len++) {
      for (let at = 0; at < len; at++) {
        for (const c of ['"', '\\', '\n', '\u0001', 'é', '→']) {
          const s = 'x'.repeat(at) + c + 'y'.repeat(Math.max(0, len - at - 1));
          const p = packr.pack({ text: s, more: [s, s + s] });
          expect(transcode(p, false)).toBe(JSON.stringify({ text: s, more: [s, s + s] }));
        }
      }
    }
  });

  it('escapes as JSON.stringify does', () => {
    let all = '';
    for (let c = 0; c < 0x80; c++) all += String.fromCharCode(c);
    all += 'é😀\u2028';
    expect(transcode(packr.pack({ [all]: all }), true)).toBe(JSON.stringify({ [all]: all }));
  });
});

const widthArb = fc.constantFrom(0, 1, 2, 4, 8);
const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');
const strBytesArb: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 6, arbitrary: stringArb.map(utf8) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 6 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      [0xc0, 0x80], // overlong NUL
      [0xe0, 0x80, 0x80], // overlong
      [0xed, 0xa0, 0x80], // a surrogate
      [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
      [0xf0, 0x9f, 0x98], // cut
      [0x80],
      [0xef, 0xbb, 0xbf, 0x41],
      [0x41, 0xef, 0xbb, 0xbf],
    ).map((b) => Uint8Array.from(b)),
  },
);
const keyArb: fc.Arbitrary<Node> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ t: fc.constant('str' as const), bytes: fc.oneof(fc.constantFrom('a', 'b', 'type', '0', '1', '7', '12', '__proto__', '__proto_').map(utf8), strBytesArb), width: widthArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('int' as const), v: fc.integer({ min: -40, max: 300 }), width: widthArb }) },
);

const nodeArb: fc.Arbitrary<Node> = fc.letrec<{ n: Node }>((tie) => ({
  n: fc.oneof(
    { depthSize: 'small' },
    fc.record({ t: fc.constant('int' as const), v: fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.constantFrom(2 ** 53, -(2 ** 53), 2 ** 63, -(2 ** 63))), width: widthArb }),
    fc.record({ t: fc.constant('float' as const), v: fc.oneof(fc.double(), fc.constantFrom(NaN, Infinity, -0, 3)), f32: fc.boolean() }),
    fc.record({ t: fc.constant('str' as const), bytes: strBytesArb, width: widthArb }),
    fc.record({ t: fc.constant('lit' as const), byte: fc.constantFrom(0xc0, 0xc2, 0xc3, 0xc1) }),
    // bin 8, ext 8, fixext 1 (a timestamp-typed one too): never JSON.
    fc.record({ t: fc.constant('raw' as const), bytes: fc.constantFrom([0xc4, 1, 0x41], [0xc7, 1, 5, 0], [0xd4, 0xff, 0], [0xd6, 0xff, 0, 0, 0, 0]).map((b) => Uint8Array.from(b)) }),
    fc.record({ t: fc.constant('arr' as const), items: fc.array(tie('n'), { maxLength: 4 }), width: fc.constantFrom(0, 2, 4) }),
    fc.record({ t: fc.constant('map' as const), entries: fc.array(fc.tuple(keyArb, tie('n')), { maxLength: 4 }), width: fc.constantFrom(0, 2, 4) }),
  ),
})).n;


describe('msgpackToJson on hand-built payloads', () => {
  it('writes exactly what the full decode serves, or declines; declines whatever the full decode refuses', () => {
    let transcoded = 0;
    fc.assert(
      fc.property(nodeArb, fc.boolean(), (node, strict) => {
        const payload = encode(node);
        const fault = msgpackJsonFault(payload);
        const got = transcode(payload, strict);
        if (fault !== null) {
          expect(got, fault).toBeNull();
          return;
        }
        if (got === null) return;
        transcoded++;
        if (strict) expect(got).toBe(reference(payload));
        // Trusted mode skips the UTF-8 and key checks: equal at least whenever strict mode agrees.
        else if (transcode(payload, true) !== null) expect(got).toBe(reference(payload));
        // Valid JSON either way.
        expect(() => JSON.parse(got)).not.toThrow();
      }),
      { numRuns: 4000 },
    );
    expect(transcoded).toBeGreaterThan(1000);
  });

  it('declines cut payloads, trailing bytes and nesting past the limit', () => {
    const good = packr.pack({ type: 'user/message', seq: 1, time: 2, data: { t: ['a', 1.5, null, true] } });
    for (let cut = 0; cut < good.length; cut++) expect(transcode(good.subarray(0, cut), true)).toBeNull();
    expect(transcode(Buffer.concat([good, Buffer.from([0])]), true)).toBeNull();
    // The nesting limit msgpack-check.ts applies: 128 levels, not 129.
    const nested = (n: number): Buffer => Buffer.concat([Buffer.alloc(n, 0x91), Buffer.from([0xc0])]);
    expect(msgpackJsonFault(nested(128))).toBeNull();
    expect(transcode(nested(128), true)).toBe('['.repeat(128) + 'null' + ']'.repeat(128));
    expect(msgpackJsonFault(nested(129))).toMatch(/deeper than 128/);
    expect(transcode(nested(129), true)).toBeNull();
  });

  it('declines the key orders a JS object would change, in strict mode only', () => {
    const map = (...keys: string[]): Buffer => encode({ t: 'map', width: 0, entries: keys.map((k) => [{ t: 'str', bytes: utf8(k), width: 0 }, { t: 'int', v: 1, width: 0 }] as [Node, Node]) });
    for (const keys of [['a', 'a'], ['b', '1'], ['2', '1'], ['1', '1'], ['__proto__']]) {
      expect(transcode(map(...keys), true), keys.join()).toBeNull();
    }
    for (const keys of [['1', '2', 'b', 'a'], ['01', 'a', '4294967295'], ['__proto_'], ['a', 'b']]) {
      expect(transcode(map(...keys), true), keys.join()).toBe(reference(map(...keys)));
    }
  });

  it('declines strings that are not well-formed UTF-8, or begin with a byte-order mark', () => {
    const str = (b: number[]): Buffer => encode({ t: 'str', width: 0, bytes: Uint8Array.from(b) });
    for (const b of [[0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0xff], [0xef, 0xbb, 0xbf]]) expect(transcode(str(b), true)).toBeNull();
    expect(transcode(str([0xe2, 0x82, 0xac]), true)).toBe('"€"');
    expect(transcode(str([0xf4, 0x8f, 0xbf, 0xbf]), true)).toBe(JSON.stringify('\u{10ffff}'));
  });
});
