/**
 * Pages compressed on the page workers (issue 12): every page asked in a
 * coding decodes to exactly the identity page, on random logs (fast-check)
 * and every dsh fixture, per coding (zlib, fzstd, the gzip and zstd CLIs),
 * through a store cutting pages into many slices (edge runs merged across
 * them, results in place and copied) with every section coded by its worker,
 * and through a store with the default threshold; compressed forms live in
 * the prepared-page cache, counted in its budget.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PageParams, SessionEvent } from '../src/core/types.js';
import { LARGE_BODY, type OutputCoding, type PageEncoding } from '../src/main/page-coding.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { decoders } from './helpers/decoders.js';
import { dshFixtures } from './helpers/fixtures.js';
import { fixtureEvents, pageQueriesArb, queryParams } from './helpers/page-checks.js';
import { randomLogArb, writeRandomLog, type BatchSpec } from './helpers/random-log.js';

const LEVELS = { brotliQuality: 4, gzipLevel: 6, zstdLevel: 6 };
const CODINGS: PageEncoding[] = ['zstd', 'gzip', 'br'];
const as = (encoding: PageEncoding): OutputCoding => ({ encoding, levels: LEVELS });

let dir: string;
/** Default threshold, no page cache: every request builds its page. */
let plain: PagerStore;
/** Every page cut into up to 4 slices, every section coded by its worker, results in place. */
let splitting: PagerStore;
/** The same, but results copied (not in place). */
let copying: PagerStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-wcomp-'));
  plain = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0, warmUp: { jit: false } });
  splitting = await openStore({ dataDir: dir, workers: 4, splitCost: 1, inPlaceBytes: 0, pageCacheBytes: 0, minCodedSection: 1, warmUp: { jit: false } });
  copying = await openStore({ dataDir: dir, workers: 3, splitCost: 1, inPlaceBytes: 1 << 30, pageCacheBytes: 0, minCodedSection: 1, warmUp: { jit: false } });
});

afterAll(async () => {
  await plain?.close();
  await splitting?.close();
  await copying?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The page in every coding, through `s`, decodes to the identity page; `cliToo`: the CLI decoders too. */
async function expectDecodes(s: PagerStore, id: string, params: PageParams, cliToo = false): Promise<void> {
  const identity = (await s.pageBuffer(id, params)).body;
  for (const encoding of CODINGS) {
    const pb = await s.pageBuffer(id, params, undefined, as(encoding));
    expect(pb.body.equals(identity)).toBe(true);
    expect(pb.encoded?.encoding).toBe(encoding);
    const coded = pb.encoded?.body as Buffer;
    for (const d of decoders(encoding, cliToo)) expect(d.decode(coded).equals(identity), `${encoding} by ${d.name}, ${JSON.stringify(params)}`).toBe(true);
  }
}

describe('pages compressed by the workers decode to the identity page', () => {
  let n = 0;
  it('on random logs, every coding, every store', async () => {
    await fc.assert(
      fc.asyncProperty(
        randomLogArb(),
        pageQueriesArb({ before: true, maxBytes: false, maxMessages: 'sometimes', maxLength: 3 }),
        async (spec, queries) => {
          const id = `rand-${n++}`;
          await writeRandomLog(spec, { dataDir: dir, id });
          const last = spec.events.length - 1;
          for (const q of queries) {
            const params = queryParams(q, last);
            for (const s of [plain, splitting, copying]) await expectDecodes(s, id, params);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  const files = dshFixtures();
  const batchings: BatchSpec[][] = [[{ size: 7, format: 'jsonl' }], [{ size: 3, format: 'binary' }, { size: 40, format: 'jsonl' }], [{ size: 100000, format: 'binary' }]];
  it.each(files.map((f, i) => [basename(f), f, i] as const))('fixture %s, every coding, the CLI decoders too', async (_name, file, i) => {
    const { header, events } = fixtureEvents(file);
    const id = `fx-${i}`;
    await writeRandomLog({ events, batches: batchings[i % batchings.length] as BatchSpec[] }, { dataDir: dir, id, header });
    await expectDecodes(plain, id, {}, true);
    await expectDecodes(splitting, id, { maxMessages: 1000 }, i % 4 === 0);
    await expectDecodes(copying, id, { maxMessages: 3 });
  });

  it('a large tail page (an in-flight message of 60,000 deltas) is coded by the workers at the large-body levels', async () => {
    const events: SessionEvent[] = [{ type: 'user/message', seq: 0, time: 1, data: { text: 'go' } } as SessionEvent];
    for (let k = 1; k <= 60_000; k++) events.push({ type: 'assistant/chunk', seq: k, time: 1 + k, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: ` tok${k % 977}` } } } as SessionEvent);
    await writeRandomLog({ events, batches: [{ size: 5000, format: 'jsonl' }] }, { dataDir: dir, id: 'big' });
    const big = await openStore({ dataDir: dir, workers: 2, splitCost: 64 * 1024, pageCacheBytes: 0, warmUp: { jit: false } });
    try {
      const pb = await big.pageBuffer('big', {}, undefined, as('gzip'));
      expect(pb.body.length).toBeGreaterThan(LARGE_BODY / 4);
      // The workers compressed: the slowest one's time is reported.
      expect(pb.timing?.code).toBeGreaterThan(0);
      for (const encoding of CODINGS) {
        const coded = (await big.pageBuffer('big', {}, undefined, as(encoding))).encoded?.body as Buffer;
        expect(coded.length).toBeLessThan(pb.body.length / 3);
        for (const d of decoders(encoding)) expect(d.decode(coded).equals(pb.body), `${encoding} by ${d.name}`).toBe(true);
      }
    } finally {
      await big.close();
    }
  });
});

describe('a page of one slice is one coded piece', () => {
  it('written whole and compressed in one call where it was built (inline or on a worker): pieces are the body', async () => {
    await writeRandomLog({ events: Array.from({ length: 300 }, (_, k) => ({ type: k % 10 === 0 ? 'user/message' : 'tool/result', seq: k, time: k, data: { text: `out ${k} `.repeat(15) } }) as SessionEvent), batches: [{ size: 30, format: 'jsonl' }] }, { dataDir: dir, id: 'one-slice' });
    // Two workers, no page worth cutting: each on a worker. One worker, warmed up: lone pages decoded on the calling thread.
    const uncut = await openStore({ dataDir: dir, workers: 2, splitCost: 1 << 30, pageCacheBytes: 0, warmUp: { jit: false } });
    const warm = await openStore({ dataDir: dir, workers: 1, pageCacheBytes: 0 });
    try {
      for (const s of [uncut, warm]) {
        for (const params of [{}, { maxMessages: 50, throughSeq: 200 }, { maxMessages: 1 }]) {
          const identity = (await s.pageBuffer('one-slice', params)).body;
          for (const encoding of ['zstd', 'gzip'] as const) {
            const pb = await s.pageBuffer('one-slice', params, undefined, as(encoding));
            expect(pb.encoded?.pieces, `${encoding} ${JSON.stringify(params)}`).toEqual([identity.length]);
            for (const d of decoders(encoding)) expect(d.decode(pb.encoded?.body as Buffer).equals(identity), d.name).toBe(true);
          }
        }
      }
    } finally {
      await uncut.close();
      await warm.close();
    }
  });

  it('cut into slices, the pieces are the sections and the runs between them', async () => {
    const pb = await splitting.pageBuffer('one-slice', {}, undefined, as('zstd'));
    expect(pb.encoded?.pieces?.length).toBeGreaterThan(1);
    expect(pb.encoded?.pieces?.reduce((a, b) => a + b, 0)).toBe(pb.body.length);
  });
});

describe('compressed forms in the prepared-page cache', () => {
  it('a prepared page asked in another coding is compressed on the pool, kept with it and counted in the budget', async () => {
    await writeRandomLog({ events: Array.from({ length: 400 }, (_, k) => ({ type: k % 10 === 0 ? 'user/message' : 'tool/result', seq: k, time: k, data: { text: `result ${k} `.repeat(20) } }) as SessionEvent), batches: [{ size: 50, format: 'jsonl' }] }, { dataDir: dir, id: 'cached' });
    const s = await openStore({ dataDir: dir, workers: 2, warmUp: { jit: false } });
    try {
      const params = { maxMessages: 1000 };
      const first = await s.pageBuffer('cached', params, undefined, as('zstd'));
      const body = first.body;
      const stats = () => s.stats().cache;
      // Kept with its zstd form: both counted.
      expect(stats().pageBytes).toBe(body.length + (first.encoded?.body.length as number));
      const again = await s.pageBuffer('cached', params, undefined, as('zstd'));
      expect(again.encoded?.body).toBe(first.encoded?.body);
      expect(again.timing).toBeUndefined();
      // gzip: compressed from the prepared body on the pool, then kept too.
      const gz = await s.pageBuffer('cached', params, undefined, as('gzip'));
      for (const d of decoders('gzip')) expect(d.decode(gz.encoded?.body as Buffer).equals(body), d.name).toBe(true);
      expect(stats().pageBytes).toBe(body.length + (first.encoded?.body.length as number) + (gz.encoded?.body.length as number));
      expect((await s.pageBuffer('cached', params, undefined, as('gzip'))).encoded?.body).toBe(gz.encoded?.body);
      // Identity from the same entry.
      expect((await s.pageBuffer('cached', params)).body).toBe(body);
    } finally {
      await s.close();
    }
  });

  it('encodeBody: any body, compressed on the pool in pieces, decodes to itself', async () => {
    const body = Buffer.from(JSON.stringify({ sessions: Array.from({ length: 20000 }, (_, i) => ({ id: `s${i}`, status: 'ok', title: `title ${i % 91}` })) }));
    for (const encoding of CODINGS) {
      const coded = await plain.encodeBody(body, as(encoding));
      for (const d of decoders(encoding)) expect(d.decode(coded).equals(body), `${encoding} by ${d.name}`).toBe(true);
    }
  });
});
