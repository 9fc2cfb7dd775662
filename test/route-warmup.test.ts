/**
 * The page route's warm-up before ready (server/route-warmup.ts): the recent
 * sessions are opened through the route (304, nothing built or read), so the
 * first real page reuses that open, after checking it by the objects' stamp;
 * the warm-up's requests are neither counted nor logged, and a client
 * cannot pass for one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../src/main/server/index.js';
import { recentSessions, warmPageRoute } from '../src/main/server/route-warmup.js';
import { openStore } from '../src/main/store.js';
import type { CatalogEntry, Store } from '../src/main/store-types.js';
import { makeEvents, seedSession, tempStore, type TempStore } from './server-helpers.js';

const TOKEN = 'route-warmup-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let ts: TempStore;
/** A second store over the same files, as a fresh `serve` opens them (no writer of its own). */
let reader: Store;
let app: FastifyInstance;

beforeAll(async () => {
  ts = await tempStore(1);
  for (const id of ['old', 'mid', 'new']) await seedSession(ts.store, id, 300, 100);
  // Updated last: the one opened ahead below (limit 1).
  await ts.store.append('new', makeEvents(300, 10));
  reader = await openStore({ dataDir: ts.dir, workers: 1 });
  app = buildServer(reader, { token: TOKEN, maxEventLoopLagMs: 0 });
  await app.ready();
});

afterAll(async () => {
  await app.close();
  await reader.close();
  await ts.cleanup();
});

async function pageMetrics(): Promise<string> {
  const text = (await app.inject({ url: '/metrics', headers: AUTH })).body;
  return text.split('\n').filter((l) => l.includes('route="/v1/sessions/:id/page"')).join('\n');
}

describe('warmPageRoute', () => {
  it('opens the most recent sessions through the route without building a page, and the first page reuses the open', async () => {
    expect(await warmPageRoute(app, reader, TOKEN, 1)).toBe(1);
    expect(reader.stats().pagesServed).toBe(0);
    // Not traffic: no request counted, no 304 counted.
    expect(await pageMetrics()).toBe('');

    const warmed = reader.stats().cache;
    const a = await app.inject({ url: '/v1/sessions/new/page?maxMessages=5', headers: AUTH });
    expect(a.statusCode).toBe(200);
    const afterWarmed = reader.stats().cache;
    expect(afterWarmed.misses).toBe(warmed.misses);
    expect(afterWarmed.hits).toBeGreaterThan(warmed.hits);

    // A session not opened ahead pays its open on its first page.
    const b = await app.inject({ url: '/v1/sessions/old/page?maxMessages=5', headers: AUTH });
    expect(b.statusCode).toBe(200);
    expect(reader.stats().cache.misses).toBe(afterWarmed.misses + 1);
    expect(await pageMetrics()).toMatch(/status_code="200"/);
  });

  it('counts a request that merely names the warm-up header', async () => {
    const before = await pageMetrics();
    const r = await app.inject({ url: '/v1/sessions/mid/page?maxMessages=1', headers: { ...AUTH, 'if-none-match': '*', 'x-session-pager-warmup': 'guess' } });
    expect(r.statusCode).toBe(304);
    const after = await pageMetrics();
    expect(after).not.toBe(before);
    expect(after).toMatch(/session_pager_not_modified_total\{route="\/v1\/sessions\/:id\/page"\} 1/);
  });
});

describe('recentSessions', () => {
  const entry = (id: string, updatedAt: number | null, status: CatalogEntry['status'] = 'ok') => ({ id, updatedAt, status }) as CatalogEntry;
  it('takes the latest updated first, those without a time last, and skips sessions pages cannot serve', () => {
    const catalog = [entry('a', 10), entry('b', null), entry('c', 30), entry('d', 40, 'repair_required'), entry('e', 20, 'degraded')];
    expect(recentSessions(catalog, 3)).toEqual(['c', 'e', 'a']);
    expect(recentSessions(catalog)).toEqual(['c', 'e', 'a', 'b']);
  });
});
