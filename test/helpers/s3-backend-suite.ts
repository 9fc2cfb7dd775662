/**
 * What the S3 backend promises beyond the seam's contract (docs/s3-layout.md),
 * over an object store: in memory (test/s3-backend.test.ts) and a real S3
 * endpoint (test/s3/s3-backend.test.ts):
 * - segments sealed by size at frame boundaries, each holding its frames'
 *   entry lines and index records; by age; and on a clean shutdown;
 * - readers in another process (another backend instance) see every
 *   acknowledged append, pages equal to the reference;
 * - one writer: a second one is refused with session_busy; a stale one
 *   (its lease lapsed, taken over) is fenced and never interleaves; a
 *   crashed one is taken over at once on its own host, with every
 *   acknowledged append kept;
 * - a cold page costs at most 4 sequential round trips, and reads the log
 *   bytes the page covers, not the session's;
 * - a byte flipped at rest in a sealed segment or a tail object is never
 *   served: pages covering it fail with corrupt_range naming its frames'
 *   seqs, the others are served, the session shows degraded;
 * - what a fenced or crashed writer uploaded and never published is
 *   deleted by the next writer's take-over, nothing a manifest names is;
 *   a crashed writer's durable-but-unacknowledged tail is published when
 *   its successor opens the store, before any append.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { PageParams, SessionEvent } from '../../src/core/types.js';
import { decodeWholeLog, referencePage } from '../../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../../src/main/store.js';
import type { StorageBackend } from '../../src/storage/backend.js';
import { sessionKeys } from '../../src/storage/layout.js';
import { decodeManifest, encodeManifest, objectsNamed, sealedEnd, type Manifest } from '../../src/storage/s3/manifest.js';
import { MemoryObjectStore, RecordingStore, roundTrips, type ObjectStore } from '../../src/storage/s3/object-store.js';
import { manifestNumber } from '../../src/storage/s3/remote-names.js';
import { chunkAt, decodeSegment } from '../../src/storage/s3/segment-file.js';
import type { S3BackendOptions } from '../../src/storage/s3/s3-backend.js';
import { makeS3Backend } from './backends.js';

const chat = (from: number, n: number): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => {
    const seq = from + i;
    return seq % 5 === 0
      ? { type: 'user/message', seq, time: 1000 + seq, data: { text: `question ${seq} ${'x'.repeat(seq % 50)}` } }
      : { type: 'assistant/chunk', seq, time: 1000 + seq, data: { turn: Math.floor(seq / 5), step: 0, chunk: { type: 'text-delta', index: 0, text: ` word${seq}` } } };
  });

async function expectPage(reader: PagerStore, writerStorage: StorageBackend, id: string, params: PageParams): Promise<void> {
  const bytes = await writerStorage.readAll(sessionKeys(id).events);
  expect(await reader.page(id, params), JSON.stringify(params)).toEqual(referencePage(decodeWholeLog(bytes as Buffer), id, params));
}

/** The log as stored holds exactly `events`, and `reader` serves its page as the reference reader does. */
async function expectLog(reader: PagerStore, writerStorage: StorageBackend, id: string, events: SessionEvent[], params: PageParams): Promise<void> {
  const log = decodeWholeLog((await writerStorage.readAll(sessionKeys(id).events)) as Buffer);
  expect(log.events).toEqual(events);
  expect(await reader.page(id, params), JSON.stringify(params)).toEqual(referencePage(log, id, params));
}

/** The latest manifest of a session as stored. */
async function latestManifest(objects: ObjectStore, prefix: string, id: string): Promise<Manifest> {
  const folder = `${prefix}/sessions/${id}/`;
  const names = (await objects.list(`${folder}manifest/`)).names;
  const n = Math.max(...names.map((x) => manifestNumber(x.slice(folder.length)) ?? -1));
  return decodeManifest(await objects.getAll(`${folder}manifest/${String(n).padStart(16, '0')}`), n, id);
}

/** An object store whose PUTs fail while `down` (a writer cut off from the store). */
class Partitionable implements ObjectStore {
  down = false;
  constructor(private readonly inner: ObjectStore) {}
  private check(): void {
    if (this.down) throw new Error('network unreachable (test partition)');
  }
  get(n: string, s: number, e: number) {
    return this.inner.get(n, s, e);
  }
  getAll(n: string) {
    return this.inner.getAll(n);
  }
  async put(n: string, d: Uint8Array, o?: { ifAbsent?: boolean }) {
    this.check();
    return this.inner.put(n, d, o);
  }
  list(p: string, o?: { startAfter?: string; delimiter?: string }) {
    return this.inner.list(p, o);
  }
  remove(n: string[]) {
    return this.inner.remove(n);
  }
}

/** An object store whose manifest PUTs fail while `down` is 'manifests' (segments and tail objects still land: a writer cut off mid-publish), every PUT while 'all'. */
class ManifestsFail implements ObjectStore {
  down: false | 'manifests' | 'all' = false;
  private readonly inflight = new Set<Promise<unknown>>();
  constructor(private readonly inner: ObjectStore) {}
  /** Once every PUT begun so far has landed or failed (one in flight when `down` changed may still land). */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }
  get(n: string, s: number, e: number) {
    return this.inner.get(n, s, e);
  }
  getAll(n: string) {
    return this.inner.getAll(n);
  }
  async put(n: string, d: Uint8Array, o?: { ifAbsent?: boolean }) {
    if (this.down === 'all' || (this.down === 'manifests' && n.includes('/manifest/'))) throw new Error('network unreachable (test partition)');
    const p = this.inner.put(n, d, o);
    this.inflight.add(p);
    try {
      return await p;
    } finally {
      this.inflight.delete(p);
    }
  }
  list(p: string, o?: { startAfter?: string; delimiter?: string }) {
    return this.inner.list(p, o);
  }
  remove(n: string[]) {
    return this.inner.remove(n);
  }
}

/** Segments and tail objects under a session's folder that no stored manifest names (listed again when a manifest goes meanwhile). */
async function unnamed(objects: ObjectStore, prefix: string, id: string): Promise<string[]> {
  const folder = `${prefix}/sessions/${id}/`;
  for (;;) {
    const names = (await objects.list(folder)).names.map((x) => x.slice(folder.length));
    const named = new Set<string>();
    let gone = false;
    for (const x of names) {
      const n = manifestNumber(x);
      if (n === null) continue;
      const bytes = await objects.getAll(`${folder}${x}`).catch(() => null);
      if (bytes === null) gone = true;
      else for (const o of objectsNamed(decodeManifest(bytes, n, id))) named.add(o);
    }
    if (!gone) return names.filter((x) => /^(seg|tail)\//.test(x) && !named.has(x)).sort();
  }
}

/** The suite over object stores from `make` (`inMemory`: calls get a 3 ms delay where round trips are counted). */
export function s3BackendSuite(os: { name: string; make(): Promise<ObjectStore> }): void {
  describe(`s3 backend over ${os.name}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
    });

    async function backend(objects: ObjectStore, opts: Partial<S3BackendOptions> = {}) {
      const b = makeS3Backend(objects, opts);
      cleanups.push(b.dispose);
      return b;
    }

    async function storeOn(storage: StorageBackend, writerIdleMs?: number): Promise<PagerStore> {
      const s = await openStore({ storage, workers: 1, pageCacheBytes: 0, warmUp: { jit: false, pagePath: false }, ...(writerIdleMs === undefined ? {} : { writerIdleMs }) });
      cleanups.push(() => s.close());
      return s;
    }

    it('seals segments by size at frame boundaries with their entry lines and index records; another process reads every append', async () => {
      const objects = await os.make();
      const w = await backend(objects);
      const r = await backend(objects, { location: { bucket: 'b', prefix: w.prefix }, freshMs: 0 });
      const writer = await storeOn(w.storage);
      const reader = await storeOn(r.storage);
      await writer.create('seg', { title: 'segments' });
      let n = 0;
      for (let batch = 0; batch < 30; batch++) {
        const size = 3 + (batch % 7) * 4;
        await writer.append('seg', chat(n, size));
        n += size;
        await expectPage(reader, w.storage, 'seg', { maxMessages: 2 });
        if (batch % 5 === 4) await expectPage(reader, w.storage, 'seg', { throughSeq: Math.floor(n / 2), maxMessages: 3 });
      }
      await writer.close();
      await w.storage.close();
      const m = await latestManifest(objects, w.prefix, 'seg');
      expect(m.writer).toBeNull();
      const segs = (await objects.list(`${w.prefix}/sessions/seg/seg/`)).names.filter((x) => m.members.events?.extents.some((e) => 'o' in e && x.endsWith(e.o)));
      expect(segs.length).toBeGreaterThanOrEqual(3);
      let eventsEnd = 0;
      const headers = await Promise.all(segs.map(async (x) => decodeSegment(await objects.getAll(x))));
      headers.sort((a, b) => (a.sections.find((s) => s.member === 'events')?.start ?? 0) - (b.sections.find((s) => s.member === 'events')?.start ?? 0));
      for (const [i, h] of headers.entries()) {
        const ev = h.sections.find((s) => s.member === 'events');
        const en = h.sections.find((s) => s.member === 'entries');
        expect(ev && en, `segment ${i} has a log and an entries section`).toBeTruthy();
        if (!ev || !en) continue;
        expect(ev.start).toBe(eventsEnd);
        eventsEnd = ev.start + ev.len;
        // Index sections come first in the object, the log last.
        expect(en.at).toBeLessThan(ev.at);
      }
      // Each segment's entry lines describe exactly its frames (read through the manifest's extents).
      const all = (await r.storage.readAll(sessionKeys('seg').entries))?.toString('utf8').trim().split('\n').map((l) => JSON.parse(l) as { offset: number; length: number }) ?? [];
      const ends = new Set(all.map((e) => e.offset + e.length));
      for (const h of headers) {
        const ev = h.sections.find((s) => s.member === 'events');
        if (ev) expect(ends.has(ev.start + ev.len), 'cut at a frame boundary').toBe(true);
        if (ev && ev.len > 16384) expect(all.some((e) => e.offset === ev.start && e.length === ev.len), 'only a single frame may pass the bound').toBe(true);
      }
      // Shut down cleanly: the log is sealed whole.
      expect(sealedEnd(m.members.events?.extents ?? [])).toBe(m.members.events?.size);
      const fresh = await storeOn((await backend(objects, { location: { bucket: 'b', prefix: w.prefix } })).storage);
      await expectLog(fresh, r.storage, 'seg', chat(0, n), { maxMessages: 1000 });
    }, 300_000);

    it('seals by age without further appends', async () => {
      const objects = await os.make();
      const w = await backend(objects, { segmentBytes: 1 << 20, sealAgeMs: 150 });
      const writer = await storeOn(w.storage);
      await writer.create('aged', {});
      await writer.append('aged', chat(0, 20));
      const deadline = Date.now() + 5_000;
      let m = await latestManifest(objects, w.prefix, 'aged');
      while (sealedEnd(m.members.events?.extents ?? []) !== m.members.events?.size && Date.now() < deadline) {
        await new Promise((res) => setTimeout(res, 50));
        m = await latestManifest(objects, w.prefix, 'aged');
      }
      expect(sealedEnd(m.members.events?.extents ?? [])).toBe(m.members.events?.size);
      expect(m.writer).not.toBeNull();
    }, 300_000);

    it('one writer: a second is refused with session_busy; a stale one is taken over and fenced, and never interleaves', async () => {
      const base = await os.make();
      const cut = new Partitionable(base);
      const a = await backend(cut, { leaseMs: 300 });
      const b = await backend(base, { location: { bucket: 'b', prefix: a.prefix }, leaseMs: 300, freshMs: 0 });
      const sa = await storeOn(a.storage);
      const sb = await storeOn(b.storage);
      await sa.create('one', {});
      await sa.append('one', chat(0, 5));
      await expect(sb.append('one', chat(5, 1))).rejects.toMatchObject({ code: 'session_busy', message: expect.stringMatching(/being written by process \d+ on /) });
      // A is cut off: its lease lapses (no renewals), B takes the session over.
      cut.down = true;
      await expect(sa.append('one', chat(5, 2))).rejects.toThrow(/unreachable/);
      await new Promise((res) => setTimeout(res, 700));
      await sb.append('one', chat(5, 3));
      cut.down = false;
      // A's next append (its writer counts the failed one as written: its bytes are durable locally) finds a newer epoch: fenced, nothing of it published.
      await expect(sa.append('one', chat(7, 1))).rejects.toMatchObject({ code: 'session_busy', message: expect.stringMatching(/fenced/) });
      await sb.append('one', chat(8, 2));
      const reader = await storeOn((await backend(base, { location: { bucket: 'b', prefix: a.prefix }, freshMs: 0 })).storage);
      await expectLog(reader, b.storage, 'one', chat(0, 10), { maxMessages: 100 });
      const m = await latestManifest(base, a.prefix, 'one');
      expect(m.epoch).toBeGreaterThanOrEqual(2);
    }, 300_000);

    it('a crashed writer is taken over at once on its own host (its tail folder), every acknowledged append kept', async () => {
      const objects = await os.make();
      let crashed = false;
      const a = await backend(objects, { pidAlive: () => !crashed });
      const sa = await storeOn(a.storage);
      await sa.create('crash', {});
      for (let i = 0; i < 6; i++) await sa.append('crash', chat(i * 7, 7));
      // Another host (another tail folder) must wait for the lease to lapse.
      const other = await storeOn((await backend(objects, { location: { bucket: 'b', prefix: a.prefix } })).storage);
      await expect(other.append('crash', chat(42, 1))).rejects.toMatchObject({ code: 'session_busy' });
      // The writer's process dies (nothing closed); a new one starts on the same tail folder.
      crashed = true;
      const again = await backend(objects, { location: { bucket: 'b', prefix: a.prefix }, tailDir: a.tailDir, pidAlive: () => false });
      const sa2 = await storeOn(again.storage);
      await sa2.append('crash', chat(42, 3));
      const reader = await storeOn((await backend(objects, { location: { bucket: 'b', prefix: a.prefix }, freshMs: 0 })).storage);
      await expectLog(reader, again.storage, 'crash', chat(0, 45), { maxMessages: 1000 });
    }, 300_000);

    it('a crashed writer whose pid another process took is taken over at once on its own host (its start time in the manifest), a running one is not', async () => {
      const objects = await os.make();
      const a = await backend(objects);
      const sa = await storeOn(a.storage);
      await sa.create('reused', {});
      await sa.append('reused', chat(0, 7));
      const m = await latestManifest(objects, a.prefix, 'reused');
      expect(m.writer?.pid).toBe(process.pid);
      expect(m.writer?.start).toMatch(/^\d+$/);
      // The same host and tail folder, the pid alive and started when the writer did: it still runs.
      const same = await storeOn((await backend(objects, { location: { bucket: 'b', prefix: a.prefix }, tailDir: a.tailDir, pidAlive: () => true })).storage);
      await expect(same.append('reused', chat(7, 1))).rejects.toMatchObject({ code: 'session_busy' });
      // The writer's process died and its pid went to a process started later: taken over at once, not after the lease.
      const later = String(Number(m.writer?.start) + 1);
      const b = await backend(objects, { location: { bucket: 'b', prefix: a.prefix }, tailDir: a.tailDir, pidAlive: () => true, pidStart: () => later });
      const sb = await storeOn(b.storage);
      await sb.append('reused', chat(7, 3));
      const log = decodeWholeLog((await b.storage.readAll(sessionKeys('reused').events)) as Buffer);
      expect(log.events).toEqual(chat(0, 10));
      expect((await latestManifest(objects, a.prefix, 'reused')).epoch).toBe(m.epoch + 1);
    }, 300_000);

    it('a cold page takes at most 4 sequential round trips and reads the log bytes it covers, not the session', async () => {
      // In memory, each call takes 3 ms, as a round trip does: calls in flight together then overlap.
      const objects = os.name === 'in-memory object store' ? new MemoryObjectStore(3) : await os.make();
      // Check chunks of the reader's block size: a block read is then exactly its chunks (both laid from the section's start).
      const w = await backend(objects, { segmentBytes: 8192, maxSegmentBytes: 32768, checkBytes: 4096 });
      const writer = await storeOn(w.storage);
      await writer.create('cold', {});
      let n = 0;
      for (let i = 0; i < 40; i++) {
        await writer.append('cold', chat(n, 60));
        n += 60;
      }
      // The last batch stays unsealed: the tail page reads a tail object too.
      const logBytes = (await w.storage.stat(sessionKeys('cold').events))?.size ?? 0;
      const log = decodeWholeLog((await w.storage.readAll(sessionKeys('cold').events)) as Buffer);
      const B = 4096;
      for (const params of [{ maxMessages: 3 }, { throughSeq: Math.floor(n / 3), maxMessages: 3 }] as PageParams[]) {
        const expected = referencePage(log, 'cold', params);
        // Defaults: small indexes are read whole on first touch, so the planner's search costs one round trip.
        // Fresh for the whole page (a loaded machine may stretch it past the default 50 ms: a second look at the manifest is a policy, not the page's cost).
        const rec = new RecordingStore(objects);
        const reader = await storeOn((await backend(rec, { location: { bucket: 'b', prefix: w.prefix }, blockBytes: B, freshMs: 60_000 })).storage);
        expect(await reader.page('cold', params)).toEqual(expected);
        expect(roundTrips(rec.calls), JSON.stringify(rec.calls.map((c) => [c.op, c.name.split('/').slice(-2).join('/'), Math.round(c.start), Math.round(c.end)]))).toBeLessThanOrEqual(4);
        // With index reads by block only, the log bytes fetched are the page's frames and at most a block each side per object read.
        const rec2 = new RecordingStore(objects);
        const reader2 = await storeOn((await backend(rec2, { location: { bucket: 'b', prefix: w.prefix }, blockBytes: B, wholeIndexBytes: 0, freshMs: 60_000 })).storage);
        expect(await reader2.page('cold', params)).toEqual(expected);
        let logRead = 0;
        const objectsRead = new Set<string>();
        for (const c of rec2.calls.filter((x) => x.op === 'get' && x.from !== undefined && !x.name.includes('/manifest/'))) {
          const h = decodeSegment(await objects.getAll(c.name));
          const ev = h.sections.find((s) => s.member === 'events');
          const got = ev === undefined ? 0 : Math.max(0, Math.min((c.from as number) + c.bytes, ev.at + ev.len) - Math.max(c.from as number, ev.at));
          if (got > 0) objectsRead.add(c.name);
          logRead += got;
        }
        const entries = (await w.storage.readAll(sessionKeys('cold').entries))?.toString('utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; count: number; offset: number; length: number }) ?? [];
        const covered = entries.filter((e) => e.count > 0 && e.seq + e.count > expected.fromSeq && e.seq < expected.toSeq).reduce((a, e) => a + e.length, 0);
        expect(covered).toBeGreaterThan(0);
        // (The tail page's frames are the last append's, small enough to travel inline in the manifest.)
        if (params.throughSeq !== undefined) expect(logRead).toBeGreaterThanOrEqual(covered);
        expect(logRead).toBeLessThanOrEqual(covered + 2 * B * objectsRead.size);
        expect(logRead).toBeLessThan(logBytes / 4);
      }
    }, 300_000);

    it('a cold page of a session whose indexes exceed the whole-fetch bound takes at most 4 sequential round trips (the manifest\'s sparse index); a lying sparse index changes no page', async () => {
      const objects = os.name === 'in-memory object store' ? new MemoryObjectStore(3) : await os.make();
      const w = await backend(objects, { segmentBytes: 65536, maxSegmentBytes: 131072, checkBytes: 4096, sparseEvery: 64 });
      const writer = await storeOn(w.storage, 600_000);
      await writer.create('big', {});
      let n = 0;
      for (let i = 0; i < 200; i++) {
        await writer.append('big', chat(n, 60));
        n += 60;
      }
      const whole = 16 * 1024;
      for (const key of [sessionKeys('big').entries, 'sessions/index/big/frames.idx', 'sessions/index/big/frames.meta', 'sessions/index/big/frames.crc2']) expect((await w.storage.stat(key))?.size, key).toBeGreaterThan(4 * whole);
      const pages: PageParams[] = [{ maxMessages: 3 }, { maxMessages: 50 }, { throughSeq: Math.floor(n / 3), maxMessages: 3 }, { throughSeq: Math.floor(n / 2), maxMessages: 50 }, { beforeSeq: Math.floor(n / 5), maxMessages: 20 }, { throughSeq: 700, maxMessages: 1000 }];
      const cold = async (params: PageParams, log: ReturnType<typeof decodeWholeLog>, what: string) => {
        // Fresh for the whole page: a second look at the manifest on a loaded machine is a policy, not the page's cost.
        const rec = new RecordingStore(objects);
        const reader = await storeOn((await backend(rec, { location: { bucket: 'b', prefix: w.prefix }, blockBytes: 4096, wholeIndexBytes: whole, freshMs: 60_000 })).storage);
        expect(await reader.page('big', params), `${what} ${JSON.stringify(params)}`).toEqual(referencePage(log, 'big', params));
        return roundTrips(rec.calls);
      };
      // Writer open (the tail in tail objects and inline pieces), then closed (all sealed).
      for (const what of ['writer open', 'sealed']) {
        if (what === 'sealed') {
          await writer.close();
          await w.storage.close();
        }
        const log = decodeWholeLog((await w.storage.readAll(sessionKeys('big').events)) as Buffer);
        expect(log.events.length).toBe(n);
        const m = await latestManifest(objects, w.prefix, 'big');
        expect(m.sparse?.seq.length ?? 0, 'sparse entries').toBeGreaterThan(40);
        for (const params of pages) expect(await cold(params, log, what), `${what} ${JSON.stringify(params)}`).toBeLessThanOrEqual(4);
      }
      // A sparse index that lies (seqs shifted, no messages): pages are still the log's, only slower.
      const m = await latestManifest(objects, w.prefix, 'big');
      const sp = m.sparse as NonNullable<Manifest['sparse']>;
      const lying: Manifest = { ...m, n: m.n + 1, sparse: { ...sp, seq: sp.seq.map((x, i) => (i === 0 ? 0 : x + 997 * (i % 3))), msgs: sp.msgs.map(() => 0), group: sp.group.map(() => -1) } };
      await objects.put(`${w.prefix}/sessions/big/manifest/${String(lying.n).padStart(16, '0')}`, encodeManifest(lying), { ifAbsent: true });
      const log = decodeWholeLog((await w.storage.readAll(sessionKeys('big').events)) as Buffer);
      for (const params of pages) await cold(params, log, 'lying sparse index');
    }, 300_000);

    it('a byte flipped at rest in a sealed segment or a tail object is never served: pages covering it fail with corrupt_range, others are served, the session shows degraded', async () => {
      const objects = await os.make();
      // Small inline bound: appends go into tail objects; 16 KiB of log are sealed into a segment.
      // No seal by age: the tail object damaged below stays the one the manifest names (a loaded machine runs past 2 s).
      const w = await backend(objects, { segmentBytes: 16384, maxSegmentBytes: 16384, inlineBytes: 512, checkBytes: 1024, sealAgeMs: 600_000 });
      // The writer stays open (an idle writer gives the session back, sealing its tail objects away).
      const writer = await storeOn(w.storage, 600_000);
      await writer.create('dmg', {});
      let n = 0;
      for (let i = 0; i < 8; i++) {
        await writer.append('dmg', chat(n, 60));
        n += 60;
      }
      // Frames with no checksum record of their own (as imported ones, or once the derived projections are
      // deleted, as SPEC allows at any time): only the object's check stands between a flipped byte and a page.
      await w.storage.removeAll(`sessions/index/dmg`);
      const log = decodeWholeLog((await w.storage.readAll(sessionKeys('dmg').events)) as Buffer);
      const entries = ((await w.storage.readAll(sessionKeys('dmg').entries)) as Buffer).toString('utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; count: number; offset: number; length: number });
      const m = await latestManifest(objects, w.prefix, 'dmg');
      const extents = m.members.events?.extents ?? [];
      const folder = `${w.prefix}/sessions/dmg/`;
      const logBytes = (await w.storage.readAll(sessionKeys('dmg').events)) as Buffer;
      for (const kind of ['seg/', 'tail/']) {
        // A chunk row in the middle of an extent of that kind of object.
        let pos = 0;
        let target: { e: { o: string; at: number; len: number }; pos: number; f: (typeof entries)[number] } | null = null;
        for (const e of extents) {
          if ('o' in e && e.o.startsWith(kind) && target === null) {
            const inside = entries.filter((f) => f.count > 1 && f.offset >= pos && f.offset + f.length <= pos + e.len);
            const f = inside[Math.floor(inside.length / 2)];
            if (f !== undefined) target = { e, pos, f };
          }
          pos += e.len;
        }
        expect(target, `an events extent in a ${kind} object`).not.toBeNull();
        if (target === null) continue;
        const { e, f } = target;
        const name = `${folder}${e.o}`;
        const original = await objects.getAll(name);
        const flipped = Buffer.from(original);
        // A letter of a text delta ("word" -> "vord"): the frame stays valid JSON of the same shape.
        const inFrame = logBytes.subarray(f.offset, f.offset + f.length).indexOf('" word');
        expect(inFrame).toBeGreaterThan(0);
        const at = e.at + (f.offset - target.pos) + inFrame + 2;
        expect(String.fromCharCode(original[at] as number)).toBe('w');
        flipped[at] ^= 0x01;
        await objects.put(name, flipped);
        try {
          // The frames the damaged chunk touches are the ones a page may name.
          const c = chunkAt(m.checks[e.o] as NonNullable<(typeof m.checks)[string]>, at);
          const lo = target.pos + Math.max(c.start, e.at) - e.at;
          const hi = target.pos + Math.min(c.end, e.at + e.len) - e.at;
          const touched = entries.filter((x) => x.count > 0 && x.offset < hi && x.offset + x.length > lo);
          const reader = await storeOn((await backend(objects, { location: { bucket: 'b', prefix: w.prefix }, freshMs: 0, onDamage: () => undefined })).storage);
          const covering = { throughSeq: f.seq + f.count - 1, maxMessages: 1000 };
          const err = await reader.page('dmg', covering).then(
            () => null,
            (x: unknown) => x as { code?: string; details?: { fromSeq: number; toSeq: number } },
          );
          expect(err?.code, `a page over the damaged ${kind} object`).toBe('corrupt_range');
          expect(err?.details?.fromSeq).toBeGreaterThanOrEqual(Math.min(...touched.map((x) => x.seq)));
          expect(err?.details?.toSeq).toBeLessThanOrEqual(Math.max(...touched.map((x) => x.seq + x.count)));
          // A page elsewhere is served, equal to the reference.
          const elsewhere = kind === 'seg/' ? { maxMessages: 1 } : { throughSeq: 10, maxMessages: 1 };
          expect(await reader.page('dmg', elsewhere)).toEqual(referencePage(log, 'dmg', elsewhere));
          expect((await reader.info('dmg')).status).toBe('degraded');
        } finally {
          await objects.put(name, original);
        }
      }
      expect(extents.some((e) => 'o' in e && e.o.startsWith('tail/'))).toBe(true);
      // Restored: every page is served again by a fresh reader.
      const again = await storeOn((await backend(objects, { location: { bucket: 'b', prefix: w.prefix }, freshMs: 0 })).storage);
      expect(await again.page('dmg', { maxMessages: 1000 })).toEqual(referencePage(log, 'dmg', { maxMessages: 1000 }));
    }, 300_000);

    it('a writer never publishes damage as good bytes: a write below the seal\'s cut over a damaged sealed chunk, or a take-over over a damaged tail object, is refused with repair_required and the damage stays detectable', async () => {
      const objects = await os.make();
      const flip = async (name: string, at: number) => {
        const bytes = await objects.getAll(name);
        bytes[at] ^= 0x01;
        await objects.put(name, bytes);
      };
      // Sealed: a write below the cut takes the sealed bytes after it back into the writer's local tail.
      const w = await backend(objects, { segmentBytes: 16384, maxSegmentBytes: 16384, checkBytes: 1024, sealAgeMs: 600_000 });
      const writer = await storeOn(w.storage);
      await writer.create('sealed', {});
      for (let i = 0; i < 16; i++) await writer.append('sealed', chat(i * 60, 60));
      await writer.close();
      await w.storage.close();
      const logBytes = (await w.storage.readAll(sessionKeys('sealed').events)) as Buffer;
      const m = await latestManifest(objects, w.prefix, 'sealed');
      const extents = m.members.events?.extents ?? [];
      expect(extents.length).toBeGreaterThanOrEqual(2);
      expect(extents.every((e) => 'o' in e && e.o.startsWith('seg/'))).toBe(true);
      const e = extents[1] as { o: string; at: number; len: number };
      const start = (extents[0] as { len: number }).len;
      await flip(`${w.prefix}/sessions/sealed/${e.o}`, e.at + Math.floor(e.len / 2));
      const b = await backend(objects, { location: { bucket: 'b', prefix: w.prefix }, onDamage: () => undefined });
      const f = await b.storage.openWritable(sessionKeys('sealed').events, 'existing');
      // The same byte again, below the damaged chunk: the bytes after it would be copied, NULs and all.
      await expect(f.write(logBytes.subarray(start + 10, start + 11), start + 10)).rejects.toMatchObject({ code: 'repair_required', message: expect.stringMatching(/damaged on the store/) });
      await f.close();
      await b.storage.close();
      // Nothing of it was published again: a fresh reader still finds the damage by the segment's check.
      const r = await backend(objects, { location: { bucket: 'b', prefix: w.prefix }, freshMs: 0, onDamage: () => undefined });
      const back = (await r.storage.read(sessionKeys('sealed').events, start, start + e.len)) as Buffer;
      expect(r.storage.checked.damaged).toBeGreaterThan(0);
      expect(back.includes(0)).toBe(true);
      expect((await r.storage.stat(sessionKeys('sealed').events))?.size).toBe(logBytes.length);
      // A cut below the damage reads nothing back (repair cutting a log): not refused.
      const c = await backend(objects, { location: { bucket: 'b', prefix: w.prefix }, onDamage: () => undefined });
      const g = await c.storage.openWritable(sessionKeys('sealed').events, 'existing');
      await g.truncate(start + 10);
      await g.close();
      expect((await c.storage.stat(sessionKeys('sealed').events))?.size).toBe(start + 10);
      await c.storage.close();

      // A tail object: a take-over copies the published tail into its own local tail.
      const cut = new Partitionable(objects);
      const a = await backend(cut, { leaseMs: 300, inlineBytes: 512, checkBytes: 1024, segmentBytes: 1 << 20, maxSegmentBytes: 1 << 20, sealAgeMs: 600_000 });
      const sa = await storeOn(a.storage, 600_000);
      await sa.create('tailed', {});
      for (let i = 0; i < 4; i++) await sa.append('tailed', chat(i * 60, 60));
      const mt = await latestManifest(objects, a.prefix, 'tailed');
      const te = (mt.members.events?.extents ?? []).find((x) => 'o' in x && x.o.startsWith('tail/') && x.len > 200) as { o: string; at: number; len: number } | undefined;
      expect(te, 'an events extent in a tail object').toBeDefined();
      if (te === undefined) return;
      await flip(`${a.prefix}/sessions/tailed/${te.o}`, te.at + Math.floor(te.len / 2));
      // The writer is cut off; its lease lapses.
      cut.down = true;
      await new Promise((res) => setTimeout(res, 700));
      const t = await backend(objects, { location: { bucket: 'b', prefix: a.prefix }, leaseMs: 300, freshMs: 0, onDamage: () => undefined });
      const st = await storeOn(t.storage);
      await expect(st.append('tailed', chat(240, 1))).rejects.toMatchObject({ code: 'repair_required', message: expect.stringMatching(/damaged on the store/) });
      // No manifest of a new epoch: the damaged tail was not published again.
      expect((await latestManifest(objects, a.prefix, 'tailed')).epoch).toBe(mt.epoch);
      cut.down = false;
    }, 300_000);

    it('orphans of a fenced writer are deleted by the take-over, nothing a manifest names is; the fenced writer stays fenced', async () => {
      const base = await os.make();
      const flaky = new ManifestsFail(base);
      const a = await backend(flaky, { leaseMs: 300, segmentBytes: 4096, inlineBytes: 256 });
      const sa = await storeOn(a.storage);
      await sa.create('orph', {});
      for (let i = 0; i < 4; i++) await sa.append('orph', chat(i * 60, 60));
      expect(await unnamed(base, a.prefix, 'orph')).toEqual([]);
      // Cut off mid-publish twice: its segments and tail objects land, no manifest names them.
      flaky.down = 'manifests';
      await expect(sa.append('orph', chat(240, 60))).rejects.toThrow(/unreachable/);
      await expect(sa.append('orph', chat(300, 60))).rejects.toThrow(/unreachable/);
      // Then cut off for good (its timer's publishes upload nothing more, once an upload in flight has landed).
      flaky.down = 'all';
      await flaky.idle();
      const orphans = await unnamed(base, a.prefix, 'orph');
      expect(orphans.some((x) => x.startsWith('seg/')) && orphans.some((x) => x.startsWith('tail/')), orphans.join(' ')).toBe(true);
      // Its lease lapses; B takes over (B's first manifest), then collects.
      await new Promise((res) => setTimeout(res, 700));
      const b = await backend(base, { location: { bucket: 'b', prefix: a.prefix }, leaseMs: 300, segmentBytes: 4096, inlineBytes: 256 });
      const sb = await storeOn(b.storage);
      await sb.append('orph', chat(240, 7));
      expect(((await b.storage.orphanSweep('orph')) ?? []).sort()).toEqual(orphans);
      expect(await unnamed(base, a.prefix, 'orph')).toEqual([]);
      // Everything the latest manifest names is there: a fresh reader's pages equal the reference.
      await sb.append('orph', chat(247, 3));
      const latest = await latestManifest(base, a.prefix, 'orph');
      const stored = new Set((await base.list(`${a.prefix}/sessions/orph/`)).names.map((x) => x.slice(`${a.prefix}/sessions/orph/`.length)));
      for (const o of objectsNamed(latest)) expect(stored.has(o), o).toBe(true);
      const reader = await storeOn((await backend(base, { location: { bucket: 'b', prefix: a.prefix }, freshMs: 0 })).storage);
      await expectLog(reader, b.storage, 'orph', chat(0, 250), { maxMessages: 1000 });
      // A, back on the network after B made (and, keeping its last three, deleted) the manifest number A
      // would make next, is still fenced: it looks before it writes once its lease went unrenewed.
      for (let i = 0; i < 5; i++) await sb.append('orph', chat(250 + i, 1));
      const kept = (await base.list(`${a.prefix}/sessions/orph/manifest/`)).names.map((x) => manifestNumber(x.slice(`${a.prefix}/sessions/orph/`.length)) ?? 0);
      expect(kept).not.toContain(latest.n - 1);
      flaky.down = false;
      await expect(sa.append('orph', chat(360, 1))).rejects.toMatchObject({ code: 'session_busy', message: expect.stringMatching(/fenced/) });
      // The same step for maintenance finds nothing more to delete.
      expect(await b.storage.collectOrphans('orph')).toEqual([]);
    }, 300_000);

    it('a crashed writer\'s durable-but-unacknowledged tail is published when its successor opens the store, before any append; its orphans go', async () => {
      const objects = await os.make();
      const flaky = new ManifestsFail(objects);
      let crashed = false;
      const a = await backend(flaky, { pidAlive: () => !crashed, segmentBytes: 4096, inlineBytes: 256 });
      const sa = await storeOn(a.storage);
      await sa.create('rec', {});
      for (let i = 0; i < 3; i++) await sa.append('rec', chat(i * 40, 40));
      // The append is durable in the local tail; its manifest never lands (the process dies before).
      flaky.down = 'manifests';
      await expect(sa.append('rec', chat(120, 40))).rejects.toThrow(/unreachable/);
      flaky.down = 'all';
      await flaky.idle();
      crashed = true;
      const orphans = await unnamed(objects, a.prefix, 'rec');
      const reader = await storeOn((await backend(objects, { location: { bucket: 'b', prefix: a.prefix }, freshMs: 0 })).storage);
      expect(await reader.nextSeq('rec')).toBe(120);
      // The restarted writer: same tail folder, its predecessor dead. Opening its store publishes the tail.
      const again = await backend(objects, { location: { bucket: 'b', prefix: a.prefix }, tailDir: a.tailDir, pidAlive: () => false, segmentBytes: 4096, inlineBytes: 256 });
      await storeOn(again.storage);
      expect(await reader.nextSeq('rec')).toBe(160);
      await expectLog(reader, again.storage, 'rec', chat(0, 160), { maxMessages: 1000 });
      expect(((await again.storage.orphanSweep('rec')) ?? []).sort()).toEqual(orphans);
    }, 300_000);

    it('a reader told where an append is (the writer\'s change mark) fetches that manifest in one GET, no LIST', async () => {
      const objects = await os.make();
      const w = await backend(objects);
      const writer = await storeOn(w.storage);
      await writer.create('mark', {});
      await writer.append('mark', chat(0, 10));
      const rec = new RecordingStore(objects);
      // A long freshness window: only what the marks make it do is counted.
      const r = await backend(rec, { location: { bucket: 'b', prefix: w.prefix }, freshMs: 60_000 });
      const reader = await storeOn(r.storage);
      expect(await reader.nextSeq('mark')).toBe(10);
      await writer.append('mark', chat(10, 5));
      const at = w.storage.changeMark(sessionKeys('mark').meta);
      expect(at).toMatch(/^m\d+$/);
      rec.calls.length = 0;
      await r.storage.refresh(sessionKeys('mark').meta, at);
      expect(rec.calls.map((c) => c.op)).toEqual(['get']);
      // The look it stands for: the append is there (the small append's bytes ride inline in that manifest).
      expect(await reader.nextSeq('mark')).toBe(15);
      expect(rec.calls.filter((c) => c.op === 'list')).toEqual([]);
      const log = decodeWholeLog((await w.storage.readAll(sessionKeys('mark').events)) as Buffer);
      expect(await reader.page('mark', { maxMessages: 100 })).toEqual(referencePage(log, 'mark', { maxMessages: 100 }));
      // A mark already seen: nothing to fetch. No mark: a full look (LIST, GET).
      rec.calls.length = 0;
      await r.storage.refresh(sessionKeys('mark').meta, at);
      expect(rec.calls).toEqual([]);
      await r.storage.refresh(sessionKeys('mark').meta);
      expect(rec.calls.map((c) => c.op)).toContain('list');
      expect(w.storage.changeMark(sessionKeys('other').meta)).toBeUndefined();
    }, 300_000);

    it('a write landing while a publish awaits its PUTs never makes a manifest whose sizes and extents disagree, and is published next', async () => {
      // Each call 5 ms (in memory): a publish's tail-object and manifest PUTs leave room for writes.
      const objects = os.name === 'in-memory object store' ? new MemoryObjectStore(5) : await os.make();
      const w = await backend(objects, { inlineBytes: 64, segmentBytes: 1 << 20 });
      const key = sessionKeys('race').events;
      await w.storage.createExclusive(sessionKeys('race').meta, Buffer.from('{}'));
      const f = await w.storage.openWritable(key, 'create');
      let pos = 0;
      const chunk = Buffer.alloc(200, 0x61);
      for (let i = 0; i < 20; i++) {
        // A publish (the metadata replaced) with writes racing it.
        const pub = w.storage.replace(sessionKeys('race').meta, Buffer.from(`{"i":${i}}`));
        for (let k = 0; k < 3; k++) {
          await f.write(chunk, pos);
          pos += chunk.length;
          await new Promise((res) => setTimeout(res, 1));
        }
        await pub;
      }
      await f.close();
      const folder = `${w.prefix}/sessions/race/`;
      const names = (await objects.list(`${folder}manifest/`)).names;
      expect(names.length).toBeGreaterThan(0);
      for (const x of names) {
        const n = manifestNumber(x.slice(folder.length)) as number;
        const bytes = await objects.getAll(x).catch(() => null);
        if (bytes !== null) expect(() => decodeManifest(bytes, n, 'race'), x).not.toThrow();
      }
      // Every byte written reaches a reader.
      const r = await backend(objects, { location: { bucket: 'b', prefix: w.prefix }, freshMs: 0 });
      expect((await r.storage.stat(key))?.size).toBe(pos);
      expect(await r.storage.readAll(key)).toEqual(Buffer.alloc(pos, 0x61));
    }, 300_000);
  });
}
