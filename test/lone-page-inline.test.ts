/**
 * Which pages have their small slices decoded on the main thread (store.ts,
 * main/small-slice-pool.ts): a lone page, not one of several in flight, and
 * not while the server in front of the store has more than one client
 * active (a request in flight or one lately; it handles each request to its end before reading the next,
 * so pages in flight alone would not show the clients waiting: at 256
 * connections every page went inline and the server ran on one thread).
 * The pages are the same bytes either way.
 */
import { request, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildServer } from '../src/main/server/index.js';
import { CLIENT_IDLE_MS } from '../src/main/server/active-clients.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { seedSession } from './server-helpers.js';

let dir: string;
let store: PagerStore;
/** Slices the store decoded on this thread so far. */
const inline = () => (store as unknown as { pool: { inline: number } }).pool.inline;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-lone-'));
  // No prepared-page cache: every page here is decoded.
  store = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0 });
  await seedSession(store, 's', 3000);
  // Small slices go inline only once the page path's warm-up loaded the decoder here.
  await store.warmUp();
}, 120_000);

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('small slices decoded on the main thread', () => {
  it('for a lone page, not for pages in flight together, nor with two clients connected', async () => {
    const before = inline();
    const lone = await store.pageBuffer('s', { maxMessages: 20 });
    expect(inline()).toBeGreaterThan(before);

    const n = inline();
    const together = await Promise.all([0, 1, 2].map((k) => store.pageBuffer('s', { throughSeq: 1000 + 500 * k, maxMessages: 20 })));
    expect(inline()).toBe(n);

    store.setClientCount(() => 2);
    const crowded = await store.pageBuffer('s', { maxMessages: 20 });
    expect(inline()).toBe(n);
    expect(crowded.body.equals(lone.body)).toBe(true);
    store.setClientCount(() => 1);
    await store.pageBuffer('s', { throughSeq: 1500, maxMessages: 20 });
    expect(inline()).toBeGreaterThan(n);
    expect(together.every((p) => p.body.length > 0)).toBe(true);
  });

  it('a lone page is one slice, decoded here and written whole, up to what its cut slices would put here together', async () => {
    // Slices of ~4 KiB of decode cost: every page here would be cut in two for the workers.
    const cut = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0, splitCost: 4096, inlineSliceBytes: 0 });
    const asks = [{ maxMessages: 40 }, { throughSeq: 1200, maxMessages: 40 }, { throughSeq: 2100, maxMessages: 60 }];
    const reference = [];
    for (const q of asks) reference.push(await cut.pageBuffer('s', q));
    await cut.close();
    // A slice bound over half the largest page's stored bytes: each page is more than one slice's
    // worth for some, but not more than what its two cut slices (each under the bound) would be.
    const largest = Math.max(...reference.map((p) => p.frameBytes));
    const bound = Math.ceil(largest * 0.6);
    const lone = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0, splitCost: 4096, inlineSliceBytes: bound });
    const inlineOf = () => (lone as unknown as { pool: { inline: number } }).pool.inline;
    try {
      await lone.warmUp();
      for (const [i, q] of asks.entries()) {
        const n = inlineOf();
        const page = await lone.pageBuffer('s', q);
        // One slice (cut, both halves would have been decoded here: two), written whole by the
        // task code into its result, of which the body is the first bytes.
        expect(inlineOf()).toBe(n + 1);
        expect(page.body.byteOffset === 0 && page.body.buffer.byteLength > page.body.length).toBe(true);
        expect(page.body.equals(reference[i]!.body)).toBe(true);
      }
      expect(reference.some((p) => p.frameBytes > bound)).toBe(true);
      // Not alone: cut for the workers as before, none of it here.
      const n = inlineOf();
      const together = await Promise.all(asks.map((q) => lone.pageBuffer('s', q)));
      expect(inlineOf()).toBe(n);
      for (const [i, p] of together.entries()) expect(p.body.equals(reference[i]!.body)).toBe(true);
    } finally {
      await lone.close();
    }
  }, 120_000);

  it('the server tells the store how many clients are active: in flight, or idle under CLIENT_IDLE_MS', async () => {
    const app = buildServer(store, { logger: false });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const agents = [new Agent({ keepAlive: true }), new Agent({ keepAlive: true })];
    const get = (agent: Agent) =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/v1/sessions/s/page?maxMessages=20', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const n0 = inline();
      expect(await get(agents[0]!)).toBe(200);
      expect(inline()).toBeGreaterThan(n0);
      // A second client connected (its keep-alive connection stays open): no page goes inline.
      expect(await get(agents[1]!)).toBe(200);
      const n1 = inline();
      expect(await get(agents[0]!)).toBe(200);
      expect(await get(agents[1]!)).toBe(200);
      expect(inline()).toBe(n1);
      // The second one idle past CLIENT_IDLE_MS, its connection still open (a pooled keep-alive
      // connection): it no longer counts, and the lone client's pages go inline again.
      await new Promise((r) => setTimeout(r, CLIENT_IDLE_MS + 100));
      expect(Object.values(agents[1]!.freeSockets).flat().length).toBe(1);
      expect(await get(agents[0]!)).toBe(200);
      const n2 = inline();
      expect(n2).toBeGreaterThan(n1);
      // Active again: it counts again.
      expect(await get(agents[1]!)).toBe(200);
      expect(await get(agents[0]!)).toBe(200);
      expect(inline()).toBe(n2);
      // Gone: the lone client's pages go inline at once.
      agents[1]!.destroy();
      await new Promise((r) => setTimeout(r, 50));
      expect(await get(agents[0]!)).toBe(200);
      expect(inline()).toBeGreaterThan(n2);
    } finally {
      for (const a of agents) a.destroy();
      await app.close();
    }
  });
});
