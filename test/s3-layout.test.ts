/**
 * The pure parts of the S3 backend (docs/s3-layout.md): the store URL, the
 * key-to-member mapping, manifests (strict decoding, extents cut and
 * resolved), the segment object format, where a segment is cut, the round
 * trip count of a call timeline, the block cache's bound and coalescing,
 * and reads verified by the objects' check tables.
 */
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BlockCache } from '../src/storage/s3/block-cache.js';
import { decodeManifest, encodeManifest, extentsBefore, extentsFrom, piecesOf, sealedEnd, type Extent, type Manifest } from '../src/storage/s3/manifest.js';
import { CheckedReads } from '../src/storage/s3/checked-reads.js';
import { MemoryObjectStore, RecordingStore, roundTrips, type CallRecord } from '../src/storage/s3/object-store.js';
import { listedName, manifestName, manifestNumber, roleOfKey } from '../src/storage/s3/remote-names.js';
import { sealCut } from '../src/storage/s3/seal-cut.js';
import { decodeSegment, encodeSegment } from '../src/storage/s3/segment-file.js';
import { parseS3Url } from '../src/storage/s3/store-url.js';
import { checkSparse, pageRecords, SPARSE_OF, summarizeRecords, type SparseIndex } from '../src/storage/s3/sparse-index.js';
import { INDEX_RECORD_BYTES, indexBackward, indexRecords } from '../src/streams/frame-index-file.js';
import { planPage } from '../src/core/page-planner.js';
import { resolvePageParams } from '../src/core/page-rule.js';
import type { EntryLine } from '../src/core/types.js';

describe('s3 store URL', () => {
  it('parses bucket and prefix, refuses what S3 or a path would not take', () => {
    expect(parseS3Url('s3://bucket')).toEqual({ bucket: 'bucket', prefix: '' });
    expect(parseS3Url('s3://my.bucket-1/a/b/')).toEqual({ bucket: 'my.bucket-1', prefix: 'a/b' });
    for (const bad of ['s3://', 's3://B', 's3://ab', 'http://bucket/x', 's3://bucket/a//b', 's3://bucket/../x', 's3://bucket/a/./b']) expect(() => parseS3Url(bad), bad).toThrow();
  });
});

describe('s3 remote names', () => {
  it('maps the layout keys to session members and back to listed names', () => {
    expect(roleOfKey('sessions/a.b.events')).toEqual({ id: 'a.b', member: 'events' });
    expect(roleOfKey('sessions/index/x.index.json')).toEqual({ id: 'x', member: 'meta' });
    expect(roleOfKey('sessions/index/x.entries.jsonl')).toEqual({ id: 'x', member: 'entries' });
    expect(roleOfKey('sessions/index/x/frames.idx')).toEqual({ id: 'x', member: 'p/frames.idx' });
    expect(roleOfKey('sessions/x.lock')).toEqual({ id: 'x', lock: true });
    for (const bad of ['other/x.events', 'sessions/x', 'sessions/index/x/a/b', 'sessions/..events', 'sessions/index/x.json']) expect(roleOfKey(bad), bad).toBeNull();
    expect(listedName('sessions', 'x', 'events')).toBe('x.events');
    expect(listedName('sessions', 'x', 'meta')).toBe('index');
    expect(listedName('sessions/index', 'x', 'p/frames.idx')).toBe('x');
    expect(listedName('sessions/index/x', 'x', 'p/frames.idx')).toBe('frames.idx');
    expect(manifestNumber(manifestName(42))).toBe(42);
    expect(manifestName(3) < manifestName(10)).toBe(true);
    expect(manifestNumber('manifest/12')).toBeNull();
  });
});

const manifest = (over: Partial<Manifest> = {}): Manifest => ({
  v: 1,
  session: 's',
  n: 3,
  epoch: 2,
  writer: { id: 'w', host: 'h', pid: 1, tail: '/t' },
  leaseMs: 1000,
  time: 5,
  serial: 4,
  members: { events: { size: 7, mtimeMs: 1, born: 'b', w: '1', extents: [{ o: 'seg/2-0.seg', at: 16, len: 4 }, { d: Buffer.from('xyz').toString('base64'), len: 3 }] } },
  checks: { 'seg/2-0.seg': { chunk: 1024, at: 20, crc: 7, starts: [0, 16] } },
  ...over,
});

describe('s3 manifest', () => {
  it('round-trips, and refuses anything off (number, session, sizes, names)', () => {
    const m = manifest();
    expect(decodeManifest(encodeManifest(m), 3, 's')).toEqual(m);
    expect(() => decodeManifest(encodeManifest(m), 4, 's')).toThrow(/number/);
    expect(() => decodeManifest(encodeManifest(m), 3, 't')).toThrow(/session/);
    expect(() => decodeManifest(Buffer.from('{'), 3, 's')).toThrow(/CRC line/);
    expect(() => decodeManifest(Buffer.from(`{\n${crc32(Buffer.from('{'))}`), 3, 's')).toThrow(/JSON/);
    // Any byte changed (an inline piece's included) fails the manifest's CRC.
    const good = encodeManifest(m);
    for (let i = 0; i < good.length; i++) {
      const bad = Buffer.from(good);
      bad[i] ^= 0x04;
      expect(() => decodeManifest(bad, 3, 's'), `byte ${i}`).toThrow(/invalid manifest/);
    }
    const badSize = manifest({ members: { events: { size: 8, mtimeMs: 1, born: 'b', w: '1', extents: [{ o: 'seg/2-0.seg', at: 0, len: 4 }] } } });
    expect(() => decodeManifest(encodeManifest(badSize), 3, 's')).toThrow(/add up/);
    // Every object named has its check, and no check names an object no extent does.
    expect(() => decodeManifest(encodeManifest(manifest({ checks: {} })), 3, 's')).toThrow(/no check for seg\/2-0.seg/);
    expect(() => decodeManifest(encodeManifest(manifest({ checks: { ...manifest().checks, 'tail/2-1.tail': { chunk: 1, at: 1, crc: 1, starts: [0] } } })), 3, 's')).toThrow(/which no extent names/);
    expect(() => decodeManifest(encodeManifest(manifest({ checks: { 'seg/2-0.seg': { chunk: 1024, at: 19, crc: 7, starts: [0, 16] } } })), 3, 's')).toThrow(/past its object's checked bytes/);
    const badObj = manifest({ members: { events: { size: 4, mtimeMs: 1, born: 'b', w: '1', extents: [{ o: '../x', at: 0, len: 4 }] } } });
    expect(() => decodeManifest(encodeManifest(badObj), 3, 's')).toThrow(/remote extent/);
    const badMember = { ...manifest(), members: { 'p/../x': manifest().members.events } };
    expect(() => decodeManifest(encodeManifest(badMember as Manifest), 3, 's')).toThrow(/member name/);
    const badInline = manifest({ members: { meta: { size: 2, mtimeMs: 1, born: 'b', w: '1', extents: [{ d: 'AAAA', len: 2 }] } } });
    expect(() => decodeManifest(encodeManifest(badInline), 3, 's')).toThrow(/inline/);
  });

  it('extents cut and resolve into the pieces a ranged read needs (random members)', () => {
    const extentArb = fc.oneof(
      fc.record({ o: fc.constantFrom('seg/1-0.seg', 'seg/1-1.seg', 'tail/1-2.tail'), at: fc.integer({ min: 0, max: 100 }), len: fc.integer({ min: 1, max: 20 }) }),
      fc.uint8Array({ minLength: 1, maxLength: 20 }).map((b) => ({ d: Buffer.from(b).toString('base64'), len: b.length })),
    );
    fc.assert(
      fc.property(fc.array(extentArb, { maxLength: 8 }), fc.nat(), fc.nat(), fc.nat(), (extents: Extent[], a, b, c) => {
        const size = extents.reduce((x, e) => x + e.len, 0);
        // The bytes a member stands for: remote bytes named by (object, offset).
        const byteAt = (e: Extent, i: number) => ('d' in e ? Buffer.from(e.d, 'base64')[i] as number : (e.o.length * 31 + e.at + i) & 0xff);
        const flat: number[] = extents.flatMap((e) => Array.from({ length: e.len }, (_, i) => byteAt(e, i)));
        const cut = size === 0 ? 0 : a % (size + 1);
        expect(extentsBefore(extents, cut).reduce((x, e) => x + e.len, 0)).toBe(cut);
        expect(extentsFrom(extents, cut).reduce((x, e) => x + e.len, 0)).toBe(size - cut);
        const start = size === 0 ? 0 : b % (size + 1);
        const end = start + (size - start === 0 ? 0 : c % (size - start + 1));
        const out: number[] = new Array(end - start).fill(-1);
        for (const p of piecesOf(extents, start, end)) {
          if ('data' in p) p.data.forEach((v, i) => (out[p.pos + i] = v));
          else for (let i = 0; i < p.len; i++) out[p.pos + i] = (p.o.length * 31 + p.at + i) & 0xff;
        }
        expect(out).toEqual(flat.slice(start, end));
        const joined = [...extentsBefore(extents, cut), ...extentsFrom(extents, cut)];
        const back: number[] = joined.flatMap((e) => Array.from({ length: e.len }, (_, i) => byteAt(e, i)));
        expect(back).toEqual(flat);
      }),
      { numRuns: 300 },
    );
  });

  it('joins adjacent pieces of one object into one read; sealedEnd stops at the first tail extent', () => {
    const ex: Extent[] = [
      { o: 'seg/1-0.seg', at: 10, len: 5 },
      { o: 'seg/1-0.seg', at: 15, len: 5 },
      { o: 'tail/1-1.tail', at: 0, len: 3 },
    ];
    expect(piecesOf(ex, 2, 9)).toEqual([{ o: 'seg/1-0.seg', at: 12, len: 7, pos: 0, lo: 10, hi: 20 }]);
    expect(piecesOf(ex, 2, 12)).toEqual([
      { o: 'seg/1-0.seg', at: 12, len: 8, pos: 0, lo: 10, hi: 20 },
      { o: 'tail/1-1.tail', at: 0, len: 2, pos: 8, lo: 0, hi: 3 },
    ]);
    expect(sealedEnd(ex)).toBe(10);
  });
});

describe('s3 segment objects', () => {
  it('hold index sections first, the log last, each checked by its CRC', () => {
    const { bytes, header } = encodeSegment('s', 3, 'segment', [
      { member: 'events', start: 100, data: Buffer.from('EVENTS') },
      { member: 'entries', start: 50, data: Buffer.from('LINES\n') },
      { member: 'p/frames.idx', start: 64, data: Buffer.alloc(32, 7) },
      { member: 'meta', start: 0, data: Buffer.alloc(0) },
    ]);
    expect(header.sections.map((s) => s.member)).toEqual(['entries', 'p/frames.idx', 'events']);
    expect(decodeSegment(bytes)).toEqual(header);
    for (const s of header.sections) expect(bytes.subarray(s.at, s.at + s.len).length).toBe(s.len);
    expect(bytes.toString('utf8', header.sections[2]?.at, (header.sections[2]?.at ?? 0) + 6)).toBe('EVENTS');
    const bad = Buffer.from(bytes);
    bad[(header.sections[2]?.at ?? 0) + 1] ^= 1;
    expect(() => decodeSegment(bad)).toThrow(/events fails its CRC/);
    const badTable = Buffer.from(bytes);
    badTable[badTable.length - 1] ^= 1;
    expect(() => decodeSegment(badTable)).toThrow(/check table/);
    expect(() => decodeSegment(Buffer.from('XXXX0000000000000000'))).toThrow(/magic/);
  });
});

const line = (offset: number, length: number) => `${JSON.stringify({ v: 1, seq: offset, count: 1, offset, length, kind: 'x', schema: 1 })}\n`;

describe('s3 seal cut', () => {
  it('cuts at the last frame boundary within the size bound, at least one frame, never past the log', () => {
    const lines = Buffer.from(line(100, 10) + line(110, 20) + line(130, 30) + line(160, 5));
    const base = 1000;
    expect(sealCut(lines, base, 100, 165, 1000)).toEqual({ events: 165, entries: base + lines.length, frames: 4 });
    expect(sealCut(lines, base, 100, 165, 30)).toEqual({ events: 130, entries: base + Buffer.byteLength(line(100, 10) + line(110, 20)), frames: 2 });
    // One frame larger than the bound still goes (alone).
    expect(sealCut(lines, base, 100, 165, 5).frames).toBe(1);
    // The log ends inside the third frame: two frames.
    expect(sealCut(lines, base, 100, 150, 1000).frames).toBe(2);
    // Lines that do not continue the sealed log, or a partial line: nothing past them.
    expect(sealCut(lines, base, 90, 165, 1000).frames).toBe(0);
    expect(sealCut(Buffer.from(line(100, 10) + '{"v":1,"seq"'), base, 100, 165, 1000).frames).toBe(1);
    expect(sealCut(Buffer.from(line(100, 10) + line(111, 5)), base, 100, 165, 1000).frames).toBe(1);
  });
});

describe('s3 round trips and block cache', () => {
  it('counts calls in flight together once', () => {
    const c = (start: number, end: number): CallRecord => ({ op: 'get', name: 'x', start, end, bytes: 0 });
    expect(roundTrips([])).toBe(0);
    expect(roundTrips([c(0, 10), c(1, 9), c(2, 11)])).toBe(1);
    expect(roundTrips([c(0, 10), c(10, 20), c(11, 15), c(21, 30)])).toBe(3);
  });

  it('fetches a read\'s missing blocks of one object in one GET, never a block twice at once, and stays within its bound', async () => {
    const object = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i & 0xff));
    const fetches: [number, number][] = [];
    const cache = new BlockCache(
      async (_n, s, e) => {
        fetches.push([s, e]);
        await new Promise((r) => setTimeout(r, 5));
        return object.subarray(s, Math.min(e, object.length));
      },
      1000,
      3000,
    );
    const [a, b] = await Promise.all([cache.read('o', 1500, 4000), cache.read('o', 2000, 100)]);
    expect(a).toEqual(object.subarray(1500, 5500));
    expect(b).toEqual(object.subarray(2000, 2100));
    expect(fetches).toEqual([[1000, 6000]]);
    // Blocks keep to the extent asked for: none of another section's bytes are fetched.
    const within = new BlockCache(async (_n, s, e) => (fetches.push([s, e]), object.subarray(s, e)), 1000, 10_000);
    fetches.length = 0;
    expect(await within.read('o', 2600, 300, 2500, 2950)).toEqual(object.subarray(2600, 2900));
    expect(fetches).toEqual([[2500, 2950]]);
    expect(cache.size).toBeLessThanOrEqual(3000);
    // The object's end: a short last block.
    expect(await cache.read('o', 9500, 1000)).toEqual(object.subarray(9500, 10_000));
    for (let i = 0; i < 10; i++) await cache.read('o', i * 1000, 1000);
    expect(cache.size).toBeLessThanOrEqual(3000);
    // Hits: the last three blocks are there.
    const before = fetches.length;
    await cache.read('o', 7000, 3000);
    expect(fetches.length).toBe(before);
  });
});

describe('s3 reads verified by the check table', () => {
  it('serve an object\'s bytes only where they match what was written; a damaged chunk reads as NULs, a damaged table fails the whole object', async () => {
    const data = Buffer.from(Array.from({ length: 5000 }, (_, i) => 32 + ((i * 7) % 90)));
    const lines = Buffer.from('x'.repeat(300));
    const { bytes, header, check } = encodeSegment('s', 1, 'segment', [{ member: 'events', start: 0, data }, { member: 'entries', start: 0, data: lines }], 256);
    expect(decodeSegment(bytes)).toEqual(header);
    const en = header.sections[0] as { at: number; len: number };
    const ev = header.sections[1] as { at: number; len: number };
    // Chunks start afresh at every section: the header, then each section from its own first byte.
    expect(check.starts).toEqual([0, en.at, ev.at]);
    const objects = new MemoryObjectStore();
    await objects.put('o', bytes);
    const damage: string[] = [];
    const rec = new RecordingStore(objects);
    const reads = new CheckedReads(rec, undefined, (name, why) => damage.push(`${name}: ${why}`));
    // Any range reads back exactly, widened to whole chunks, the table fetched beside the data (one round trip).
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 4999 }), fc.integer({ min: 1, max: 5000 }), async (from, len) => {
        const to = Math.min(5000, from + len);
        expect(await reads.get('o', ev.at + from, ev.at + to, check)).toEqual(data.subarray(from, to));
      }),
      { numRuns: 100 },
    );
    rec.calls.length = 0;
    const fresh = new CheckedReads(rec);
    await fresh.get('o', ev.at + 10, ev.at + 20, check);
    expect(roundTrips(rec.calls)).toBe(1);
    expect(rec.calls.map((c) => [c.from, c.bytes])).toEqual(expect.arrayContaining([[check.at, bytes.length - check.at]]));
    expect(damage).toEqual([]);
    // A byte flipped at rest: the chunk holding it reads as NULs (twice fetched), its neighbours as written.
    for (const off of [1000, 0]) {
      const flipped = Buffer.from(bytes);
      flipped[ev.at + off] ^= 0x20;
      await objects.put('o', flipped);
      damage.length = 0;
      const after = new CheckedReads(objects, undefined, (name, why) => damage.push(`${name}: ${why}`));
      const got = await after.get('o', ev.at, ev.at + 5000, check);
      const from = Math.floor(off / 256) * 256;
      for (let i = 0; i < 5000; i++) {
        const inBad = i >= from && i < from + 256;
        if (got[i] !== (inBad ? 0 : data[i])) throw new Error(`byte ${i}: ${got[i]} (${inBad ? 'damaged chunk' : 'good chunk'})`);
      }
      expect(after.damaged).toBe(1);
      expect(damage).toEqual([`o: bytes [${ev.at + from}, ${ev.at + from + 256}) fail their CRC`]);
      expect(await after.get('o', ev.at + 3000, ev.at + 3100, check)).toEqual(data.subarray(3000, 3100));
      // The section before it shares no chunk with it: read whole, as written.
      expect(await after.get('o', en.at, en.at + en.len, check)).toEqual(lines);
      expect(after.damaged).toBe(1);
    }
    const after = new CheckedReads(objects);
    // The table itself damaged: nothing of the object is served.
    const badTable = Buffer.from(bytes);
    badTable[check.at + 2] ^= 1;
    await objects.put('o', badTable);
    const t = new CheckedReads(objects, undefined, (name, why) => damage.push(`${name}: ${why}`));
    expect(await t.get('o', ev.at + 3000, ev.at + 3100, check)).toEqual(Buffer.alloc(100));
    expect(damage[damage.length - 1]).toMatch(/check table fails its CRC/);
    // A truncated object: its missing chunks are damage, not short reads.
    await objects.put('o', bytes.subarray(0, ev.at + 2000));
    expect((await new CheckedReads(objects).get('o', ev.at + 1900, ev.at + 2100, check)).subarray(100)).toEqual(Buffer.alloc(100));
    // No check known: refused, never read unverified.
    await expect(after.get('o', 0, 10, undefined)).rejects.toThrow(/no check known/);
  });
});

describe('s3 manifest writer', () => {
  it('names the writer\'s process start time when known, checked; older manifests without it read as before', () => {
    const w = { id: 'x', host: 'h', pid: 12, tail: '/t' };
    const m = manifest({ writer: { ...w, start: '4711' } });
    expect(decodeManifest(encodeManifest(m), 3, 's').writer).toEqual({ ...w, start: '4711' });
    expect(decodeManifest(encodeManifest(manifest({ writer: w })), 3, 's').writer).toEqual(w);
    for (const start of ['', '-1', '1.5', 'abc']) expect(() => decodeManifest(encodeManifest(manifest({ writer: { ...w, start } })), 3, 's'), start).toThrow(/writer start time/);
  });
});

describe('s3 sparse index of the frame index', () => {
  /** A frame index of random frames: counted messages (count 1, a group start at or before their seq) and rows. */
  const sessionArb = fc.array(fc.record({ msg: fc.boolean(), count: fc.integer({ min: 1, max: 9 }), back: fc.integer({ min: 0, max: 400 }) }), { minLength: 1, maxLength: 3000 }).map((frames) => {
    const es: EntryLine[] = [{ v: 1, seq: 0, count: 0, offset: 0, length: 50, kind: 'session', schema: 1 }];
    let seq = 0;
    let offset = 50;
    for (const f of frames) {
      const e: EntryLine = { v: 1, seq, count: f.msg ? 1 : f.count, offset, length: 40, kind: 'frame', schema: 1 };
      if (f.msg) e.group = Math.max(0, seq - f.back);
      es.push(e);
      seq += e.count;
      offset += 40;
    }
    return es;
  });

  function sparseOf(records: Buffer, every: number): SparseIndex {
    const sp: SparseIndex = { of: SPARSE_OF, born: 'b', every, seq: [], msgs: [], group: [] };
    const stride = every * INDEX_RECORD_BYTES;
    for (let k = 0; (k + 1) * stride <= records.length; k++) {
      const [a, b, c] = summarizeRecords(records.subarray(k * stride, (k + 1) * stride));
      sp.seq.push(a);
      sp.msgs.push(b);
      sp.group.push(c);
    }
    return sp;
  }

  it('names a range holding the record of the page\'s last seq, and every record the planner reads for the page (and the checksum seed before)', async () => {
    await fc.assert(
      fc.asyncProperty(sessionArb, fc.integer({ min: 1, max: 64 }), fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 1, max: 60 }), fc.boolean(), async (es, every, at, maxMessages, tail) => {
        const records = indexRecords(es);
        const sp = sparseOf(records, every);
        const nextSeq = (es[es.length - 1] as EntryLine).seq + (es[es.length - 1] as EntryLine).count;
        if (nextSeq === 0) return;
        const end = tail ? undefined : 1 + Math.floor(at * (nextSeq - 1));
        const got = pageRecords(sp, es.length, end, maxMessages);
        if (es.length < 2) {
          expect(got).toBeNull();
          return;
        }
        expect(got).not.toBeNull();
        const { find, from, to } = got as NonNullable<typeof got>;
        // The record of the last seq: the last whose seq is at most end - 1.
        let last = es.length - 1;
        if (end !== undefined) {
          last = es.findLastIndex((e, i) => i > 0 && e.seq <= end - 1);
          expect(find).not.toBeNull();
          expect(find!.lo).toBeLessThanOrEqual(last);
          expect(find!.hi).toBeGreaterThanOrEqual(last);
          expect(to).toBeGreaterThanOrEqual(Math.min(es.length - 1, find!.hi + 1));
        } else expect(find).toBeNull();
        const read: number[] = [];
        const src = indexBackward((first, n) => {
          read.push(first, first + n - 1);
          return records.subarray(first * INDEX_RECORD_BYTES, (first + n) * INDEX_RECORD_BYTES);
        }, last);
        const plan = await planPage(resolvePageParams({ maxMessages, ...(end === undefined ? {} : { throughSeq: end - 1 }) }, nextSeq - 1), src);
        const firstRecord = plan.span === null ? last : es.indexOf(plan.span.first);
        expect(from).toBeLessThanOrEqual(Math.min(...read, Math.max(0, firstRecord - 1)));
        expect(to).toBeGreaterThanOrEqual(Math.max(...read));
      }),
      { numRuns: 300 },
    );
  });

  it('travels in the manifest, checked field by field', () => {
    const sp: SparseIndex = { of: SPARSE_OF, born: 'b', every: 4, seq: [0, 9], msgs: [1, 0], group: [0, -1] };
    const m = { ...manifest(), sparse: sp };
    expect(decodeManifest(encodeManifest(m), 3, 's')).toEqual(m);
    expect(decodeManifest(encodeManifest(manifest()), 3, 's').sparse).toBeUndefined();
    for (const bad of [{ ...sp, of: 'p/frames.meta' }, { ...sp, every: 0 }, { ...sp, msgs: [1] }, { ...sp, group: [0, -2] }, { ...sp, seq: [0, 1.5] }, { ...sp, born: 1 }, null]) {
      expect(() => checkSparse(bad), JSON.stringify(bad)).toThrow(/sparse index/);
      expect(() => decodeManifest(encodeManifest({ ...manifest(), sparse: bad as SparseIndex }), 3, 's')).toThrow(/sparse index/);
    }
  });
});
