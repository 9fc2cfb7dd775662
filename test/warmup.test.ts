/**
 * The store's warm-up serves a generated session's pages through the real
 * page path before the first request, on an in-memory store of its own, and
 * leaves nothing behind: nothing in the store's data directory, nothing in
 * the temporary directory, no session anywhere, no reference to its data.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openStore } from '../src/main/store.js';
import { preparePagePath, snapshotPagePath, warmUpLocalPages, warmUpPagePath, type WarmupStore } from '../src/main/warmup/page-path-warmup.js';
import type { StorageBackend } from '../src/storage/backend.js';
import { warmUpPlanner } from '../src/main/warmup/planner-warmup.js';
import { walkPage, WALK_ONCE_A_PAGE } from '../src/core/page-planner.js';
import { INDEX_ENTRY } from '../src/streams/frame-index-file.js';
import { spanFits } from '../src/core/plan-check.js';
import { objectsUnder } from '../src/main/warmup/session-snapshot.js';
import type { Tier } from '../src/workers/optimization-status.js';
import type { PageParams } from '../src/core/types.js';
import { deadSummary, lastCollection } from './helpers/gc-garbage.js';

describe('store warm-up', () => {
  it('runs pages through the shared pool, writes no file anywhere and serves nothing of its own afterwards', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-data-'));
    const before = new Set(readdirSync(tmpdir()));
    const store = await openStore({ dataDir, workers: 1 });
    try {
      await store.warmUp();
      // Empty slices for the pool start, then the warm-up pages' slices on the same pool.
      expect(store.stats().pool.completed).toBeGreaterThan(10);
      expect(store.stats().pagesServed).toBe(0);
      expect(await store.list()).toEqual([]);
      expect(readdirSync(dataDir).sort()).toEqual(['sessions']);
      expect(readdirSync(join(dataDir, 'sessions'))).toEqual(['index']);
      expect(readdirSync(join(dataDir, 'sessions', 'index'))).toEqual([]);
      // Nothing new in the temporary directory (other test files may add their own meanwhile: only the warm-up's names count).
      expect(readdirSync(tmpdir()).filter((f) => !before.has(f) && /warmup/.test(f) && !f.startsWith('warmup-data-'))).toEqual([]);
    } finally {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("collects its garbage on the calling thread when done: nothing of it stays for the old generation's limit", () => {
    // As `serve` runs V8 (incremental marking off, cli/serve-gc.ts) and opens its store (warmUp.collect), nothing collects the old
    // generation before its limit: the warm-up's store, session and result buffers stayed resident
    // while idle. In a fresh process: a full collection right after warmUp() finds next to nothing
    // dead, counted object by object by V8 (helpers/gc-garbage.ts says why not used_heap_size).
    const dist = resolve(import.meta.dirname, '..', 'dist');
    expect(existsSync(join(dist, 'main', 'store.js')), 'dist/ is built by `npm test` (tsc) before the tests run').toBe(true);
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-data-'));
    try {
      const code = `
        import(process.argv[1]).then(async ({ openStore }) => {
          const store = await openStore({ dataDir: process.argv[2], workers: 2, readOnly: true, warmUp: { collect: true } });
          await store.warmUp();
          gc();
          // Closed, not process.exit(): that loses what V8 printed last (libc's buffer of a pipe).
          await store.close();
        });`;
      const { last } = lastCollection(code, [join(dist, 'main', 'store.js'), dataDir]);
      // Measured (12-03, load 0.5-9): 24 KB dead (maps and descriptor arrays its shapes left
      // deprecated); 168-169 KB while each collection made a vm context of its own to find `gc`
      // (full-gc.ts); 0.9-2.7 MB without the collection.
      expect(last.deadBytes, deadSummary(last)).toBeLessThan(64 * 1024);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("the page task loaded outside a pool (`page`'s in-thread decode, serve's small slices) loads none of the workers' warm-up generator", () => {
    // The JIT warm-up builds its synthetic logs with the generator and the writer's encoders: ~7
    // modules that a thread which never warms up paid to load (the `page` command: ~1 ms each).
    const dist = resolve(import.meta.dirname, '..', 'dist');
    const hook = 'data:text/javascript,' + encodeURIComponent('export async function load(u, c, n) { if (u.startsWith("file:")) process._rawDebug("loaded " + u); return n(u, c); }');
    const run = (code: string) => spawnSync(process.execPath, ['--no-warnings', '--experimental-loader', hook, '--input-type=module', '-e', code], { encoding: 'utf8' }).stderr;
    const inThread = run(`await import(${JSON.stringify(pathToFileURL(join(dist, 'workers', 'page-task.js')).href)});`);
    expect(inThread).toContain('workers/page-task.js');
    expect(inThread.split('\n').filter((l) => /\/(gen\/|jit-warmup)/.test(l))).toEqual([]);
  }, 60_000);

  it('serves its pages from an in-memory backend, and empties it when done', async () => {
    const seen: { storage: StorageBackend | null } = { storage: null };
    const asked: PageParams[] = [];
    const store = await openStore({ dataDir: mkdtempSync(join(tmpdir(), 'warmup-data-')), workers: 1, warmUp: { jit: false } });
    try {
      await warmUpPagePath(async (storage): Promise<WarmupStore> => {
        seen.storage = storage;
        expect(storage.kind).toBe('memory');
        expect(await storage.list('sessions')).toEqual(expect.arrayContaining(['warmup.events']));
        return {
          pageBuffer: async (id, params) => {
            asked.push(params);
            return store.pageBuffer(id, params).catch((err: Error) => err);
          },
          close: async () => undefined,
        };
      }, await preparePagePath());
      expect(asked.length).toBeGreaterThanOrEqual(6);
      expect(seen.storage).not.toBeNull();
      expect(await seen.storage!.list('sessions')).toEqual([]);
    } finally {
      await store.close();
      rmSync(store.dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("serves pages once more from the build's copy of the session through the local backend, reading only; not from a copy made for another plan, or none", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warmup-snapshot-'));
    const copy = join(dir, 'data');
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-data-'));
    // Every file of the copy with its bytes and times: a start must leave them as the build did.
    const files = (at: string): Map<string, string> => {
      const out = new Map<string, string>();
      for (const f of readdirSync(at, { recursive: true, withFileTypes: true })) {
        if (!f.isFile()) continue;
        const path = join(f.parentPath, f.name);
        const s = statSync(path);
        out.set(path, `${readFileSync(path).toString('base64')} ${s.mtimeMs} ${s.ctimeMs} ${s.ino}`);
      }
      return out;
    };
    try {
      await snapshotPagePath({ file: join(dir, 'session.bin'), dir: copy });
      const made = files(copy);
      expect([...made.keys()].some((k) => k.endsWith('warmup.events'))).toBe(true);
      const kinds: string[] = [];
      const bodies: number[] = [];
      const open = async (storage: StorageBackend): Promise<WarmupStore> => {
        kinds.push(storage.kind);
        const own = await openStore({ dataDir, storage, workers: 2, warmUp: { jit: false } });
        return {
          pageBuffer: async (id, params) => {
            const page = await own.pageBuffer(id, params);
            bodies.push(page.body.length);
            return page;
          },
          close: () => own.close(),
        };
      };
      expect(await warmUpLocalPages(open, copy)).toBe(true);
      expect(kinds).toEqual(['local']);
      expect(bodies.length).toBeGreaterThanOrEqual(2);
      for (const n of bodies) expect(n).toBeGreaterThan(100);
      expect(files(copy)).toEqual(made);
      // Made from another plan (a stale build), or missing: nothing is served.
      writeFileSync(join(copy, 'plan.json'), readFileSync(join(copy, 'plan.json'), 'utf8').replace('"seed":5', '"seed":6'));
      expect(await warmUpLocalPages(open, copy)).toBe(false);
      expect(await warmUpLocalPages(open, join(dir, 'missing'))).toBe(false);
      expect(kinds).toEqual(['local']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("writes a small session, whose tail page is still cut into one slice per worker", async () => {
    // Writing and serving the warm-up's session leaves malloc'd memory resident on this thread
    // while idle (~3 MB more for a 580 KB log than for a 240 KB one, docs/benchmarks.md); what
    // it must keep is a multi-slice tail page, the plan shape real tail pages take.
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-data-'));
    const store = await openStore({ dataDir, workers: 2, warmUp: { jit: false } });
    const logBytes: number[] = [];
    const slices: number[] = [];
    try {
      await warmUpPagePath(async (storage): Promise<WarmupStore> => {
        logBytes.push((await storage.stat('sessions/warmup.events'))?.size ?? -1);
        const own = await openStore({ dataDir, storage, workers: 2, warmUp: { jit: false } });
        return {
          pageBuffer: async (id, params) => {
            const before = own.stats().pool.completed;
            const page = await own.pageBuffer(id, params);
            slices.push(own.stats().pool.completed - before);
            return page;
          },
          close: () => own.close(),
        };
      }, await preparePagePath());
      expect(logBytes[0]).toBeGreaterThan(0);
      expect(logBytes[0]).toBeLessThan(300_000);
      // The first page asked is the tail page.
      expect(slices[0]).toBe(2);
    } finally {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('a warm-up that cannot run is a warning, not a failure to start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-data-'));
    const store = await openStore({ dataDir, workers: 1, warmUp: { jit: false } });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      // A store that cannot serve the warm-up's pages (it is closed).
      const broken = await openStore({ dataDir, workers: 1, warmUp: { jit: false } });
      await broken.close();
      const { warmUpStore } = await import('../src/main/warmup/warm-up.js');
      const { createPagePool } = await import('../src/main/worker-pool.js');
      const pool = createPagePool({ threads: 1, jitWarmUp: false });
      try {
        await warmUpStore({ pool, threads: 1, pagePath: true, collect: false, openStore: async () => broken });
      } finally {
        await pool.close();
      }
      await new Promise((r) => setImmediate(r));
      expect(warnings.some((m) => m.startsWith('page-path warm-up skipped: ') && m.includes('store is closed'))).toBe(true);
      // And the store serves as usual.
      expect(await store.list()).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('workers that cannot start fail the warm-up with their error, while the session writing runs beside them', async () => {
    const { warmUpStore } = await import('../src/main/warmup/warm-up.js');
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    const pool = {
      options: { maxThreads: 1, maxQueue: 64 },
      queueSize: 0,
      utilization: 0,
      completed: 0,
      threads: [],
      // Fails at once, long before the planner's warm-up on this thread is done.
      run: () => Promise.reject(new Error('worker could not start')),
      close: async () => undefined,
    };
    let opened = false;
    try {
      await expect(
        warmUpStore({
          pool,
          threads: 1,
          pagePath: true,
          collect: false,
          openStore: async () => {
            opened = true;
            throw new Error('not asked');
          },
        }),
      ).rejects.toThrow('worker could not start');
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
      expect(opened).toBe(false);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  }, 60_000);

  it("loads its session from the build's snapshot when there is one: the same objects and pages as writing it, and written when the snapshot is missing or not for it", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warmup-snapshot-'));
    const file = join(dir, 'session.bin');
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-data-'));
    const objects = async (storage: StorageBackend): Promise<Map<string, Buffer>> => new Map(await objectsUnder(storage, 'sessions'));
    // The metadata sidecar holds the writer's clock (createdAt, updatedAt, the log's mtime): the rest is the seeded generator's.
    const clockless = (b: Buffer) => b.toString().replace(/"(createdAt|updatedAt|mtimeMs)":\d+/g, '"$1":0');
    const pagesOf = async (storage: StorageBackend) => {
      const own = await openStore({ dataDir, storage, workers: 2, warmUp: { jit: false } });
      try {
        const out: unknown[] = [];
        for (const params of [{}, { maxMessages: 3 }, { maxMessages: 2, beforeSeq: 3600 }, { maxBytes: 50_000 }]) {
          const before = own.stats().pool.completed;
          const p = await own.pageBuffer('warmup', params);
          out.push({ body: p.body.toString(), frames: p.frames, frameBytes: p.frameBytes, read: p.logBytesRead, slices: own.stats().pool.completed - before });
        }
        return out;
      } finally {
        await own.close();
      }
    };
    try {
      await snapshotPagePath({ file, dir: join(dir, 'data') });
      const loaded = await preparePagePath(file);
      const written = await preparePagePath(join(dir, 'missing.bin'));
      const [a, b] = [await objects(loaded), await objects(written)];
      expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
      expect(a.size).toBeGreaterThanOrEqual(4);
      for (const [k, v] of a) expect(k.endsWith('.index.json') ? clockless(v) : v.equals(b.get(k)!), k).toEqual(k.endsWith('.index.json') ? clockless(b.get(k)!) : true);
      expect(await pagesOf(loaded)).toEqual(await pagesOf(written));
      // Not for this session (another plan), cut short, not a snapshot: written instead, as before.
      const bytes = readFileSync(file);
      const head = bytes.readUInt32LE(0);
      const otherPlan = Buffer.from(bytes.toString('latin1', 0, 4 + head).replace('"seed":5', '"seed":6'), 'latin1');
      for (const bad of [Buffer.concat([otherPlan, bytes.subarray(4 + head)]), bytes.subarray(0, bytes.length - 1), Buffer.from('not a snapshot')]) {
        writeFileSync(file, bad);
        expect(clockless((await (await preparePagePath(file)).readAll('sessions/index/warmup.index.json'))!)).toEqual(clockless((await written.readAll('sessions/index/warmup.index.json'))!));
        expect((await objects(await preparePagePath(file))).get('sessions/warmup.events')!.equals(b.get('sessions/warmup.events')!)).toBe(true);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('`npm run build` puts the snapshot in dist/, and a fresh process loads it without the generator or the writer', () => {
    const dist = resolve(import.meta.dirname, '..', 'dist');
    expect(existsSync(join(dist, 'main', 'warmup', 'page-path-session.bin')), 'dist/ is built by `npm test` (npm run build) before the tests run').toBe(true);
    const hook = 'data:text/javascript,' + encodeURIComponent('export async function load(u, c, n) { if (u.startsWith("file:")) process._rawDebug("loaded " + u); return n(u, c); }');
    const url = pathToFileURL(join(dist, 'main', 'warmup', 'page-path-warmup.js')).href;
    const r = spawnSync(process.execPath, ['--no-warnings', '--experimental-loader', hook, '--input-type=module', '-e', `const m = await import(${JSON.stringify(url)}); const s = await m.preparePagePath(); process._rawDebug('events ' + (await s.stat('sessions/warmup.events')).size);`], { encoding: 'utf8' });
    expect(r.stderr).toMatch(/events \d{5,}/);
    expect(r.stderr.split('\n').filter((l) => /\/(gen\/|session-writer)/.test(l))).toEqual([]);
  }, 60_000);

  it("the planner's warm-up runs until V8 says the planner is optimized, waiting out its compiles instead of running rounds; without an answer, its fixed rounds", async () => {
    // At start-up the planner's compiles queue behind the workers' decode loops on the shared compile
    // threads: the fixed rounds ran mostly unoptimized meanwhile, CPU the workers needed.
    // V8's answer per check (three functions asked each time): not yet, compiling, optimized.
    let calls = 0;
    const answers: Tier[] = ['not-optimized', 'compiling', 'compiling', 'optimized'];
    const tier = (): Tier => answers[Math.min(Math.floor(calls++ / 3), answers.length - 1)] as Tier;
    // Three rounds before asking, one more for the 'not yet', none while compiling, none once optimized.
    expect(await warmUpPlanner(30, false, tier)).toBe(4);
    expect(await warmUpPlanner(30, false, () => null)).toBe(30);
    expect(await warmUpPlanner(12, false, () => 'not-optimized')).toBe(12);
  }, 60_000);

  it("the planner's pass after the page path's rounds wait on V8 for its walk only (walkPage: the rounds inline `fields` into it and seldom compile it on its own); the plan check is asked about once, after them", async () => {
    // Traced in real starts: watching `fields` too, that pass ran all its 30 rounds (~70 ms of the
    // main thread on the path to ready) with the walk optimized after 1-2 (docs/benchmarks.md).
    const asked = new Set<unknown>();
    const tier = (f: unknown): Tier => {
      asked.add(f);
      return f === walkPage ? 'optimized' : 'not-optimized';
    };
    // Three rounds (its feedback over both walks and every page shape), then optimized.
    expect(await warmUpPlanner(12, false, tier, true)).toBe(3);
    // After the rounds, once (no round waits on them): the plan check's loop, the walk's span() and
    // the index lines' entry(), asked optimized when they are not (called once a page or once in 32
    // lines, V8 compiled them on a helper thread beside the second or third real page).
    expect([...asked]).toEqual([walkPage, spanFits, ...WALK_ONCE_A_PAGE, INDEX_ENTRY]);
    // A pass without the page path (warm-up.ts) waits for both.
    expect(await warmUpPlanner(12, false, tier)).toBe(12);
  }, 60_000);

  it("a walk deoptimized by the pass's last, tiny walk is compiled again before the pass ends (not beside the first real page); one still optimized is left alone", async () => {
    // V8's answer for walkPage: optimized when the rounds ask, then `after` when asked after the tiny walk.
    const run = async (after: Tier): Promise<unknown[]> => {
      const asked: unknown[] = [];
      let walkAsks = 0;
      const tier = (f: unknown): Tier => (f === walkPage ? (walkAsks++ === 0 ? 'optimized' : after) : 'optimized');
      const optimize = (f: unknown): boolean => {
        asked.push(f);
        return true;
      };
      expect(await warmUpPlanner(12, false, tier, true, optimize)).toBe(3);
      return asked;
    };
    expect(await run('not-optimized')).toEqual([walkPage]);
    expect(await run('optimized')).toEqual([]);
    // Being compiled already: nothing asked (V8 is at it).
    expect(await run('compiling')).toEqual([]);
  }, 60_000);
});
