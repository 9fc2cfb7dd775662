/**
 * HTTP caching of pages: strong ETags per content coding, immutable pinned
 * pages, revalidated unpinned ones, 304 on If-None-Match without the page
 * being built (the store is never asked for it), Vary on every page.
 */
import { promises as fsp } from 'node:fs';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer, type ServerOptions } from '../src/main/server/index.js';
import { noneMatch } from '../src/main/server/page-caching.js';
import { sessionPaths } from '../src/main/paths.js';
import { openStore } from '../src/main/store.js';
import type { Store } from '../src/main/store-types.js';
import { makeEvents, seedSession, tempStore, type TempStore } from './server-helpers.js';

const TOKEN = 'caching-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const IMMUTABLE = 'private, max-age=31536000, immutable';

let ts: TempStore;
const apps: FastifyInstance[] = [];
/** pageBuffer calls that reached the store. */
let built = 0;

/** `store` with some of its methods replaced (the others bound to it). */
function replacing(store: Store, methods: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, prop) {
      if (Object.hasOwn(methods, prop)) return methods[prop as keyof Store];
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function counting(store: Store): Store {
  return replacing(store, {
    pageBuffer: (...args: Parameters<Store['pageBuffer']>) => {
      built++;
      return store.pageBuffer(...args);
    },
  });
}

function make(store: Store, opts: ServerOptions = {}): FastifyInstance {
  const a = buildServer(counting(store), { token: TOKEN, maxEventLoopLagMs: 0, ...opts });
  apps.push(a);
  return a;
}

async function notModifiedCount(a: FastifyInstance): Promise<number> {
  const text = (await a.inject({ url: '/metrics', headers: AUTH })).body;
  return Number(/session_pager_not_modified_total\{route="\/v1\/sessions\/:id\/page"\} (\d+)/.exec(text)?.[1] ?? 0);
}

beforeAll(async () => {
  ts = await tempStore(1);
  await seedSession(ts.store, 'c', 1200, 300);
  await ts.store.create('empty', {});
});

afterAll(async () => {
  for (const a of apps) await a.close();
  await ts.cleanup();
});

describe('pinned pages', () => {
  it('carry a strong ETag and immutable caching; If-None-Match answers 304 without building the page', async () => {
    const a = make(ts.store);
    const url = '/v1/sessions/c/page?throughSeq=999&maxMessages=20';
    const r = await a.inject({ url, headers: AUTH });
    expect(r.statusCode).toBe(200);
    const etag = r.headers.etag as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{20,}"$/);
    expect(r.headers['cache-control']).toBe(IMMUTABLE);
    expect(String(r.headers.vary).toLowerCase()).toContain('accept-encoding');

    const builtBefore = built;
    const servedBefore = ts.store.stats().pagesServed;
    const before = await notModifiedCount(a);
    const c = await a.inject({ url, headers: { ...AUTH, 'if-none-match': etag } });
    expect(c.statusCode).toBe(304);
    expect(c.body).toBe('');
    expect(c.headers.etag).toBe(etag);
    expect(c.headers['cache-control']).toBe(IMMUTABLE);
    expect(String(c.headers.vary).toLowerCase()).toContain('accept-encoding');
    // The store was never asked for the page: nothing planned, read or served from its cache.
    expect(built).toBe(builtBefore);
    expect(ts.store.stats().pagesServed).toBe(servedBefore);
    expect(await notModifiedCount(a)).toBe(before + 1);

    // Weak comparison, lists, and `*` (RFC 9110 13.1.2).
    for (const inm of [`W/${etag}`, `"nope", ${etag}`, '*']) {
      expect((await a.inject({ url, headers: { ...AUTH, 'if-none-match': inm } })).statusCode, inm).toBe(304);
    }
    expect((await a.inject({ url, headers: { ...AUTH, 'if-none-match': '"nope"' } })).statusCode).toBe(200);
    expect(built).toBe(builtBefore + 1);
  });

  it('stay the same page, with the same tag, while the log grows, and on another server process', async () => {
    const t = await tempStore(1);
    try {
      await seedSession(t.store, 'g', 500, 250);
      const a = make(t.store);
      const url = '/v1/sessions/g/page?throughSeq=499&maxMessages=10';
      const first = await a.inject({ url, headers: AUTH });
      await t.store.append('g', makeEvents(500, 100));
      const later = await a.inject({ url, headers: AUTH });
      expect(later.headers.etag).toBe(first.headers.etag);
      expect(later.body).toBe(first.body);
      // A restarted server (a new store on the same files) names it the same.
      const again = await openStore({ dataDir: t.dir, workers: 1 });
      try {
        const b = make(again);
        const r = await b.inject({ url, headers: AUTH });
        expect(r.headers.etag).toBe(first.headers.etag);
        expect((await b.inject({ url, headers: { ...AUTH, 'if-none-match': first.headers.etag as string } })).statusCode).toBe(304);
      } finally {
        await again.close();
      }
    } finally {
      await t.cleanup();
    }
  });

  it('get another tag when the session is made anew under the same id', async () => {
    const t = await tempStore(1);
    try {
      await seedSession(t.store, 'n', 300, 300);
      await t.store.close();
      const url = '/v1/sessions/n/page?throughSeq=299';
      const s1 = await openStore({ dataDir: t.dir, workers: 1 });
      const tag1 = (await make(s1).inject({ url, headers: AUTH })).headers.etag;
      await s1.close();
      const p = sessionPaths(t.dir, 'n');
      for (const f of [p.events, p.entries, p.meta]) await fsp.rm(f, { force: true });
      await fsp.rm(p.projections, { recursive: true, force: true });
      const s2 = await openStore({ dataDir: t.dir, workers: 1 });
      try {
        await s2.create('n', { title: 'again' });
        await s2.append('n', makeEvents(0, 300).map((e) => ({ ...e, data: { other: e.seq } })));
        const a = make(s2);
        const r = await a.inject({ url, headers: { ...AUTH, 'if-none-match': tag1 as string } });
        expect(r.statusCode).toBe(200);
        expect(r.headers.etag).not.toBe(tag1);
      } finally {
        await s2.close();
      }
    } finally {
      await t.cleanup();
    }
  });
});

describe('unpinned pages', () => {
  it('get a tag from the session version and no-cache; 304 while unchanged, 200 with a new tag after an append', async () => {
    const t = await tempStore(1);
    try {
      await seedSession(t.store, 'u', 400, 200);
      const a = make(t.store);
      const url = '/v1/sessions/u/page?maxMessages=10';
      const r = await a.inject({ url, headers: AUTH });
      expect(r.statusCode).toBe(200);
      expect(r.headers['cache-control']).toBe('no-cache');
      const etag = r.headers.etag as string;
      // The same bytes as the page pinned at the same cut: the same tag.
      expect((await a.inject({ url: `${url}&throughSeq=399`, headers: AUTH })).headers.etag).toBe(etag);
      const b0 = built;
      expect((await a.inject({ url, headers: { ...AUTH, 'if-none-match': etag } })).statusCode).toBe(304);
      expect(built).toBe(b0);
      await t.store.append('u', makeEvents(400, 10));
      const after = await a.inject({ url, headers: { ...AUTH, 'if-none-match': etag } });
      expect(after.statusCode).toBe(200);
      expect(after.headers.etag).not.toBe(etag);
      expect(JSON.parse(after.body)).toMatchObject({ throughSeq: 409 });
      expect((await a.inject({ url, headers: { ...AUTH, 'if-none-match': after.headers.etag as string } })).statusCode).toBe(304);
    } finally {
      await t.cleanup();
    }
  });

  it('are built from the look at the session their tag was made from: an append landing in between moves neither', async () => {
    const t = await tempStore(1);
    try {
      await seedSession(t.store, 'm', 400, 200);
      // The append lands after the tag is known and before the page is built.
      let appendNext = true;
      const racing = replacing(t.store, {
        pageVersion: async (...args: Parameters<NonNullable<Store['pageVersion']>>) => {
          const version = await (t.store.pageVersion as NonNullable<Store['pageVersion']>).apply(t.store, args);
          if (appendNext) await t.store.append('m', makeEvents(400, 10));
          appendNext = false;
          return version;
        },
      });
      const a = make(racing);
      const r = await a.inject({ url: '/v1/sessions/m/page?maxMessages=10', headers: AUTH });
      expect(r.statusCode).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ throughSeq: 399 });
      const pinned = await a.inject({ url: '/v1/sessions/m/page?maxMessages=10&throughSeq=399', headers: AUTH });
      expect(r.headers.etag).toBe(pinned.headers.etag);
      expect(r.body).toBe(pinned.body);
    } finally {
      await t.cleanup();
    }
  });

  it('an empty session has a tag and answers 304 too', async () => {
    const a = make(ts.store);
    const r = await a.inject({ url: '/v1/sessions/empty/page', headers: AUTH });
    expect(r.statusCode).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ throughSeq: -1, records: [] });
    expect((await a.inject({ url: '/v1/sessions/empty/page', headers: { ...AUTH, 'if-none-match': r.headers.etag as string } })).statusCode).toBe(304);
  });
});

describe('content codings', () => {
  it('name each coding with its own tag, 304 only for the representation the request selects', async () => {
    const a = make(ts.store);
    const url = '/v1/sessions/c/page?throughSeq=1100&maxMessages=30';
    const id = await a.inject({ url, headers: AUTH });
    const gz = await a.inject({ url, headers: { ...AUTH, 'accept-encoding': 'gzip' } });
    // br only when neither zstd nor gzip is accepted (issue 12: zstd > gzip > br).
    const br = await a.inject({ url, headers: { ...AUTH, 'accept-encoding': 'br' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(br.headers['content-encoding']).toBe('br');
    expect(id.headers['content-encoding']).toBeUndefined();
    const tags = [id, gz, br].map((r) => r.headers.etag as string);
    expect(new Set(tags).size).toBe(3);
    // A coded tag: the identity digest, the coding, and 6 hex naming its level and cuts.
    expect(tags[1]).toMatch(new RegExp(`^${tags[0]!.slice(0, -1)}-gzip\\.[0-9a-f]{6}"$`));
    expect(tags[2]).toMatch(new RegExp(`^${tags[0]!.slice(0, -1)}-br\\.[0-9a-f]{6}"$`));
    expect(gunzipSync(gz.rawPayload).toString()).toBe(id.body);
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe(id.body);
    for (const r of [id, gz, br]) expect(String(r.headers.vary).toLowerCase()).toContain('accept-encoding');
    // Weak comparison by identity bytes: the gzip copy's tag gets a 304 asked as br (its own tag answered).
    const cross = await a.inject({ url, headers: { ...AUTH, 'accept-encoding': 'br', 'if-none-match': tags[1]! } });
    expect(cross.statusCode).toBe(304);
    expect(cross.headers.etag).toBe(tags[1]);
    const ok = await a.inject({ url, headers: { ...AUTH, 'accept-encoding': 'gzip', 'if-none-match': `${tags[2]}, ${tags[1]}` } });
    expect(ok.statusCode).toBe(304);
    expect(ok.headers.etag).toBe(tags[1]);
  });

  it('compresses small pages too (the coding never depends on the size, so the tag is known first)', async () => {
    const a = make(ts.store);
    const r = await a.inject({ url: '/v1/sessions/empty/page', headers: { ...AUTH, 'accept-encoding': 'gzip' } });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.headers.etag).toMatch(/-gzip\.[0-9a-f]{6}"$/);
  });
});

describe('errors come first', () => {
  it('a matching If-None-Match never hides a bad request, a missing session or one that needs repair', async () => {
    const a = make(ts.store);
    const bad = await a.inject({ url: '/v1/sessions/c/page?throughSeq=5000', headers: { ...AUTH, 'if-none-match': '*' } });
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body).error.code).toBe('invalid_request');
    const missing = await a.inject({ url: '/v1/sessions/nope/page', headers: { ...AUTH, 'if-none-match': '*' } });
    expect(missing.statusCode).toBe(404);
    expect(JSON.parse(missing.body).error.code).toBe('session_not_found');
    await fsp.writeFile(sessionPaths(ts.dir, 'broken').events, 'not a log\n');
    await fsp.writeFile(sessionPaths(ts.dir, 'broken').meta, '{oops');
    const broken = await a.inject({ url: '/v1/sessions/broken/page', headers: { ...AUTH, 'if-none-match': '*' } });
    expect(broken.statusCode).toBe(409);
    expect(JSON.parse(broken.body).error.code).toBe('repair_required');
    // Error responses carry no validator.
    expect(bad.headers.etag).toBeUndefined();
  });

  it('parses If-None-Match as RFC 9110 says, comparing by identity bytes', () => {
    expect(noneMatch(undefined, 'a', null)).toBe(null);
    expect(noneMatch('"a"', 'a', null)).toBe('"a"');
    expect(noneMatch('W/"a"', 'a', null)).toBe('"a"');
    expect(noneMatch('"b" , W/"a"', 'a', null)).toBe('"a"');
    expect(noneMatch('"ab"', 'a', null)).toBe(null);
    expect(noneMatch('a', 'a', null)).toBe(null);
    expect(noneMatch(' * ', 'a', null)).toBe('*');
    // Any coding of the same identity bytes; the one of the coding asked for first.
    expect(noneMatch('"a-br.00ff00"', 'a', 'gzip')).toBe('"a-br.00ff00"');
    expect(noneMatch('"a-br.00ff00", "a-gzip.123abc"', 'a', 'gzip')).toBe('"a-gzip.123abc"');
    expect(noneMatch('"a-gzip.123abc", "a"', 'a', null)).toBe('"a"');
    expect(noneMatch('"a-gzip"', 'a', 'gzip')).toBe('"a-gzip"');
    // Not a coding suffix: another tag.
    expect(noneMatch('"a-deflate.123abc"', 'a', 'gzip')).toBe(null);
    expect(noneMatch('"a-gzip.12345g"', 'a', 'gzip')).toBe(null);
    expect(noneMatch('"b-gzip.123abc"', 'a', 'gzip')).toBe(null);
  });
});
