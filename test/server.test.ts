/**
 * The HTTP API through fastify's inject(): every route, every error code and
 * status, auth on and off, compression, overload, metrics, OpenAPI, request logs.
 */
import { Agent, get as httpGet } from 'node:http';
import { Writable } from 'node:stream';
import { gunzipSync, brotliDecompressSync, gzipSync } from 'node:zlib';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { decompress as fzstdDecompress } from 'fzstd';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer, type ServerOptions } from '../src/main/server/index.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { expandRecords } from '../src/core/chunk-codec.js';
import type { Page } from '../src/core/types.js';
import type { Store } from '../src/main/store-types.js';
import { sessionPaths } from '../src/main/paths.js';
import { burnCpu, makeEvents, seedSession, sleep, tempStore, until, type TempStore } from './server-helpers.js';
import { damageFrame } from './helpers/damage.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

function wrap(store: Store, over: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, prop) {
      if (prop in over) return (over as Record<string | symbol, unknown>)[prop];
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

let ts: TempStore;
let app: FastifyInstance;
const apps: FastifyInstance[] = [];

function make(store: Store, opts: ServerOptions = {}): FastifyInstance {
  const a = buildServer(store, { token: TOKEN, maxEventLoopLagMs: 0, ...opts });
  apps.push(a);
  return a;
}

beforeAll(async () => {
  ts = await tempStore(2);
  await seedSession(ts.store, 'alpha', 3000, 250);
  await seedSession(ts.store, 'beta', 40, 40);
  await ts.store.create('empty', {});
  // A session whose sidecars are garbage: listed as repair_required, never fails the catalog.
  await fsp.writeFile(join(ts.dir, 'sessions', 'broken.events'), 'not a log\n');
  await fsp.writeFile(join(ts.dir, 'sessions', 'index', 'broken.index.json'), '{oops');
  app = make(ts.store);
  await app.ready();
});

afterAll(async () => {
  for (const a of apps) await a.close();
  await ts.cleanup();
});

function json(res: { body: string }): any {
  return JSON.parse(res.body);
}

describe('auth', () => {
  it('leaves /healthz, /livez, /readyz and /v1/openapi.json open and requires the bearer token everywhere else', async () => {
    for (const url of ['/healthz', '/livez', '/readyz']) {
      const h = await app.inject({ url });
      expect(h.statusCode, url).toBe(200);
      expect(json(h)).toEqual({ status: 'ok' });
    }
    expect((await app.inject({ url: '/v1/openapi.json' })).statusCode).toBe(200);
    for (const url of ['/v1/sessions', '/v1/sessions/alpha', '/v1/sessions/alpha/page', '/v1/sessions/alpha/follow', '/metrics']) {
      const missing = await app.inject({ url });
      expect(missing.statusCode, url).toBe(401);
      expect(json(missing).error.code).toBe('unauthorized');
      expect(missing.headers['www-authenticate']).toMatch(/^Bearer/);
      const wrong = await app.inject({ url, headers: { authorization: `Bearer ${TOKEN}x` } });
      expect(wrong.statusCode, url).toBe(401);
      const short = await app.inject({ url, headers: { authorization: 'Bearer t' } });
      expect(short.statusCode, url).toBe(401);
      const basic = await app.inject({ url, headers: { authorization: `Basic ${TOKEN}` } });
      expect(basic.statusCode, url).toBe(401);
    }
    for (const [method, url] of [
      ['PUT', '/v1/sessions/newone'],
      ['POST', '/v1/sessions/alpha/events'],
    ] as const) {
      const r = await app.inject({ method, url, payload: { events: [] } });
      expect(r.statusCode).toBe(401);
    }
    // The unauthenticated PUT created nothing.
    await expect(ts.store.info('newone')).rejects.toMatchObject({ code: 'session_not_found' });
    const ok = await app.inject({ url: '/v1/sessions', headers: { authorization: `bearer ${TOKEN}` } });
    expect(ok.statusCode).toBe(200);
  });

  it('checks every request of a keep-alive connection: one that passed does not let another value through', async () => {
    const a = make(ts.store);
    await a.listen({ port: 0, host: '127.0.0.1' });
    const port = (a.server.address() as import('node:net').AddressInfo).port;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; reused: boolean; code?: string }>((resolve, reject) => {
        const req = httpGet({ host: '127.0.0.1', port, path: '/v1/sessions/alpha', agent, headers }, (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, ...(res.statusCode === 401 ? { code: JSON.parse(body).error.code } : {}) }));
        });
        req.on('error', reject);
      });
    try {
      expect(await get(AUTH)).toEqual({ status: 200, reused: false });
      expect(await get(AUTH)).toEqual({ status: 200, reused: true });
      // The same connection, now with a wrong token, another scheme, a longer value, none at all.
      for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, `${AUTH.authorization} `.repeat(2)]) {
        expect(await get({ authorization }), authorization).toEqual({ status: 401, reused: true, code: 'unauthorized' });
      }
      expect(await get({})).toEqual({ status: 401, reused: true, code: 'unauthorized' });
      // Another spelling of the right token passes as before, and so does the first again.
      expect(await get({ authorization: `bearer   ${TOKEN}` })).toEqual({ status: 200, reused: true });
      expect(await get(AUTH)).toEqual({ status: 200, reused: true });
      expect(await get({ authorization: `Bearer ${TOKEN}x` })).toEqual({ status: 401, reused: true, code: 'unauthorized' });
    } finally {
      agent.destroy();
    }
  });

  it('serves without a token when auth is off', async () => {
    const open = make(ts.store, { token: null });
    const r = await open.inject({ url: '/v1/sessions/alpha' });
    expect(r.statusCode).toBe(200);
    expect(json(r).id).toBe('alpha');
    const m = await open.inject({ url: '/metrics' });
    expect(m.statusCode).toBe(200);
  });
});

describe('catalog and info', () => {
  it('lists every session with status and reasons; a broken one does not fail the listing', async () => {
    const r = await app.inject({ url: '/v1/sessions', headers: AUTH });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    const sessions = json(r).sessions as { id: string; status: string; reasons: string[]; nextSeq: number }[];
    const byId = new Map(sessions.map((s) => [s.id, s]));
    expect([...byId.keys()].sort()).toEqual(['alpha', 'beta', 'broken', 'empty']);
    expect(byId.get('alpha')).toMatchObject({ status: 'ok', reasons: [], nextSeq: 3000, lastSeq: 2999, title: 'session alpha' });
    expect(byId.get('empty')).toMatchObject({ status: 'ok', nextSeq: 0, lastSeq: -1 });
    expect(byId.get('broken')!.status).toBe('repair_required');
    expect(byId.get('broken')!.reasons.length).toBeGreaterThan(0);
    expect(sessions).toEqual(JSON.parse(JSON.stringify(await ts.store.list())));
  });

  it('answers one session, 404 for an unknown one, 400 for an invalid id', async () => {
    const r = await app.inject({ url: '/v1/sessions/beta', headers: AUTH });
    expect(r.statusCode).toBe(200);
    expect(json(r)).toEqual(JSON.parse(JSON.stringify(await ts.store.info('beta'))));
    const nf = await app.inject({ url: '/v1/sessions/nope', headers: AUTH });
    expect(nf.statusCode).toBe(404);
    expect(json(nf)).toEqual({ error: { code: 'session_not_found', message: expect.any(String) } });
    const longId = 'a'.repeat(128);
    const nf2 = await app.inject({ url: `/v1/sessions/${longId}`, headers: AUTH });
    expect(json(nf2).error.code).toBe('session_not_found');
    // An encoded ".." is normalized away by URL parsing before routing: never a session lookup.
    const dots = await app.inject({ url: '/v1/sessions/%2e%2e', headers: AUTH });
    expect([400, 404]).toContain(dots.statusCode);
    expect(json(dots).error.code).not.toBe('session_not_found');
    for (const bad of ['a..b', 'x%2e%2ey', '.hidden', 'a%2Fb', 'a'.repeat(129), 'sp%20ace']) {
      const b = await app.inject({ url: `/v1/sessions/${bad}`, headers: AUTH });
      expect(b.statusCode, bad).toBe(400);
      expect(json(b).error.code).toBe('invalid_request');
    }
  });
});

describe('pages', () => {
  it('sends the store page, byte for byte, as application/json', async () => {
    const cases = ['', '?maxMessages=1', '?maxMessages=1000', '?throughSeq=1500', '?throughSeq=2999&beforeSeq=1234&maxMessages=7', '?maxBytes=100', '?beforeSeq=0'];
    for (const q of cases) {
      const r = await app.inject({ url: `/v1/sessions/alpha/page${q}`, headers: AUTH });
      expect(r.statusCode, q).toBe(200);
      expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
      const params = Object.fromEntries(new URLSearchParams(q).entries());
      const expected = await ts.store.pageBuffer('alpha', Object.fromEntries(Object.entries(params).map(([k, v]) => [k, Number(v)])));
      expect(r.rawPayload.equals(expected.body), q).toBe(true);
      expect(json(r)).toEqual(await ts.store.page('alpha', Object.fromEntries(Object.entries(params).map(([k, v]) => [k, Number(v)]))));
    }
  });

  it('walks older pages back to the start, every event exactly once', async () => {
    const seqs: number[] = [];
    let before: number | undefined;
    let through: number | undefined;
    for (let guard = 0; guard < 1000; guard++) {
      const q = new URLSearchParams({ maxMessages: '37' });
      if (before !== undefined) q.set('beforeSeq', String(before));
      if (through !== undefined) q.set('throughSeq', String(through));
      const r = await app.inject({ url: `/v1/sessions/alpha/page?${q}`, headers: AUTH });
      expect(r.statusCode).toBe(200);
      const page = json(r) as Page;
      through = page.throughSeq;
      const events = expandRecords(page.records);
      seqs.unshift(...events.map((e) => e.seq));
      if (!page.hasMore) break;
      before = page.fromSeq;
    }
    expect(seqs).toEqual(Array.from({ length: 3000 }, (_, i) => i));
  });

  it('answers an empty session with throughSeq -1 and no records', async () => {
    const r = await app.inject({ url: '/v1/sessions/empty/page', headers: AUTH });
    expect(r.statusCode).toBe(200);
    expect(json(r)).toEqual({ sessionId: 'empty', throughSeq: -1, fromSeq: 0, toSeq: 0, hasMore: false, records: [] });
  });

  it('rejects bad parameters with invalid_request', async () => {
    for (const q of ['maxMessages=0', 'maxMessages=1001', 'maxMessages=abc', 'maxMessages=1.5', 'maxMessages=-1', 'throughSeq=3000', 'throughSeq=01', 'beforeSeq=1e3', 'maxBytes=0', 'maxMessages=1&maxMessages=2', 'throughSeq=99999999999999999999']) {
      const r = await app.inject({ url: `/v1/sessions/alpha/page?${q}`, headers: AUTH });
      expect(r.statusCode, q).toBe(400);
      expect(json(r).error.code, q).toBe('invalid_request');
    }
    const nf = await app.inject({ url: '/v1/sessions/nope/page', headers: AUTH });
    expect(nf.statusCode).toBe(404);
    expect(json(nf).error.code).toBe('session_not_found');
  });

  it('rejects a request target over the length limit', async () => {
    const r = await app.inject({ url: `/v1/sessions/alpha/page?x=${'y'.repeat(5000)}`, headers: AUTH });
    expect(r.statusCode).toBe(414);
    expect(json(r).error.code).toBe('uri_too_long');
  });

  it('answers unknown routes with a JSON 404', async () => {
    const r = await app.inject({ url: '/v2/whatever', headers: AUTH });
    expect(r.statusCode).toBe(404);
    expect(json(r).error.code).toBe('not_found');
  });
});

describe('compression', () => {
  it('gzip and brotli decode to the same JSON as the identity response', async () => {
    const url = '/v1/sessions/alpha/page?maxMessages=200';
    const plain = await app.inject({ url, headers: AUTH });
    expect(plain.headers['content-encoding']).toBeUndefined();
    const gz = await app.inject({ url, headers: { ...AUTH, 'accept-encoding': 'gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).equals(plain.rawPayload)).toBe(true);
    const br = await app.inject({ url, headers: { ...AUTH, 'accept-encoding': 'br' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.rawPayload).equals(plain.rawPayload)).toBe(true);
    expect(br.rawPayload.length).toBeLessThan(plain.rawPayload.length / 2);
    // Preference zstd > gzip > br among equal weights (issue 12).
    const both = await app.inject({ url, headers: { ...AUTH, 'accept-encoding': 'gzip, deflate, br' } });
    expect(both.headers['content-encoding']).toBe('gzip');
    const browser = await app.inject({ url, headers: { ...AUTH, 'accept-encoding': 'gzip, deflate, br, zstd' } });
    expect(browser.headers['content-encoding']).toBe('zstd');
    expect(Buffer.from(fzstdDecompress(browser.rawPayload)).equals(plain.rawPayload)).toBe(true);
    expect(both.headers.vary).toMatch(/accept-encoding/i);
    // The catalog is compressed too.
    const cat = await app.inject({ url: '/v1/sessions', headers: { ...AUTH, 'accept-encoding': 'gzip' } });
    expect(cat.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(cat.rawPayload).toString())).toEqual(json(await app.inject({ url: '/v1/sessions', headers: AUTH })));
  });

  it('leaves small responses alone', async () => {
    const r = await app.inject({ url: '/v1/sessions/nope', headers: { ...AUTH, 'accept-encoding': 'gzip, br' } });
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(json(r).error.code).toBe('session_not_found');
  });
});

describe('create and append', () => {
  it('creates a session from a header record, 409 session_exists the second time', async () => {
    const r = await app.inject({ method: 'PUT', url: '/v1/sessions/made', headers: AUTH, payload: { title: 'Made here', version: 3, host: { name: 'test' } } });
    expect(r.statusCode).toBe(201);
    const body = json(r);
    expect(body).toMatchObject({ id: 'made', status: 'ok', nextSeq: 0, lastSeq: -1, title: 'Made here' });
    expect(body.header).toMatchObject({ type: 'session', id: 'made', version: 3, host: { name: 'test' } });
    const again = await app.inject({ method: 'PUT', url: '/v1/sessions/made', headers: AUTH, payload: {} });
    expect(again.statusCode).toBe(409);
    expect(json(again).error.code).toBe('session_exists');
    // No body at all: a default header.
    const bare = await app.inject({ method: 'PUT', url: '/v1/sessions/bare', headers: AUTH });
    expect(bare.statusCode).toBe(201);
    const bin = await app.inject({ method: 'PUT', url: '/v1/sessions/made-bin?format=binary', headers: AUTH, payload: {} });
    expect(bin.statusCode).toBe(201);
    expect(json(bin).format).toBe('binary');
  });

  it('rejects bad create requests', async () => {
    const cases: { url: string; payload?: unknown; headers?: Record<string, string>; code: string; status: number }[] = [
      { url: '/v1/sessions/c1', payload: [1, 2], code: 'invalid_request', status: 400 },
      { url: '/v1/sessions/c2', payload: { id: 'other' }, code: 'invalid_request', status: 400 },
      { url: '/v1/sessions/c3', payload: { type: 'nope' }, code: 'invalid_request', status: 400 },
      { url: '/v1/sessions/c4?format=yaml', payload: {}, code: 'invalid_request', status: 400 },
      { url: '/v1/sessions/bad..id', payload: {}, code: 'invalid_request', status: 400 },
    ];
    for (const c of cases) {
      const r = await app.inject({ method: 'PUT', url: c.url, headers: AUTH, payload: c.payload as object });
      expect(r.statusCode, c.url).toBe(c.status);
      expect(json(r).error.code, c.url).toBe(c.code);
    }
    const badJson = await app.inject({ method: 'PUT', url: '/v1/sessions/c5', headers: { ...AUTH, 'content-type': 'application/json' }, payload: '{"title":' });
    expect(badJson.statusCode).toBe(400);
    expect(json(badJson).error.code).toBe('invalid_request');
  });

  it('appends after fsync and answers fromSeq, toSeq, nextSeq', async () => {
    await app.inject({ method: 'PUT', url: '/v1/sessions/app1', headers: AUTH, payload: {} });
    const a = await app.inject({ method: 'POST', url: '/v1/sessions/app1/events', headers: AUTH, payload: { events: makeEvents(0, 25) } });
    expect(a.statusCode).toBe(200);
    expect(json(a)).toEqual({ fromSeq: 0, toSeq: 25, nextSeq: 25 });
    const b = await app.inject({ method: 'POST', url: '/v1/sessions/app1/events', headers: AUTH, payload: { events: makeEvents(25, 5) } });
    expect(json(b)).toEqual({ fromSeq: 25, toSeq: 30, nextSeq: 30 });
    const page = await app.inject({ url: '/v1/sessions/app1/page?maxMessages=1000', headers: AUTH });
    expect(expandRecords((json(page) as Page).records)).toEqual(makeEvents(0, 30));
    // A gzip-encoded request body is accepted (the body limit applies after decompression).
    const gz = await app.inject({
      method: 'POST',
      url: '/v1/sessions/app1/events',
      headers: { ...AUTH, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(JSON.stringify({ events: makeEvents(30, 10) })),
    });
    expect(gz.statusCode).toBe(200);
    expect(json(gz)).toEqual({ fromSeq: 30, toSeq: 40, nextSeq: 40 });
  });

  it('answers seq_conflict when seqs do not continue nextSeq', async () => {
    await app.inject({ method: 'PUT', url: '/v1/sessions/app2', headers: AUTH, payload: {} });
    await app.inject({ method: 'POST', url: '/v1/sessions/app2/events', headers: AUTH, payload: { events: makeEvents(0, 10) } });
    for (const events of [makeEvents(5, 3), makeEvents(11, 3), makeEvents(0, 1)]) {
      const r = await app.inject({ method: 'POST', url: '/v1/sessions/app2/events', headers: AUTH, payload: { events } });
      expect(r.statusCode).toBe(409);
      expect(json(r).error).toMatchObject({ code: 'seq_conflict', expectedSeq: 10 });
    }
    expect((await ts.store.info('app2')).nextSeq).toBe(10);
  });

  it('rejects bad append bodies with invalid_request, unknown sessions with 404', async () => {
    await app.inject({ method: 'PUT', url: '/v1/sessions/app3', headers: AUTH, payload: {} });
    const cases: { payload: string; type?: string }[] = [
      { payload: '{"events":' },
      { payload: '[]' },
      { payload: '{}' },
      { payload: '{"events":[]}' },
      { payload: '{"events":{}}' },
      { payload: JSON.stringify({ events: [{ type: 'x', seq: 0 }] }) },
      { payload: JSON.stringify({ events: [{ type: 'text-chunks', seq: 0, time: 1 }] }) },
    ];
    for (const c of cases) {
      const r = await app.inject({ method: 'POST', url: '/v1/sessions/app3/events', headers: { ...AUTH, 'content-type': c.type ?? 'application/json' }, payload: c.payload });
      expect(r.statusCode, c.payload).toBe(400);
      expect(json(r).error.code, c.payload).toBe('invalid_request');
    }
    // A body that is not JSON is refused by its media type before it is read.
    for (const c of [{ payload: 'events', type: 'text/plain' }, { payload: '<events/>', type: 'application/xml' }]) {
      const r = await app.inject({ method: 'POST', url: '/v1/sessions/app3/events', headers: { ...AUTH, 'content-type': c.type }, payload: c.payload });
      expect(r.statusCode, c.type).toBe(415);
      expect(json(r).error.code, c.type).toBe('unsupported_media_type');
    }
    expect((await ts.store.info('app3')).nextSeq).toBe(0);
    const nf = await app.inject({ method: 'POST', url: '/v1/sessions/ghost/events', headers: AUTH, payload: { events: makeEvents(0, 1) } });
    expect(nf.statusCode).toBe(404);
    expect(json(nf).error.code).toBe('session_not_found');
  });

  it('answers payload_too_large over the body limit', async () => {
    const small = make(ts.store, { bodyLimit: 2048 });
    await small.inject({ method: 'PUT', url: '/v1/sessions/app4', headers: AUTH, payload: {} });
    const r = await small.inject({ method: 'POST', url: '/v1/sessions/app4/events', headers: AUTH, payload: { events: makeEvents(0, 100) } });
    expect(r.statusCode).toBe(413);
    expect(json(r).error.code).toBe('payload_too_large');
    const big = await small.inject({ method: 'PUT', url: '/v1/sessions/app5', headers: AUTH, payload: { pad: 'x'.repeat(4096) } });
    expect(big.statusCode).toBe(413);
    // Nothing was appended.
    expect((await ts.store.info('app4')).nextSeq).toBe(0);
  });

  it('answers session_busy while another writer holds the session', async () => {
    await ts.store.create('held', {});
    await ts.store.close().catch(() => undefined);
    // A fresh store (the first one held the writer lock on `held`).
    const { openStore } = await import('../src/main/store.js');
    const store2 = await openStore({ dataDir: ts.dir, workers: 1 });
    ts.store = store2;
    const other = await SessionWriter.open(ts.dir, 'held');
    try {
      const a = make(store2);
      const r = await a.inject({ method: 'POST', url: '/v1/sessions/held/events', headers: AUTH, payload: { events: makeEvents(0, 1) } });
      expect(r.statusCode).toBe(409);
      expect(json(r).error.code).toBe('session_busy');
    } finally {
      await other.close();
    }
    app = make(store2);
  });
});

describe('damaged sessions', () => {
  it('answers corrupt_range 422 for a page over a damaged frame, and serves pages that miss it', async () => {
    const store = ts.store;
    await store.create('dmg', {}, { format: 'binary' });
    for (let at = 0; at < 2000; at += 100) await store.append('dmg', makeEvents(at, 100));
    const victim = await damageFrame(ts.dir, 'dmg', 500);
    const a = make(store);
    const bad = await a.inject({ url: `/v1/sessions/dmg/page?beforeSeq=${victim.seq + 1}&maxMessages=5`, headers: AUTH });
    expect(bad.statusCode).toBe(422);
    expect(json(bad).error.code).toBe('corrupt_range');
    const good = await a.inject({ url: '/v1/sessions/dmg/page?maxMessages=3', headers: AUTH });
    expect(good.statusCode).toBe(200);
  });

  it('answers repair_required 409 when a sidecar is missing, and lists the session so', async () => {
    await seedSession(ts.store, 'torn', 100, 50);
    await ts.store.close();
    const { openStore } = await import('../src/main/store.js');
    ts.store = await openStore({ dataDir: ts.dir, workers: 1 });
    await fsp.rm(sessionPaths(ts.dir, 'torn').entries);
    const a = make(ts.store);
    const r = await a.inject({ url: '/v1/sessions/torn/page', headers: AUTH });
    expect(r.statusCode).toBe(409);
    expect(json(r).error.code).toBe('repair_required');
    const ap = await a.inject({ method: 'POST', url: '/v1/sessions/torn/events', headers: AUTH, payload: { events: makeEvents(100, 1) } });
    expect(ap.statusCode).toBe(409);
    expect(json(ap).error.code).toBe('repair_required');
    const cat = json(await a.inject({ url: '/v1/sessions', headers: AUTH })).sessions as { id: string; status: string }[];
    expect(cat.find((s) => s.id === 'torn')!.status).toBe('repair_required');
    app = a;
  });
});

describe('overload', () => {
  // A store that tells the queue's size alone (poolQueueSize, as PagerStore does) and one that
  // gives it in stats() only: the check reads whichever there is.
  const fullQueues: [string, Partial<Store>][] = [
    ['poolQueueSize', { poolQueueSize: () => 10_000 }],
    [
      'stats() only',
      {
        poolQueueSize: undefined,
        stats: () => {
          const s = ts.store.stats();
          return { ...s, pool: { ...s.pool, queueSize: 10_000 } };
        },
      },
    ],
  ];
  it.each(fullQueues)('answers overloaded 503 with Retry-After while the worker queue is full (%s)', async (_, over) => {
    const busy = wrap(ts.store, over);
    const a = make(busy, { maxPoolQueue: 64, retryAfterSeconds: 2 });
    for (const url of ['/v1/sessions/alpha/page', '/v1/sessions/alpha/follow']) {
      const r = await a.inject({ url, headers: AUTH });
      expect(r.statusCode, url).toBe(503);
      expect(r.headers['retry-after']).toBe('2');
      expect(json(r).error.code).toBe('overloaded');
    }
    // Routes that do not use the pool still answer.
    expect((await a.inject({ url: '/v1/sessions/alpha', headers: AUTH })).statusCode).toBe(200);
    expect((await a.inject({ url: '/healthz' })).statusCode).toBe(200);
    const m = await a.inject({ url: '/metrics', headers: AUTH });
    expect(m.body).toMatch(/session_pager_errors_total\{code="overloaded"\} 2/);
  });

  it('maps the store\'s own overloaded error to 503 with Retry-After', async () => {
    const { PagerError } = await import('../src/core/errors.js');
    const full = wrap(ts.store, {
      pageBuffer: async () => {
        throw new PagerError('overloaded', 'page worker queue is full, retry shortly', { retryAfter: 3 });
      },
    });
    const r = await make(full).inject({ url: '/v1/sessions/alpha/page', headers: AUTH });
    expect(r.statusCode).toBe(503);
    expect(r.headers['retry-after']).toBe('3');
  });

  it('sheds requests while the event loop lags, and recovers', async () => {
    const a = make(ts.store, { maxEventLoopLagMs: 100, lagSampleMs: 20 });
    await a.ready();
    await sleep(60);
    // A loop blocked by its own work, at two samples in a row: 400 ms of CPU, a sample, 400 ms more
    // (a single stall, or one the process did no work in, is not shed: lag-guard.test.ts).
    burnCpu(400);
    await sleep(1);
    burnCpu(400);
    const r = await a.inject({ url: '/v1/sessions', headers: AUTH });
    expect(r.statusCode).toBe(503);
    expect(json(r).error.code).toBe('overloaded');
    expect(r.headers['retry-after']).toBe('1');
    await sleep(400);
    expect((await a.inject({ url: '/v1/sessions', headers: AUTH })).statusCode).toBe(200);
  });

  it('abandons a page that takes longer than the page timeout with overloaded', async () => {
    let finished = false;
    const slow = wrap(ts.store, {
      pageBuffer: async (id: string, params?: object) => {
        await sleep(400);
        const pb = await ts.store.pageBuffer(id, params);
        finished = true;
        return pb;
      },
    });
    const a = make(slow, { pageTimeoutMs: 100 });
    const r = await a.inject({ url: '/v1/sessions/alpha/page', headers: AUTH });
    expect(r.statusCode).toBe(503);
    expect(json(r).error.code).toBe('overloaded');
    expect(r.headers['retry-after']).toBe('1');
    await until('the late page', () => finished);
    await sleep(20);
    // The late answer is dropped quietly; the server goes on serving.
    expect((await a.inject({ url: '/v1/sessions/beta', headers: AUTH })).statusCode).toBe(200);
  });

  it('answers internal 500 without leaking the cause', async () => {
    const broken = wrap(ts.store, {
      list: async () => {
        throw new Error('secret detail /etc/passwd');
      },
    });
    const r = await make(broken).inject({ url: '/v1/sessions', headers: AUTH });
    expect(r.statusCode).toBe(500);
    expect(json(r)).toEqual({ error: { code: 'internal', message: 'internal error' } });
  });
});

describe('metrics, OpenAPI, logs', () => {
  it('exposes Prometheus metrics on its own registry', async () => {
    const a = make(ts.store);
    await a.inject({ url: '/v1/sessions/alpha/page', headers: AUTH });
    await a.inject({ url: '/v1/sessions/alpha/page?maxMessages=3', headers: { ...AUTH, 'accept-encoding': 'br' } });
    await a.inject({ url: '/v1/sessions/nope', headers: AUTH });
    await a.inject({ url: '/v1/sessions' });
    const r = await a.inject({ url: '/metrics', headers: AUTH });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
    const text = r.body;
    expect(text).toMatch(/session_pager_http_request_duration_seconds_bucket\{le="[^"]+",method="GET",route="\/v1\/sessions\/:id\/page",status_code="200"\}/);
    expect(text).toMatch(/session_pager_pages_served_total\{route="\/v1\/sessions\/:id\/page"\} 2/);
    expect(text).toMatch(/session_pager_errors_total\{code="unauthorized"\} 1/);
    expect(text).toMatch(/session_pager_errors_total\{code="session_not_found"\} 1/);
    expect(text).toMatch(/session_pager_http_response_bytes_total\{route="\/v1\/sessions\/:id\/page"\} [1-9]/);
    for (const name of ['pool_queue_size', 'pool_utilization', 'pool_threads', 'cache_hits_total', 'cache_misses_total', 'page_events_bucket', 'page_body_bytes_bucket', 'event_loop_lag_seconds', 'follow_streams', 'ready']) {
      expect(text, name).toContain(`session_pager_${name}`);
    }
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
  });

  it('times the phases of pages it builds, not of cache hits', async () => {
    const a = make(ts.store);
    const count = async (phase: string) => {
      const text = (await a.inject({ url: '/metrics', headers: AUTH })).body;
      return Number(new RegExp(`session_pager_page_phase_seconds_count\\{phase="${phase}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const phases = ['plan', 'read', 'decode', 'pool', 'assemble', 'total'];
    const before = await Promise.all(phases.map(count));
    // Parameters no other test asks for: this page is built, then served from the cache.
    const url = '/v1/sessions/alpha/page?maxMessages=7&maxBytes=987654';
    expect((await a.inject({ url, headers: AUTH })).statusCode).toBe(200);
    expect(await Promise.all(phases.map(count))).toEqual(before.map((c) => c + 1));
    expect((await a.inject({ url, headers: AUTH })).statusCode).toBe(200);
    expect(await Promise.all(phases.map(count))).toEqual(before.map((c) => c + 1));
  });

  it('serves its OpenAPI document', async () => {
    const r = await app.inject({ url: '/v1/openapi.json', headers: AUTH });
    expect(r.statusCode).toBe(200);
    const doc = json(r);
    expect(doc.openapi).toMatch(/^3\./);
    // test/openapi.test.ts checks the paths against every route the server holds.
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/healthz', '/livez', '/readyz', '/metrics', '/v1/openapi.json', '/v1/sessions', '/v1/sessions/{id}', '/v1/sessions/{id}/events', '/v1/sessions/{id}/follow', '/v1/sessions/{id}/page']),
    );
    expect(doc.components.schemas.Error.properties.error.properties.code.enum).toEqual(expect.arrayContaining(['invalid_request', 'unauthorized', 'session_not_found', 'seq_conflict', 'repair_required', 'corrupt_range', 'payload_too_large', 'overloaded', 'internal']));
  });

  it('logs one line per request with request id, session id, page size and duration', async () => {
    const lines: any[] = [];
    const stream = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
        cb();
      },
    });
    const a = make(ts.store, { logger: { level: 'info', stream } as never });
    const r = await a.inject({ url: '/v1/sessions/alpha/page?maxMessages=2', headers: AUTH });
    expect(r.headers['x-request-id']).toBeTruthy();
    const line = lines.find((l) => l.msg === 'request completed' && l.sessionId === 'alpha');
    expect(line).toBeDefined();
    expect(line.reqId).toBe(r.headers['x-request-id']);
    expect(line.statusCode).toBe(200);
    expect(typeof line.durationMs).toBe('number');
    const pb = await ts.store.pageBuffer('alpha', { maxMessages: 2 });
    expect(line.page).toEqual({ fromSeq: pb.fromSeq, toSeq: pb.toSeq, events: pb.toSeq - pb.fromSeq, bytes: pb.body.length, frames: pb.frames });
    // The token never reaches the logs.
    expect(JSON.stringify(lines)).not.toContain(TOKEN);
  });
});
