/**
 * Frame codecs (SPEC section 3): both encodings round-trip and mix in one
 * buffer, and every kind of damage is reported with its exact offset and
 * reason, never thrown.
 */
import { crc32 } from 'node:zlib';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BINARY_HEADER_BYTES,
  decodeFrame,
  decodeRecordFrame,
  encodeBinaryFrame,
  encodeFrame,
  encodeJsonlFrame,
  MAX_FRAME_BYTES,
  type FrameEncoding,
  type FrameResult,
} from '../src/streams/frame-codec.js';
import { SCAN_BLOCK_BYTES, type ScanItem } from '../src/streams/frame-scanner.js';
import { localFiles } from '../src/storage/local/local-backend.js';
import { scanObject } from '../src/storage/scan.js';
import { packBatch } from '../src/core/chunk-codec.js';
import { eventStreamArb } from './helpers/random-log.js';

const dir = mkdtempSync(join(tmpdir(), 'sp-frames-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = { type: 'user/message', seq: 4, time: 1_783_000_000_000, data: { content: [{ type: 'text', text: 'héllo "x"\n' }] }, surfaceOp: 'append' };

/** Record-like values both encodings keep exactly (no -0, no lone surrogates, no __proto__ keys: see docs/decisions.md). */
const valueArb: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.integer(),
    fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 32, 2 ** 40 + 1, 1_783_000_000_000),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(fc.string({ unit: 'grapheme-ascii', maxLength: 6 }).filter((k) => k !== '__proto__'), tie('v'), { maxKeys: 4, noNullPrototype: true }),
  ),
})).v;
const recordArb = fc.dictionary(fc.string({ unit: 'grapheme-ascii', maxLength: 8 }).filter((k) => k !== '__proto__'), valueArb, { maxKeys: 6, noNullPrototype: true });

function expectFault(r: FrameResult, offset: number, reason: string, length?: number): void {
  expect(r.ok).toBe(false);
  if (r.ok) return;
  expect(r.offset).toBe(offset);
  expect(r.reason).toBe(reason);
  expect(r.message).toContain(`offset ${offset}`);
  expect(r.length).toBe(length);
}

/** A binary frame whose header fields are rewritten after encoding. */
function binary(rec: unknown, patch: (b: Buffer) => void = () => undefined): Buffer {
  const b = encodeBinaryFrame(rec);
  patch(b);
  return b;
}

/** A binary frame around arbitrary payload bytes, with a correct checksum. */
function rawBinary(payload: Buffer): Buffer {
  const h = Buffer.alloc(BINARY_HEADER_BYTES);
  h.write('SPF2', 0, 'latin1');
  h.writeUInt16LE(2, 4);
  h.writeUInt16LE(1, 6);
  h.writeUInt32LE(payload.length, 8);
  h.writeUInt32LE(crc32(payload), 12);
  return Buffer.concat([h, payload]);
}

describe('round trip', () => {
  it.each<FrameEncoding>(['jsonl', 'binary'])('%s: any record decodes to itself, alone, with its exact length', (enc) => {
    fc.assert(
      fc.property(recordArb, fc.integer({ min: 0, max: 2 ** 40 }), (rec, at) => {
        const frame = encodeFrame(rec, enc);
        const r = decodeFrame(frame, 0, at);
        expect(r).toEqual({ ok: true, offset: at, length: frame.length, encoding: enc, schema: 1, record: rec });
      }),
      { numRuns: 200 },
    );
  });

  it('JSONL frames are one line, binary frames carry magic, version, schema, length and CRC-32', () => {
    const j = encodeJsonlFrame(record);
    expect(j.toString('utf8')).toBe(JSON.stringify(record) + '\n');
    const b = encodeBinaryFrame(record);
    expect(b.toString('latin1', 0, 4)).toBe('SPF2');
    expect(b.readUInt16LE(4)).toBe(2);
    expect(b.readUInt16LE(6)).toBe(1);
    expect(b.readUInt32LE(8)).toBe(b.length - BINARY_HEADER_BYTES);
    expect(b.readUInt32LE(12)).toBe(crc32(b.subarray(BINARY_HEADER_BYTES)));
  });

  it('frames of both encodings mix in one buffer and each decodes where it starts', () => {
    fc.assert(
      fc.property(eventStreamArb({ contiguous: true, maxPieces: 10 }), fc.array(fc.boolean(), { minLength: 1 }), (events, encs) => {
        const records = packBatch(events);
        const frames = records.map((r, i) => encodeFrame(r, encs[i % encs.length] ? 'binary' : 'jsonl'));
        const buf = Buffer.concat(frames);
        let pos = 0;
        records.forEach((r, i) => {
          const f = decodeRecordFrame(buf, pos, pos);
          expect(f).toMatchObject({ ok: true, offset: pos, length: (frames[i] as Buffer).length, record: r });
          pos += (frames[i] as Buffer).length;
        });
        expect(pos).toBe(buf.length);
      }),
      { numRuns: 100 },
    );
  });

  it('decodes a frame in the middle of a larger buffer, bounded by `end`', () => {
    const a = encodeJsonlFrame({ type: 'a', seq: 0, time: 0 });
    const b = encodeBinaryFrame(record);
    const buf = Buffer.concat([a, b, a]);
    expect(decodeFrame(buf, a.length, 1000)).toMatchObject({ ok: true, offset: 1000, length: b.length, record });
    // `end` cuts the buffer: the same frame is torn when the bytes after `end` are not counted.
    expectFault(decodeFrame(buf, a.length, 1000, a.length + b.length - 1), 1000, 'torn');
  });
});

describe('damage is reported, never thrown', () => {
  const at = 777;

  it('torn JSONL line (no newline)', () => {
    const j = encodeJsonlFrame(record);
    expectFault(decodeFrame(j.subarray(0, j.length - 1), 0, at), at, 'torn');
  });

  it('torn binary frame: header cut, payload cut', () => {
    const b = encodeBinaryFrame(record);
    expectFault(decodeFrame(b.subarray(0, 3), 0, at), at, 'torn');
    expectFault(decodeFrame(b.subarray(0, BINARY_HEADER_BYTES - 1), 0, at), at, 'torn');
    expectFault(decodeFrame(b.subarray(0, b.length - 1), 0, at), at, 'torn');
    expectFault(decodeFrame(Buffer.alloc(0), 0, at), at, 'torn');
  });

  it('wrong checksum, with the frame length known so a scan can go on', () => {
    const b = binary(record, (x) => (x[x.length - 2] ^= 0x01));
    expectFault(decodeFrame(b, 0, at), at, 'bad_checksum', b.length);
    const c = binary(record, (x) => x.writeUInt32LE((x.readUInt32LE(12) + 1) >>> 0, 12));
    expectFault(decodeFrame(c, 0, at), at, 'bad_checksum', c.length);
  });

  it('oversized declared length, without allocating it', () => {
    const b = binary(record, (x) => x.writeUInt32LE(MAX_FRAME_BYTES + 1, 8));
    expectFault(decodeFrame(b, 0, at), at, 'oversized');
  });

  it('bad magic: a first byte that is neither { nor S, and a wrong SPF2 tag', () => {
    expectFault(decodeFrame(Buffer.from('[1,2]\n'), 0, at), at, 'bad_magic');
    expectFault(decodeFrame(binary(record, (x) => x.write('SPX2', 0, 'latin1')), 0, at), at, 'bad_magic');
    // A short prefix that already disagrees with the magic is bad magic, not torn.
    expectFault(decodeFrame(Buffer.from('SQ'), 0, at), at, 'bad_magic');
  });

  it('bad frame version', () => {
    expectFault(decodeFrame(binary(record, (x) => x.writeUInt16LE(3, 4)), 0, at), at, 'bad_version');
  });

  it('invalid JSON', () => {
    const bad = Buffer.from('{"type":"a",\n');
    expectFault(decodeFrame(bad, 0, at), at, 'bad_payload', bad.length);
  });

  it('invalid MessagePack, and MessagePack that is not a map', () => {
    const junk = rawBinary(Buffer.from([0x81, 0xa1, 0x61, 0x01, 0x05])); // {a: 1} then a stray byte
    expectFault(decodeFrame(junk, 0, at), at, 'bad_payload', junk.length);
    const cut = rawBinary(Buffer.from([0x82, 0xa1, 0x61])); // a map of 2 that ends after one key
    expectFault(decodeFrame(cut, 0, at), at, 'bad_payload', cut.length);
    const arr = rawBinary(Buffer.from([0x92, 0x01, 0x02])); // [1, 2]
    expectFault(decodeFrame(arr, 0, at), at, 'bad_payload', arr.length);
  });

  it('a decodable frame whose record breaks a rule is bad_record (decodeRecordFrame)', () => {
    const row = { type: 'text-chunks', seq0: 0, time0: 0, data: { turn: 0, step: 0, index: 0, dt: [1, 2, 3], texts: ['a', 'b'] } };
    for (const enc of ['jsonl', 'binary'] as const) {
      const f = encodeFrame(row, enc);
      const r = decodeRecordFrame(f, 0, at);
      expectFault(r, at, 'bad_record', f.length);
      expect(!r.ok && r.message).toContain('dt has 3 entries');
    }
  });

  it('no byte string makes decodeFrame throw', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.constantFrom(0x7b, 0x53), (bytes, first) => {
        const buf = Buffer.concat([Buffer.from([first]), Buffer.from('PF2'), Buffer.from(bytes)]);
        expect(() => decodeFrame(buf, 0, 0)).not.toThrow();
        expect(() => decodeRecordFrame(buf, 0, 0)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });
});

describe('scanFrames over a file', () => {
  async function scan(name: string, bytes: Buffer): Promise<ScanItem[]> {
    const path = join(dir, name);
    writeFileSync(path, bytes);
    const out: ScanItem[] = [];
    for await (const f of scanObject(localFiles, path, 0)) out.push(f);
    return out;
  }

  const frames = (n: number): Buffer[] => Array.from({ length: n }, (_, i) => encodeFrame({ type: 'e', seq: i, time: i, pad: 'x'.repeat(i % 50) }, i % 3 === 0 ? 'binary' : 'jsonl'));
  const offsets = (fs: Buffer[]): number[] => fs.reduce<number[]>((o, f, i) => (o.push(i === 0 ? 0 : (o[i - 1] as number) + (fs[i - 1] as Buffer).length), o), []);

  it('reads every frame across block boundaries, including one larger than a block', async () => {
    const fs = [...frames(30_000), encodeBinaryFrame({ type: 'big', seq: 0, time: 0, blob: 'z'.repeat(SCAN_BLOCK_BYTES + 10) }), ...frames(10)];
    const total = fs.reduce((n, f) => n + f.length, 0);
    expect(total).toBeGreaterThan(2 * SCAN_BLOCK_BYTES);
    const items = await scan('many', Buffer.concat(fs));
    expect(items.every((i) => i.ok)).toBe(true);
    expect(items.map((i) => i.offset)).toEqual(offsets(fs));
  });

  it('reports a bad checksum in the middle at its offset and goes on', async () => {
    const fs = frames(9);
    (fs[3] as Buffer)[20] ^= 0xff; // frame 3 is binary
    const items = await scan('mid-crc', Buffer.concat(fs));
    expect(items).toHaveLength(9);
    expect(items[3]).toMatchObject({ ok: false, reason: 'bad_checksum', offset: offsets(fs)[3] });
    expect(items.filter((i) => !i.ok)).toHaveLength(1);
  });

  it('reports invalid JSON in the middle at its offset and goes on', async () => {
    const fs = frames(6);
    fs[2] = Buffer.from('{not json}\n');
    const items = await scan('mid-json', Buffer.concat(fs));
    expect(items.map((i) => (i.ok ? 'ok' : i.reason))).toEqual(['ok', 'ok', 'bad_payload', 'ok', 'ok', 'ok']);
    expect(items[2]?.offset).toBe(offsets(fs)[2]);
  });

  it('stops at a torn tail, reporting where it starts', async () => {
    const fs = frames(5);
    const whole = Buffer.concat(fs);
    const items = await scan('torn', whole.subarray(0, whole.length - 3));
    expect(items.map((i) => (i.ok ? 'ok' : i.reason))).toEqual(['ok', 'ok', 'ok', 'ok', 'torn']);
    expect(items[4]?.offset).toBe(offsets(fs)[4]);
  });

  it('stops at bad magic and at an oversized length: the next boundary is unknown', async () => {
    const fs = frames(4);
    const magic = await scan('magic', Buffer.concat([fs[0] as Buffer, Buffer.from('garbage\n'), fs[1] as Buffer]));
    expect(magic.map((i) => (i.ok ? 'ok' : i.reason))).toEqual(['ok', 'bad_magic']);
    expect(magic[1]?.offset).toBe((fs[0] as Buffer).length);
    const big = binary(record, (x) => x.writeUInt32LE(0xffffffff, 8));
    const over = await scan('oversized', Buffer.concat([fs[1] as Buffer, big, fs[2] as Buffer]));
    expect(over.map((i) => (i.ok ? 'ok' : i.reason))).toEqual(['ok', 'oversized']);
    expect(over[1]?.offset).toBe((fs[1] as Buffer).length);
  });
});
