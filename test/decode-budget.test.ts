/**
 * The stored bytes of pages being built at once are bounded
 * (store/decode-budget.ts): a page waits for room before its slices are
 * queued, one page is always let in, arrival order is kept, and a caller
 * that leaves while it waits leaves the queue. Through a store: concurrent
 * pages are built within the budget and still equal the reference's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSession } from '../src/main/gen/generate.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { DecodeBudget } from '../src/main/store/decode-budget.js';
import { openStore } from '../src/main/store.js';

/** Whether `p` has settled (after the microtasks queued so far have run). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('DecodeBudget', () => {
  it('lets pages in while their bytes fit, and the next ones as room is given back', async () => {
    const b = new DecodeBudget(10);
    const r1 = await b.acquire(6);
    const second = b.acquire(6);
    expect(await settled(second)).toBe(false);
    expect(b.stats()).toMatchObject({ bytes: 6, pages: 1, waiting: 1 });
    r1();
    const r2 = await second;
    expect(b.stats()).toMatchObject({ bytes: 6, pages: 1, waiting: 0 });
    r2();
    expect(b.stats()).toMatchObject({ bytes: 0, pages: 0, peakBytes: 6 });
  });

  it('builds a page larger than the budget alone, never refusing it', async () => {
    const b = new DecodeBudget(10);
    const big = await b.acquire(100);
    const small = b.acquire(1);
    expect(await settled(small)).toBe(false);
    big();
    (await small)();
    const r = b.acquire(100);
    expect(await settled(r)).toBe(true);
    (await r)();
  });

  it('keeps arrival order: a small page does not pass a large one waiting at the head', async () => {
    const b = new DecodeBudget(10);
    const r1 = await b.acquire(5);
    const order: string[] = [];
    const large = b.acquire(8).then((r) => (order.push('large'), r));
    const small = b.acquire(1).then((r) => (order.push('small'), r));
    expect(await settled(small)).toBe(false);
    r1();
    // 8 + 1 fit together: the small one follows the large one at once.
    const [rl, rs] = await Promise.all([large, small]);
    expect(order).toEqual(['large', 'small']);
    rl();
    rs();
  });

  it('drops a waiter whose signal aborts, and lets the ones behind it in', async () => {
    const b = new DecodeBudget(10);
    const r1 = await b.acquire(4);
    const ac = new AbortController();
    const gone = b.acquire(8, ac.signal);
    const behind = b.acquire(2);
    expect(await settled(behind)).toBe(false);
    ac.abort(new Error('client left'));
    await expect(gone).rejects.toThrow('client left');
    // With the aborted head gone, 4 + 2 fit.
    expect(await settled(behind)).toBe(true);
    expect(b.stats()).toMatchObject({ bytes: 6, pages: 2, waiting: 0 });
    r1();
    (await behind)();
    expect(b.stats()).toMatchObject({ bytes: 0, pages: 0 });
  });

  it('refuses at once for a signal already aborted, and counts a release once', async () => {
    const b = new DecodeBudget(10);
    const ac = new AbortController();
    ac.abort(new Error('gone'));
    await expect(b.acquire(1, ac.signal)).rejects.toThrow('gone');
    const r = await b.acquire(3);
    r();
    r();
    expect(b.stats()).toMatchObject({ bytes: 0, pages: 0 });
  });
});

describe('a store builds concurrent pages within its decode budget', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sp-budget-'));
    await generateSession(dir, { id: 'b', events: 40_000, tailEvents: 8_000, seed: 5 });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function concurrentTails(budget: number, n: number) {
    const store = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0, decodeBudgetBytes: budget, warmUp: { jit: false, pagePath: false } });
    try {
      const pages = await Promise.all(Array.from({ length: n }, () => store.pageBuffer('b', { maxMessages: 20 })));
      return { pages, building: store.stats().building };
    } finally {
      await store.close();
    }
  }

  it('one page at a time when the budget holds one, every page exact', async () => {
    const expected = referencePage(await readWholeLog(join(dir, 'sessions', 'b.events')), 'b', { maxMessages: 20 });
    const { pages, building } = await concurrentTails(1, 6);
    const span = pages[0].frameBytes;
    expect(span).toBeGreaterThan(10_000);
    for (const p of pages) expect(JSON.parse(p.body.toString('utf8'))).toEqual(expected);
    expect(building.peakBytes).toBe(span);
    expect(building).toMatchObject({ bytes: 0, pages: 0, waiting: 0 });
  });

  it('all at once when the budget holds them all', async () => {
    const { pages, building } = await concurrentTails(1 << 30, 6);
    expect(building.peakBytes).toBe(6 * pages[0].frameBytes);
  });
});
