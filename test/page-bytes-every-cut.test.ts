/**
 * One page, one body, however it was cut (docs/decisions.md, "A page's bytes
 * do not depend on how it was cut"). A page's strong ETag names its
 * parameters and the code that wrote it (server/page-caching.ts), so every
 * way the store can build the page must give the same bytes: cut into 1-4
 * slices at any splitCost, written whole by its one worker (alone, or under
 * load: more pages in flight than workers), assembled from one slice, decoded
 * on the calling thread (inline pool) or partly there (small-slice pool),
 * served from the prepared-page cache, read through a backend the workers
 * cannot reach (memory: the bytes travel with the tasks), and decoded back
 * from the gzip, zstd and br forms. On hand-formatted logs (`\u` escapes,
 * `\/`, Python-style separators) whose short runs (1-2 members, written as
 * events) fall inside slices and at their edges, stored as JSONL lines kept
 * byte for byte, as binary frames, and both in one log.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { decompress as fzstdDecompress } from 'fzstd';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PageParams, SessionEvent } from '../src/core/types.js';
import { importSession } from '../src/main/maintenance/import.js';
import type { OutputCoding } from '../src/main/page-coding.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { MemoryBackend } from '../src/storage/memory/memory-backend.js';
import type { StoreOptions } from '../src/main/store/options.js';
import type { PageBuffer } from '../src/main/store-types.js';
import { handFormattedLog, handFormattedLogArb } from './helpers/hand-formatted-log.js';

const quiet = { warmUp: { jit: false }, pageCacheBytes: 0 } as const;
/** Every way to cut a page the store has: slices per worker count and splitCost, whole pages, inline decoding. */
const CUTS: Record<string, StoreOptions> = {
  'one worker, written whole': { ...quiet, workers: 1 },
  'one worker, one slice assembled': { ...quiet, workers: 1, bodyPool: { minBytes: 1 } },
  'two workers, splitCost 1': { ...quiet, workers: 2, splitCost: 1 },
  'three workers, splitCost 1, results in place': { ...quiet, workers: 3, splitCost: 1, inPlaceBytes: 0 },
  'four workers, splitCost 1': { ...quiet, workers: 4, splitCost: 1 },
  'four workers, splitCost 100 Ki': { ...quiet, workers: 4, splitCost: 100 * 1024 },
  'four workers, splitCost 300 Ki': { ...quiet, workers: 4, splitCost: 300 * 1024 },
  'four workers, default splitCost': { ...quiet, workers: 4 },
  'four workers, whole page by splitCost': { ...quiet, workers: 4, splitCost: 2 ** 40 },
  'in thread (inline pool)': { ...quiet, inThread: true, inPlaceBytes: 0 },
  'small slices on the main thread': { ...quiet, workers: 2, splitCost: 1, inlineSliceBytes: 1 << 20 },
  'prepared-page cache': { warmUp: { jit: false }, workers: 2, splitCost: 1 },
};

const GZIP: OutputCoding = { encoding: 'gzip', levels: { gzipLevel: 6, brotliQuality: 4 } };
const ZSTD: OutputCoding = { encoding: 'zstd', levels: { gzipLevel: 6, brotliQuality: 4, zstdLevel: 3 } };
const BR: OutputCoding = { encoding: 'br', levels: { gzipLevel: 6, brotliQuality: 4 } };

let dir: string;
const stores = new Map<string, PagerStore>();
/** The same sessions on a backend the workers cannot read: each slice's bytes travel with its task. */
const memory = new MemoryBackend();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-bytes-'));
  mkdirSync(join(dir, 'in'));
  for (const [name, opts] of Object.entries(CUTS)) stores.set(name, await openStore({ dataDir: dir, ...opts }));
  stores.set('memory backend, three workers, splitCost 1', await openStore({ storage: memory, ...quiet, workers: 3, splitCost: 1 }));
  // Small slices go inline only after the page path's warm-up (small-slice-pool.ts).
  await stores.get('small slices on the main thread')?.warmUp();
}, 120_000);

afterAll(async () => {
  for (const s of stores.values()) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The page's result buffer holds the header and trailer after the page: the page is its first bytes (page-service.ts). */
const writtenWhole = (p: PageBuffer) => p.body.byteOffset === 0 && p.body.buffer.byteLength > p.body.length;

/** Import the log as JSONL (lines kept), as binary frames, and as JSONL followed by binary appends. */
async function importAll(items: Parameters<typeof handFormattedLog>[0], id: string): Promise<{ ids: string[]; events: SessionEvent[] }> {
  const { text, events } = handFormattedLog(items, id);
  const file = join(dir, 'in', `${id}.jsonl`);
  writeFileSync(file, text);
  // Half the log as JSONL lines, the rest appended as binary frames by the writer.
  const lines = text.split('\n').filter(Boolean);
  const half = Math.floor(lines.length / 2);
  const headPart = join(dir, 'in', `${id}-mix.jsonl`);
  writeFileSync(headPart, `${lines.slice(0, half).join('\n')}\n`);
  for (const target of [dir, memory]) {
    const r = await importSession(target, file, { id });
    expect(r.verbatim).toBe(true);
    await importSession(target, file, { id: `${id}-bin`, format: 'binary' });
    await importSession(target, headPart, { id: `${id}-mix` });
    const writer = await openStore({ ...(target === dir ? { dataDir: dir } : { storage: memory }), workers: 1, warmUp: { jit: false, pagePath: false }, format: 'binary' });
    try {
      const nextSeq = await writer.nextSeq(`${id}-mix`);
      const rest = events.slice(nextSeq);
      for (let at = 0; at < rest.length; at += 7) await writer.append(`${id}-mix`, rest.slice(at, at + 7));
    } finally {
      await writer.close();
    }
  }
  return { ids: [id, `${id}-bin`, `${id}-mix`], events };
}

/**
 * The page `params` of session `id` from every store: one body, byte for byte (also under load,
 * from the cache, and decoded from its gzip, zstd and br forms), deep-equal to the reference reader's.
 */
async function expectOneBody(id: string, params: PageParams, events: readonly SessionEvent[]): Promise<void> {
  const log = await readWholeLog(join(dir, 'sessions', `${id}.events`));
  expect(log.events).toEqual(events);
  const bodies = new Map<string, Buffer>();
  for (const [name, s] of stores) {
    const p = await s.pageBuffer(id, params);
    bodies.set(name, Buffer.from(p.body));
    p.release?.();
  }
  // Under load: more pages in flight than workers, so each page is one slice its worker writes whole.
  for (const name of ['two workers, splitCost 1', 'four workers, splitCost 1']) {
    const s = stores.get(name) as PagerStore;
    const pages = await Promise.all(Array.from({ length: 6 }, () => s.pageBuffer(id, params)));
    for (const [i, p] of pages.entries()) {
      if (p.frameBytes < 200_000) expect(writtenWhole(p)).toBe(true);
      bodies.set(`${name}, under load #${i}`, Buffer.from(p.body));
      p.release?.();
    }
  }
  // A prepared-page cache hit, and the coded forms (built in their coding, and from the cached body).
  const cached = stores.get('prepared-page cache') as PagerStore;
  // Kept once built twice (page-cache.ts: the newest page at once): at most the third is a hit.
  let hit = await cached.pageBuffer(id, params);
  for (let i = 0; i < 2 && hit.timing !== undefined; i++) {
    bodies.set(`prepared-page cache, built #${i}`, Buffer.from(hit.body));
    hit = await cached.pageBuffer(id, params);
  }
  expect(hit.timing).toBeUndefined();
  bodies.set('prepared-page cache, hit', Buffer.from(hit.body));
  for (const [name, s] of [['two workers, splitCost 1', stores.get('two workers, splitCost 1')], ['prepared-page cache', cached]] as const) {
    const gz = await (s as PagerStore).pageBuffer(id, params, undefined, GZIP);
    bodies.set(`${name}, gzip`, gunzipSync(gz.encoded?.body as Buffer));
    const zs = await (s as PagerStore).pageBuffer(id, params, undefined, ZSTD);
    bodies.set(`${name}, zstd`, Buffer.from(fzstdDecompress(zs.encoded?.body as Buffer)));
    const br = await (s as PagerStore).pageBuffer(id, params, undefined, BR);
    bodies.set(`${name}, br`, brotliDecompressSync(br.encoded?.body as Buffer));
  }
  const reference = bodies.get('one worker, written whole') as Buffer;
  expect(JSON.parse(reference.toString('utf8'))).toEqual(referencePage(log, id, params));
  const differing = [...bodies].filter(([, b]) => !b.equals(reference)).map(([name]) => name);
  expect(differing, `${id} ${JSON.stringify(params)}`).toEqual([]);
}

describe('a page has one body however it is cut', () => {
  it('on a hand-formatted log with every short-run position', async () => {
    // A fixed log: 400 records cycling through every kind, style and row length.
    const [items] = fc.sample(handFormattedLogArb(400, 400), { seed: 16, numRuns: 1 });
    const { ids, events } = await importAll(items as NonNullable<typeof items>, 'fixed');
    const last = events.length - 1;
    for (const id of ids) {
      for (const params of [{}, { maxMessages: 1000 }, { maxMessages: 7 }, { throughSeq: Math.floor(last / 2), maxMessages: 1000 }, { throughSeq: last, beforeSeq: Math.floor(last / 3) }]) {
        await expectOneBody(id, params, events);
      }
    }
    // Projections make pages faster, never different: the binary session's (imported frames are
    // the writer's, so they have checksum and row records) removed, the same bytes from the log alone.
    const s = stores.get('four workers, splitCost 1') as PagerStore;
    const before = await Promise.all([{}, { maxMessages: 1000 }].map(async (q) => Buffer.from((await s.pageBuffer('fixed-bin', q)).body)));
    rmSync(join(dir, 'sessions/index/fixed-bin'), { recursive: true, force: true });
    for (const [i, q] of [{}, { maxMessages: 1000 }].entries()) expect((await s.pageBuffer('fixed-bin', q)).body.equals(before[i] as Buffer)).toBe(true);
  }, 240_000);

  it('on random hand-formatted logs and random pages', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(handFormattedLogArb(60, 260), fc.integer({ min: 0, max: 1 << 30 }), fc.integer({ min: 0, max: 1 << 30 }), fc.constantFrom(3, 20, 1000), async (items, through, before, maxMessages) => {
        const { ids, events } = await importAll(items, `rand-${n++}`);
        const last = events.length - 1;
        const throughSeq = through % (last + 1);
        const params: PageParams = before % 3 === 0 ? { maxMessages } : { throughSeq, beforeSeq: (before % (throughSeq + 1)) + 1, maxMessages };
        for (const id of ids) await expectOneBody(id, params, events);
      }),
      { numRuns: 20, endOnFailure: true },
    );
  }, 480_000);
});
