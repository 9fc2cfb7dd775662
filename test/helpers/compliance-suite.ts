/**
 * One compliance suite for every storage backend (test/helpers/backends.ts;
 * run by test/storage-compliance.test.ts, and by test/s3/ against a real S3
 * endpoint):
 * the store served from each must behave exactly as SPEC sections 3-5 say,
 * whatever holds the bytes:
 * - the page path against the reference reader, on random logs (fast-check)
 *   and on the dsh fixtures, through both planners;
 * - the trust rules: a damaged frame, a torn or unindexed tail, missing or
 *   stale sidecars, projections that are deleted or lie;
 * - appends: seq rules, durability order, one writer per session, pages
 *   after every append;
 * - the writer's maintenance on open: indexing a complete unindexed tail,
 *   refusing a torn one; the log analysis behind doctor --deep, reindex and
 *   repair, and header discovery; the maintenance commands themselves
 *   (import, gen, doctor, reindex, repair with its backup before a cut);
 * - follow: appends through another store on the same backend reach a
 *   follower (file-change notification, or the generic stat poll).
 * A backend passes only if all of it passes; the local backend is also
 * covered in depth by the other suites (page-path, trust, writer, ...).
 */
import { basename, join } from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandRecords } from '../../src/core/chunk-codec.js';
import type { PageParams, SessionEvent } from '../../src/core/types.js';
import { decodeWholeLog, type ReferenceLog } from '../../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../../src/main/store.js';
import type { StorageBackend } from '../../src/storage/backend.js';
import { projectionKey, sessionKeys } from '../../src/storage/layout.js';
import type { BackendUnderTest } from './backends.js';
import { analyzeLog } from '../../src/main/maintenance/analyze.js';
import { discoverSession } from '../../src/main/maintenance/discover.js';
import { diagnose, listSessionIds } from '../../src/main/maintenance/doctor.js';
import { importSession } from '../../src/main/maintenance/import.js';
import { reindexSession } from '../../src/main/maintenance/reindex.js';
import { repairSession } from '../../src/main/maintenance/repair.js';
import { generateSession } from '../../src/main/gen/generate.js';
import { dshFixtures } from './fixtures.js';
import { expectSamePage, fixtureEvents, pageQueriesArb, queryParams, walkPages } from './page-checks.js';
import { randomLogArb, writeRandomLog, type BatchSpec } from './random-log.js';

async function referenceOf(storage: StorageBackend, id: string): Promise<ReferenceLog> {
  const bytes = await storage.readAll(sessionKeys(id).events);
  if (bytes === null) throw new Error(`no log for ${id}`);
  return decodeWholeLog(bytes);
}

/** Change one byte of a stored object, as a failing disk would. */
async function flipByte(storage: StorageBackend, key: string, offset: number): Promise<void> {
  const f = await storage.openWritable(key, 'existing');
  const b = await f.read(offset, 1);
  await f.write(Buffer.from([(b[0] as number) ^ 0xff]), offset);
  await f.close();
}

async function appendBytes(storage: StorageBackend, key: string, bytes: Buffer): Promise<void> {
  const f = await storage.openWritable(key, 'existing');
  await f.write(bytes, f.size);
  await f.close();
}

function entriesOf(text: string): { seq: number; count: number; offset: number; length: number }[] {
  return text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { seq: number; count: number; offset: number; length: number });
}

const chat = (from: number, n: number): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => {
    const seq = from + i;
    return seq % 4 === 0
      ? { type: 'user/message', seq, time: 1000 + seq, data: { text: `question ${seq}` } }
      : { type: 'assistant/chunk', seq, time: 1000 + seq, data: { turn: Math.floor(seq / 4), step: 0, chunk: { type: 'text-delta', index: 0, text: ` w${seq}` } } };
  });

/** The whole suite against one backend. */
export function complianceSuite(b: BackendUnderTest): void {
  describe(`backend compliance: ${b.name}`, () => {
    let storage: StorageBackend;
    let dispose: () => Promise<void>;
    let store: PagerStore;
    /** Every page cut across 4 workers, results in place: slice edges and arenas. */
    let splitting: PagerStore;

    beforeAll(async () => {
      ({ storage, dispose } = b.make());
      store = await openStore({ storage, workers: 2 });
      splitting = await openStore({ storage, workers: 4, splitCost: 1, inPlaceBytes: 0, pageCacheBytes: 0 });
    });
    afterAll(async () => {
      await store?.close();
      await splitting?.close();
      await dispose?.();
    });

    it('pages of random logs equal the reference, through both planners and any slicing', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(
          randomLogArb(),
          pageQueriesArb({ before: false, maxBytes: true, maxMessages: 'always', maxLength: 4 }),
          async (spec, queries) => {
            const id = `rand-${n++}`;
            await writeRandomLog(spec, { storage, id });
            // Every other log plans from the JSONL sidecar.
            if (n % 2 === 0) await storage.remove(projectionKey(sessionKeys(id), 'frames.idx'));
            const log = await referenceOf(storage, id);
            expect(log.events).toEqual(spec.events);
            const last = spec.events.length - 1;
            for (const q of queries) {
              const params = queryParams(q, last);
              await expectSamePage(store, id, log, params);
              await expectSamePage(splitting, id, log, params);
            }
            await walkPages(splitting, id, log, 2, 500);
          },
        ),
        { numRuns: 25 },
      );
    }, b.timeoutMs);

    it('pages of the dsh fixtures equal the reference (every third fixture, mixed encodings)', async () => {
      const batchings: BatchSpec[][] = [[{ size: 7, format: 'jsonl' }], [{ size: 3, format: 'binary' }, { size: 40, format: 'jsonl' }]];
      const files = dshFixtures().filter((_, i) => i % 3 === 0);
      expect(files.length).toBeGreaterThan(30);
      for (const [i, file] of files.entries()) {
        const { header, events } = fixtureEvents(file);
        const id = `fx-${i}`;
        await writeRandomLog({ events, batches: batchings[i % 2] as BatchSpec[] }, { storage, id, header });
        const log = await referenceOf(storage, id);
        expect(log.events, basename(file)).toEqual(events);
        await expectSamePage(store, id, log, {});
        await walkPages(splitting, id, log, 1 + (i % 3));
      }
    }, b.timeoutMs);

    it('appends: create, seq rules, pages after each append, the catalog, one writer per session', async () => {
      await store.create('chat', { title: 'compliance' });
      const other = await openStore({ storage, workers: 1 });
      try {
        await expect(store.create('chat', {})).rejects.toMatchObject({ code: 'session_exists' });
        await expect(store.append('chat', chat(1, 3))).rejects.toMatchObject({ code: 'seq_conflict' });
        await expect(store.append('chat', [{ type: 'session', seq: 0, time: 1, data: {} }])).rejects.toMatchObject({ code: 'invalid_request' });
        let all: SessionEvent[] = [];
        for (const size of [1, 5, 17, 40]) {
          const batch = chat(all.length, size);
          expect(await store.append('chat', batch)).toMatchObject({ fromSeq: all.length, toSeq: all.length + size });
          all = [...all, ...batch];
          const log = await referenceOf(storage, 'chat');
          expect(log.events).toEqual(all);
          await expectSamePage(store, 'chat', log, { maxMessages: 2 });
          // A second store over the same storage reads what the first wrote.
          await expectSamePage(other, 'chat', log, { maxMessages: 3 });
        }
        expect(await other.readEvents('chat', 3, 9)).toEqual(all.slice(3, 9));
        // The session's writer lease is held by `store`: another store cannot write it.
        await expect(other.append('chat', chat(all.length, 1))).rejects.toMatchObject({ code: 'session_busy' });
        const entry = (await other.list()).find((e) => e.id === 'chat');
        expect(entry).toMatchObject({ status: 'ok', title: 'compliance', nextSeq: all.length, hasUserMessage: true });
        expect(await other.info('chat')).toMatchObject({ status: 'ok', nextSeq: all.length });
      } finally {
        await other.close();
      }
      await expect(store.info('nobody')).rejects.toMatchObject({ code: 'session_not_found' });
      await expect(store.page('nobody')).rejects.toMatchObject({ code: 'session_not_found' });
    }, b.timeoutMs);

    it('trust: a damaged frame fails only the pages that cover it, with its seqs; the session shows degraded', async () => {
      const events = chat(0, 120);
      await writeRandomLog({ events, batches: [{ size: 1, format: 'binary' }] }, { storage, id: 'dmg' });
      const k = sessionKeys('dmg');
      const entries = entriesOf(((await storage.readAll(k.entries)) as Buffer).toString('utf8'));
      const victim = entries.find((e) => e.seq === 60 && e.count > 0) as { seq: number; count: number; offset: number; length: number };
      await flipByte(storage, k.events, victim.offset + victim.length - 2);
      const fresh = await openStore({ storage, workers: 1, pageCacheBytes: 0 });
      try {
        const err = await fresh.page('dmg', { maxMessages: 1000 }).then(
          () => null,
          (e: unknown) => e as { code: string; details: { fromSeq: number; toSeq: number } },
        );
        expect(err).toMatchObject({ code: 'corrupt_range', details: { fromSeq: victim.seq, toSeq: victim.seq + victim.count } });
        // The tail page does not cover it: served.
        const log = decodeWholeLog(((await storage.read(k.events, 0, victim.offset)) as Buffer));
        const tail = await fresh.page('dmg', { maxMessages: 2 });
        expect(tail.fromSeq).toBeGreaterThan(victim.seq);
        expect(expandRecords(tail.records)[0]).toEqual(events[tail.fromSeq]);
        expect(log.events).toEqual(events.slice(0, victim.seq));
        expect((await fresh.list()).find((e) => e.id === 'dmg')?.status).toBe('degraded');
      } finally {
        await fresh.close();
      }
    }, b.timeoutMs);

    it('trust: an unindexed tail is never served and degrades the session; the writer indexes complete frames, refuses torn ones', async () => {
      const events = chat(0, 30);
      await writeRandomLog({ events, batches: [{ size: 4, format: 'jsonl' }] }, { storage, id: 'tail' });
      const k = sessionKeys('tail');
      const extra = chat(30, 1)[0] as SessionEvent;
      await appendBytes(storage, k.events, Buffer.from(`${JSON.stringify(extra)}\n`));
      const fresh = await openStore({ storage, workers: 1, pageCacheBytes: 0 });
      try {
        const info = await fresh.info('tail');
        expect(info.status).toBe('degraded');
        expect(info.reasons.join(' ')).toMatch(/unindexed tail/);
        const page = await fresh.page('tail', { maxMessages: 1000 });
        expect(page.toSeq).toBe(30);
        // Opening a writer indexes the complete frame found there, then appends after it.
        await fresh.append('tail', chat(31, 2));
        const log = await referenceOf(storage, 'tail');
        expect(log.events).toEqual([...events, extra, ...chat(31, 2)]);
        await expectSamePage(fresh, 'tail', log, { maxMessages: 1000 });
      } finally {
        await fresh.close();
      }
      // A torn frame past the indexed end: repair_required, nothing written.
      await appendBytes(storage, k.events, Buffer.from('{"type":"user/mess'));
      const before = await storage.stat(k.entries);
      const again = await openStore({ storage, workers: 1 });
      try {
        expect((await again.info('tail')).status).toBe('degraded');
        await expect(again.append('tail', chat(33, 1))).rejects.toMatchObject({ code: 'repair_required' });
        expect((await storage.stat(k.entries))?.size).toBe(before?.size);
      } finally {
        await again.close();
      }
    }, b.timeoutMs);

    it('trust: missing sidecars make the session repair_required without failing the catalog; a stale metadata sidecar is caught up', async () => {
      const events = chat(0, 24);
      for (const id of ['nometa', 'noentries', 'stale']) await writeRandomLog({ events, batches: [{ size: 6, format: 'jsonl' }] }, { storage, id });
      const stale = sessionKeys('stale');
      const metaBefore = await storage.readAll(stale.meta);
      await writeRandomLog({ events: [], batches: [{ size: 1, format: 'jsonl' }] }, { storage, id: 'empty' });
      await storage.remove(sessionKeys('nometa').meta);
      await storage.remove(sessionKeys('noentries').entries);
      // Stale: the metadata of 24 events, the log and entry sidecar of 30.
      const s = await openStore({ storage, workers: 1 });
      await s.append('stale', chat(24, 6));
      await s.close();
      await storage.replace(stale.meta, metaBefore as Buffer);
      const fresh = await openStore({ storage, workers: 1 });
      try {
        const byId = new Map((await fresh.list()).map((e) => [e.id, e]));
        expect(byId.get('nometa')?.status).toBe('repair_required');
        expect(byId.get('noentries')?.status).toBe('repair_required');
        expect(byId.get('noentries')?.reasons.join(' ')).toMatch(/entry sidecar is missing/);
        expect(byId.get('stale')).toMatchObject({ status: 'ok', nextSeq: 30, metaStale: true });
        expect(byId.get('empty')).toMatchObject({ status: 'ok', nextSeq: 0, lastSeq: -1 });
        await expect(fresh.page('noentries')).rejects.toMatchObject({ code: 'repair_required' });
        await expectSamePage(fresh, 'stale', await referenceOf(storage, 'stale'), { maxMessages: 3 });
        expect(await fresh.page('empty')).toMatchObject({ throughSeq: -1, fromSeq: 0, toSeq: 0, hasMore: false, records: [] });
        // Nothing was written by reading (the catalog and pages never write).
        expect(await storage.readAll(stale.meta)).toEqual(metaBefore);
      } finally {
        await fresh.close();
      }
    }, b.timeoutMs);

    it('trust: projections are derived: deleted or lying, pages stay the same', async () => {
      const events = chat(0, 200);
      await writeRandomLog({ events, batches: [{ size: 9, format: 'jsonl' }] }, { storage, id: 'proj' });
      const k = sessionKeys('proj');
      const log = await referenceOf(storage, 'proj');
      const params: PageParams[] = [{}, { maxMessages: 3 }, { throughSeq: 100, maxMessages: 5 }];
      // `splitting` keeps no prepared pages: every page is planned and decoded again.
      const check = async () => {
        for (const p of params) await expectSamePage(splitting, 'proj', log, p);
      };
      await check();
      // A lying frame index and checksum projection: a byte flipped in each.
      for (const name of ['frames.idx', 'frames.crc2', 'frames.meta']) await flipByte(storage, projectionKey(k, name), 40);
      await check();
      await storage.removeAll(k.projections);
      await check();
    }, b.timeoutMs);

    it('maintenance: the log analysis (doctor --deep, reindex, repair) and header discovery read through the backend', async () => {
      const events = chat(0, 60);
      await writeRandomLog({ events, batches: [{ size: 5, format: 'jsonl' }, { size: 3, format: 'binary' }] }, { storage, id: 'maint' });
      const k = sessionKeys('maint');
      const entries = entriesOf((await storage.readAll(k.entries))!.toString('utf8'));
      const seen: number[] = [];
      const a = await analyzeLog(k.events, { onEntry: (e) => void seen.push(e.offset) }, storage);
      expect(a).toMatchObject({ headerFault: null, frameCount: entries.length, eventCount: 60, corrupt: [], tail: null });
      expect(seen).toEqual(entries.map((e) => e.offset));
      const d = await discoverSession(k, storage);
      expect(d).toMatchObject({ id: 'maint', headerLength: entries[0]!.length, header: { type: 'session' } });
      expect(d.reason).toBeUndefined();
      // A damaged frame in the middle: one corrupt range with its seqs, the rest still indexable.
      const victim = entries[7]!;
      await flipByte(storage, k.events, victim.offset + Math.floor(victim.length / 2));
      const b = await analyzeLog(k.events, {}, storage);
      expect(b.corrupt).toMatchObject([{ offset: victim.offset, fromSeq: victim.seq, toSeq: victim.seq + victim.count }]);
      expect(b.eventCount).toBe(60);
      await expect(analyzeLog(sessionKeys('no-such').events, {}, storage)).rejects.toMatchObject({ code: 'ENOENT' });
      expect((await discoverSession(sessionKeys('no-such'), storage)).reason).toBe('log file is missing');
    });

    it('maintenance commands work on the backend: import, gen, doctor (reads only), reindex, repair (a backup before any cut, no valid frame dropped)', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sp-maint-input-'));
      try {
        // import: a dsh-style JSONL file (a local input) into the store; pages equal the reference.
        const events = chat(0, 40);
        const file = join(dir, 'imp.jsonl');
        writeFileSync(file, [JSON.stringify({ type: 'session', version: 1, id: 'host-id', createdAt: 5 }), ...events.map((e) => JSON.stringify(e))].join('\n') + '\n');
        const imported = await importSession(storage, file, {});
        expect(imported).toMatchObject({ id: 'imp', events: 40, frames: 41, verbatim: true });
        await expect(importSession(storage, file, {})).rejects.toMatchObject({ code: 'session_exists' });
        const k = sessionKeys('imp');
        const log = await referenceOf(storage, 'imp');
        expect(log.events).toEqual(events);
        await walkPages(store, 'imp', log, 4);
        // gen: a synthetic session through the writer.
        const g = await generateSession(storage, { id: 'gen-m', events: 400, seed: 3 });
        expect(g.events).toBe(400);
        expect((await referenceOf(storage, 'gen-m')).events).toHaveLength(400);
        expect(await listSessionIds(storage)).toEqual(expect.arrayContaining(['gen-m', 'imp']));

        // doctor --deep: both ok, and it writes nothing.
        const versions = async () => Promise.all([k.events, k.entries, k.meta, projectionKey(k, 'frames.idx')].map(async (key) => (await storage.stat(key))?.version ?? null));
        const v0 = await versions();
        const reports = await diagnose(storage, undefined, { deep: true });
        expect(reports.filter((r) => ['gen-m', 'imp'].includes(r.id)).map((r) => [r.id, r.status, r.sidecars, r.issues])).toEqual([
          ['gen-m', 'ok', 'fresh', []],
          ['imp', 'ok', 'fresh', []],
        ]);
        expect(await versions()).toEqual(v0);

        // reindex rebuilds exactly the sidecars import wrote.
        const entries0 = (await storage.readAll(k.entries))!;
        const r = await reindexSession(k, {}, storage);
        expect(r.meta).toEqual(imported.meta);
        expect((await storage.readAll(k.entries))!.equals(entries0)).toBe(true);
        await walkPages(store, 'imp', log, 7);

        // A torn tail: doctor says repair cuts it; a dry run writes nothing; repair backs the log up
        // first (the backup holds every byte it had), then cuts only the torn bytes.
        const good = (await storage.readAll(k.events))!;
        await appendBytes(storage, k.events, Buffer.from('{"type":"user/message","seq":40,"ti'));
        const torn = (await storage.readAll(k.events))!;
        const [deep] = await diagnose(storage, 'imp', { deep: true });
        expect(deep!.issues.map((i) => i.code)).toContain('tail_torn');
        const dry = await repairSession(k, { dryRun: true }, storage);
        expect(dry.plan.steps.map((s) => s.kind)).toEqual(['backup', 'truncate', 'reindex']);
        expect((await storage.readAll(k.events))!.equals(torn)).toBe(true);
        const bak = dry.plan.steps[0]!.kind === 'backup' ? dry.plan.steps[0]!.key : '';
        expect(await storage.stat(bak)).toBeNull();
        let t = 1_764_600_000_000;
        const fixed = await repairSession(k, { now: () => t++ }, storage);
        expect(fixed.done.map((s) => s.kind)).toEqual(['backup', 'truncate', 'reindex']);
        expect(fixed.after.status).toBe('ok');
        const backup = fixed.done[0]!.kind === 'backup' ? fixed.done[0]!.key : '';
        expect((await storage.readAll(backup))!.equals(torn)).toBe(true);
        expect((await storage.readAll(k.events))!.equals(good)).toBe(true);
        await walkPages(store, 'imp', log, 5);
        // A second run has nothing to do and makes no second backup.
        const again = await repairSession(k, { now: () => t++ }, storage);
        expect(again.done).toEqual([]);
        await expect(storage.createExclusive(backup, Buffer.from('x'))).rejects.toMatchObject({ code: 'EEXIST' });

        // A corrupt middle frame: kept (never dropped), recorded, the session degraded; no cut, so no backup.
        const lines = entriesOf((await storage.readAll(k.entries))!.toString('utf8'));
        const victim = lines[9]!;
        await flipByte(storage, k.events, victim.offset + Math.floor(victim.length / 2));
        const damaged = (await storage.readAll(k.events))!;
        const kept = await repairSession(k, { now: () => t++ }, storage);
        expect(kept.done.map((s) => s.kind)).toEqual(['reindex']);
        expect(kept.plan.kept).toHaveLength(1);
        expect(kept.after.status).toBe('degraded');
        expect((await storage.readAll(k.events))!.equals(damaged)).toBe(true);
        expect(entriesOf((await storage.readAll(k.entries))!.toString('utf8')).map((e) => [e.offset, e.length])).toEqual(lines.map((e) => [e.offset, e.length]));
        const [after] = await diagnose(storage, 'imp', { deep: true });
        expect(after!.issues.map((i) => [i.code, i.fromSeq])).toEqual([['corrupt_frame', victim.seq]]);
        await expect(store.page('imp', { maxMessages: 1000 })).rejects.toMatchObject({ code: 'corrupt_range' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, b.timeoutMs);

    it('follow: appends made through another store on the same backend reach a follower in order, no gap, none twice', async () => {
      // The follower's store hears of them only by the backend's change notification (local:
      // fs.watch) or, without one, by polling the entry sidecar's stat through the seam.
      const other = await openStore({ storage, workers: 1, warmUp: { jit: false, pagePath: false } });
      const ac = new AbortController();
      try {
        await other.create('follow', { title: 'followed' });
        await other.append('follow', chat(0, 4));
        const got: SessionEvent[] = [];
        const reading = (async () => {
          for await (const e of store.follow('follow', { fromSeq: 2, signal: ac.signal })) {
            got.push(e);
            if (got.length === 14) break;
          }
        })();
        for (let k = 1; k <= 3; k++) {
          // Each batch once the follower has what came before: no append can be met by a look already under way.
          // (Generous: the first read may wait for the pool's warm-up on a loaded machine.)
          const want = 4 * k - 2;
          for (const until = Date.now() + 60_000; got.length < want && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
          expect(got.length).toBe(want);
          await other.append('follow', chat(4 * k, 4));
        }
        const deadline = setTimeout(() => ac.abort(), 30_000);
        await reading;
        clearTimeout(deadline);
        expect(got).toEqual(chat(2, 14));
        expect(store.stats().follow.followers).toBe(0);
      } finally {
        ac.abort();
        await other.close();
      }
    }, 120_000);
  });
}
