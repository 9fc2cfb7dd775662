/**
 * The direct page path (src/main/server/fast-page.ts): a page request over a
 * real socket answered without the framework is answered exactly as the
 * framework's route answers it (app.inject always goes through the
 * framework): status, the headers the route and its hooks set, the body,
 * the metrics; and what it does not take whole (an invalid or unusual query,
 * HEAD, a missing token) still goes the framework's way.
 */
import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer, type ServerOptions } from '../src/main/server/index.js';
import { plainPageQuery } from '../src/main/server/fast-page.js';
import type { Store } from '../src/main/store-types.js';
import { gatedPages, seedSession, tempStore, until, type TempStore } from './server-helpers.js';

const TOKEN = 'fast-page-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** The headers a page answer's route and hooks set (node adds Date, Connection, Keep-Alive). */
const COMPARED = ['etag', 'cache-control', 'vary', 'content-type', 'content-encoding', 'content-length', 'x-request-id', 'retry-after', 'allow', 'www-authenticate'];

interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  body: Buffer;
}

function pick(h: Record<string, unknown>): Record<string, string | undefined> {
  return Object.fromEntries(COMPARED.map((k) => [k, h[k] === undefined ? undefined : String(h[k])]));
}

/** One request over a socket (node:http, no decoding of the body). */
function overSocket(port: number, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: pick(res.headers), body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function throughFramework(app: FastifyInstance, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const r = await app.inject({ method: method as 'GET', url: path, headers });
  return { status: r.statusCode, headers: pick(r.headers), body: r.rawPayload };
}

interface Served {
  app: FastifyInstance;
  port: number;
  ts: TempStore;
  /** Page requests that reached the framework (its first hook). */
  framework: () => number;
}

async function serve(store: Store, ts: TempStore, over: ServerOptions = {}): Promise<Served> {
  const app = buildServer(store, { token: TOKEN, maxEventLoopLagMs: 0, ...over });
  let framework = 0;
  app.addHook('onRequest', (request, _reply, done) => {
    if (/\/page(\?|$)/.test(request.url) && request.headers['x-via'] === 'socket') framework++;
    done();
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, ts, port: (app.server.address() as AddressInfo).port, framework: () => framework };
}

describe('plainPageQuery', () => {
  it('takes the plain form only: known parameters once each, plain decimal digits in range; maxMessages defaults to 50', () => {
    expect(plainPageQuery(undefined)).toEqual({ maxMessages: 50 });
    expect(plainPageQuery('')).toEqual({ maxMessages: 50 });
    expect(plainPageQuery('maxMessages=3&beforeSeq=0&throughSeq=12&maxBytes=9')).toEqual({ maxMessages: 3, beforeSeq: 0, throughSeq: 12, maxBytes: 9 });
    for (const q of ['maxMessages=0', 'maxMessages=1001', 'maxMessages=05', 'maxMessages=-1', 'maxMessages=1e2', 'maxMessages=', 'maxMessages', '=3', 'maxMessages=3&maxMessages=4', 'other=1', 'maxMessages=3&', 'maxBytes=0', `throughSeq=${Number.MAX_SAFE_INTEGER + 1}`]) {
      expect(plainPageQuery(q), q).toBeNull();
    }
  });
});

describe('the direct page path (real sockets)', () => {
  let s: Served;
  beforeAll(async () => {
    const ts = await tempStore(1);
    await seedSession(ts.store, 'a', 300, 100);
    s = await serve(ts.store, ts);
  });
  afterAll(async () => {
    await s.app.close();
    await s.ts.cleanup();
  });

  it('answers a page as the route does (status, headers, body), without the framework; what it does not take goes the framework way', async () => {
    const etag = (await throughFramework(s.app, 'GET', '/v1/sessions/a/page?maxMessages=5&throughSeq=100', AUTH)).headers.etag as string;
    const cases: [string, string, Record<string, string>, boolean][] = [
      // [method, path, headers, taken directly]
      ['GET', '/v1/sessions/a/page', {}, true],
      ['GET', '/v1/sessions/a/page?maxMessages=5', { 'x-request-id': 'mine-1' }, true],
      ['GET', '/v1/sessions/a/page?maxMessages=5&throughSeq=100', {}, true],
      ['GET', '/v1/sessions/a/page?maxMessages=7&beforeSeq=120&maxBytes=300', {}, true],
      ['GET', '/v1/sessions/a/page?maxMessages=5&throughSeq=100', { 'if-none-match': etag }, true],
      ['GET', '/v1/sessions/a/page?maxMessages=5&throughSeq=100', { 'if-none-match': '*' }, true],
      ['GET', '/v1/sessions/a/page?maxMessages=5&throughSeq=100', { 'accept-encoding': 'gzip' }, true],
      ['GET', '/v1/sessions/a/page?maxMessages=5&throughSeq=100', { 'accept-encoding': 'gzip', 'if-none-match': `${etag.slice(0, -1)}-gzip"` }, true],
      // The store's own errors: answered directly, in the SPEC's shape.
      ['GET', '/v1/sessions/nosuch/page?maxMessages=5', {}, true],
      ['GET', '/v1/sessions/a/page?throughSeq=100000', {}, true],
      // Not taken: the framework validates, decodes or refuses them.
      ['GET', '/v1/sessions/a/page?maxMessages=0', {}, false],
      ['GET', '/v1/sessions/a/page?maxMessages=05', {}, false],
      ['GET', '/v1/sessions/a/page?other=1', {}, false],
      ['GET', '/v1/sessions/a/page?maxMessages=5&maxMessages=6', {}, false],
      ['GET', '/v1/sessions/%61/page?maxMessages=5', {}, false],
      ['GET', '/v1/sessions/a..b/page', {}, false],
      ['HEAD', '/v1/sessions/a/page?maxMessages=5', {}, false],
    ];
    for (const [method, path, extra, direct] of cases) {
      const headers = { ...AUTH, 'x-request-id': 'id-1', ...extra };
      const before = s.framework();
      const got = await overSocket(s.port, method, path, { ...headers, 'x-via': 'socket' });
      expect(s.framework() - before, `${method} ${path} ${JSON.stringify(extra)}: through the framework`).toBe(direct ? 0 : 1);
      const want = await throughFramework(s.app, method, path, headers);
      expect(got.status, `${method} ${path}`).toBe(want.status);
      expect(got.headers, `${method} ${path} ${JSON.stringify(extra)}`).toEqual(want.headers);
      expect(got.body.equals(want.body), `${method} ${path}: body`).toBe(true);
    }
    // Without the token: 401 from the framework's auth hook (which runs before this test's counting hook).
    const denied = await overSocket(s.port, 'GET', '/v1/sessions/a/page', { 'x-via': 'socket' });
    expect(denied.status).toBe(401);
    expect(denied.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(JSON.parse(denied.body.toString())).toMatchObject({ error: { code: 'unauthorized' } });
  });

  it('counts what it answers in the same metrics as the route', async () => {
    const metric = async (re: RegExp) => Number(re.exec(await (await fetch(`http://127.0.0.1:${s.port}/metrics`, { headers: AUTH })).text())?.[1] ?? 0);
    const served = /^session_pager_pages_served_total\{route="\/v1\/sessions\/:id\/page"\} (\d+)$/m;
    const ok = /^session_pager_http_request_duration_seconds_count\{method="GET",route="\/v1\/sessions\/:id\/page",status_code="200"\} (\d+)$/m;
    const notModified = /^session_pager_not_modified_total\{route="\/v1\/sessions\/:id\/page"\} (\d+)$/m;
    const notFound = /^session_pager_errors_total\{code="session_not_found"\} (\d+)$/m;
    const bytes = /^session_pager_http_response_bytes_total\{route="\/v1\/sessions\/:id\/page"\} (\d+)$/m;
    const [s0, ok0, nm0, nf0, b0] = [await metric(served), await metric(ok), await metric(notModified), await metric(notFound), await metric(bytes)];
    const before = s.framework();
    const page = await overSocket(s.port, 'GET', '/v1/sessions/a/page?maxMessages=9', { ...AUTH, 'x-via': 'socket' });
    await overSocket(s.port, 'GET', '/v1/sessions/a/page?maxMessages=9', { ...AUTH, 'x-via': 'socket', 'if-none-match': page.headers.etag as string });
    await overSocket(s.port, 'GET', '/v1/sessions/gone/page', { ...AUTH, 'x-via': 'socket' });
    expect(s.framework()).toBe(before);
    await until('the responses counted', async () => (await metric(ok)) === ok0 + 1 || undefined);
    expect(await metric(served)).toBe(s0 + 1);
    expect(await metric(notModified)).toBe(nm0 + 1);
    expect(await metric(notFound)).toBe(nf0 + 1);
    expect(await metric(bytes)).toBeGreaterThan(b0 + page.body.length);
  });
});

describe('the direct page path at the log level info (real sockets)', () => {
  it("writes the request log line the framework writes for the same request: keys in the same order, level, msg, reqId, the page's facts", async () => {
    const ts = await tempStore(1);
    await seedSession(ts.store, 'l', 120, 60);
    const { lines, stream } = logLines();
    const s = await serve(ts.store, ts, { logger: { level: 'info', stream } });
    try {
      const completed = (reqId: string) => until(`the log line of ${reqId}`, async () => lines.find((l) => l.reqId === reqId && l.msg === 'request completed'));
      const etag = (await throughFramework(s.app, 'GET', '/v1/sessions/l/page?maxMessages=4&throughSeq=100', AUTH)).headers.etag as string;
      const cases: [string, Record<string, string>, number][] = [
        ['/v1/sessions/l/page?maxMessages=4&throughSeq=100', { 'accept-encoding': 'gzip' }, 200],
        ['/v1/sessions/l/page', {}, 200],
        ['/v1/sessions/l/page?maxMessages=4&throughSeq=100', { 'if-none-match': etag }, 304],
        ['/v1/sessions/nosuch/page?maxMessages=4', {}, 404],
      ];
      for (const [i, [path, extra, status]] of cases.entries()) {
        const before = s.framework();
        const direct = await overSocket(s.port, 'GET', path, { ...AUTH, ...extra, 'x-request-id': `direct-${i}`, 'x-via': 'socket' });
        expect(s.framework() - before, `${path}: through the framework`).toBe(0);
        const framework = await throughFramework(s.app, 'GET', path, { ...AUTH, ...extra, 'x-request-id': `framework-${i}` });
        expect([direct.status, framework.status], path).toEqual([status, status]);
        const [d, f] = [await completed(`direct-${i}`), await completed(`framework-${i}`)];
        expect(Object.keys(d), `${path}: the line's keys`).toEqual(Object.keys(f));
        const same = (l: Record<string, unknown>) => ({ level: l.level, msg: l.msg, method: l.method, url: l.url, statusCode: l.statusCode, sessionId: l.sessionId, page: l.page });
        expect(same(d), path).toEqual(same(f));
        expect(d.level, path).toBe(30);
        expect(d.statusCode, path).toBe(status);
        expect(typeof d.durationMs, path).toBe('number');
        if (status === 200) expect(d.page, path).toMatchObject({ bytes: expect.any(Number) as number, frames: expect.any(Number) as number });
        else expect(d.page, path).toBeUndefined();
        expect(d.sessionId, path).toBe(/sessions\/([^/]+)\//.exec(path)?.[1]);
        // One line a request, from either path.
        expect(lines.filter((l) => l.reqId === `direct-${i}`).length, path).toBe(1);
      }
    } finally {
      await s.app.close();
      await ts.cleanup();
    }
  });
});

describe('the direct page path at the log level info: a client that leaves (real sockets)', () => {
  it("writes the framework's line for a client that left before its page was built", async () => {
    const ts = await tempStore(1);
    await seedSession(ts.store, 'g', 60, 60);
    let gate: Promise<void> = Promise.resolve();
    const gated = gatedPages(ts.store, () => gate);
    const { lines, stream } = logLines();
    const s = await serve(gated.store, ts, { logger: { level: 'info', stream } });
    let open!: () => void;
    gate = new Promise((r) => (open = r));
    try {
      // The same page asked directly and through the framework (a percent-encoded id, which the direct path leaves to it).
      const asks: [string, string, number][] = [
        ['/v1/sessions/g/page?maxMessages=3', 'gone-direct', 0],
        ['/v1/sessions/%67/page?maxMessages=3', 'gone-framework', 1],
      ];
      const found: Record<string, unknown>[] = [];
      for (const [i, [path, reqId, viaFramework]] of asks.entries()) {
        const before = s.framework();
        const req = httpRequest({ host: '127.0.0.1', port: s.port, path, headers: { ...AUTH, 'x-request-id': reqId, 'x-via': 'socket' } });
        req.on('error', () => undefined);
        req.end();
        await until(`${reqId} in the store`, () => gated.entered() === i + 1);
        expect(s.framework() - before, path).toBe(viaFramework);
        req.destroy();
        found.push(await until(`the line of ${reqId}`, async () => lines.find((l) => l.reqId === reqId && l.msg === 'request aborted by the client')));
      }
      const [d, f] = found as [Record<string, unknown>, Record<string, unknown>];
      expect(Object.keys(d)).toEqual(Object.keys(f));
      expect({ level: d.level, method: d.method, sessionId: d.sessionId, page: d.page }).toEqual({ level: f.level, method: f.method, sessionId: f.sessionId, page: f.page });
      expect(d.level).toBe(30);
      expect(d.sessionId).toBe('g');
    } finally {
      open();
      await s.app.close();
      await ts.cleanup();
    }
  });
});

describe('the direct page path: admission, timeouts and failures (real sockets)', () => {
  it('queues a page when the slots are full and serves it when one frees; sheds it 503 + Retry-After when its wait is up', async () => {
    const ts = await tempStore(1);
    await seedSession(ts.store, 'q', 200, 200);
    let gate: Promise<void> = Promise.resolve();
    const gated = gatedPages(ts.store, () => gate);
    // A queued request waits 3 s at most, whatever the pages' times say (and is queued, not shed at
    // once, unless a page took 1.5 s).
    const s = await serve(gated.store, ts, { admission: { maxInFlight: 1, minQueueMs: 3000, maxQueueMs: 3000 }, retryAfterSeconds: 3 });
    try {
      // The store's first page (its first open) before the gate closes: the held page below is then quick once let through.
      expect((await overSocket(s.port, 'GET', '/v1/sessions/q/page?maxMessages=2', { ...AUTH, 'x-via': 'socket' })).status).toBe(200);
      let open!: () => void;
      gate = new Promise((r) => (open = r));
      const first = overSocket(s.port, 'GET', '/v1/sessions/q/page?maxMessages=3', { ...AUTH, 'x-via': 'socket' });
      await until('the first page in the store', () => gated.entered() === 2);
      const second = overSocket(s.port, 'GET', '/v1/sessions/q/page?maxMessages=4', { ...AUTH, 'x-via': 'socket' });
      await until('the second queued', () => s.app.pagerState.admission?.queued === 1);
      open();
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
      // The slot held past the queue's bound: the queued request is shed.
      gate = new Promise((r) => (open = r));
      const third = overSocket(s.port, 'GET', '/v1/sessions/q/page?maxMessages=5', { ...AUTH, 'x-via': 'socket' });
      await until('the third page in the store', () => gated.entered() === 4);
      const shed = await overSocket(s.port, 'GET', '/v1/sessions/q/page?maxMessages=6', { ...AUTH, 'x-via': 'socket', 'x-request-id': 'shed-2' });
      expect(shed.status).toBe(503);
      expect(shed.headers['retry-after']).toBe('3');
      expect(shed.headers['x-request-id']).toBe('shed-2');
      expect(JSON.parse(shed.body.toString())).toMatchObject({ error: { code: 'overloaded' } });
      open();
      expect((await third).status).toBe(200);
      expect(s.framework()).toBe(0);
      await until('the slot given back', () => s.app.pagerState.admission?.running === 0);
    } finally {
      await s.app.close();
      await ts.cleanup();
    }
  });

  it("answers a page that outlives the route's timeout 503 overloaded with Retry-After, and a failing store 500 internal, as the framework does", async () => {
    const ts = await tempStore(1);
    await seedSession(ts.store, 't', 100, 100);
    let mode: 'hang' | 'throw' = 'hang';
    const failing: Store = new Proxy(ts.store, {
      get(target, prop) {
        if (prop === 'pageBuffer') return () => (mode === 'hang' ? new Promise(() => undefined) : Promise.reject(new Error('disk on fire')));
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const s = await serve(failing, ts, { pageTimeoutMs: 200, retryAfterSeconds: 4 });
    try {
      for (const m of ['hang', 'throw'] as const) {
        mode = m;
        const got = await overSocket(s.port, 'GET', '/v1/sessions/t/page?maxMessages=3', { ...AUTH, 'x-via': 'socket', 'x-request-id': 'r-1' });
        const want = await throughFramework(s.app, 'GET', '/v1/sessions/t/page?maxMessages=3', { ...AUTH, 'x-request-id': 'r-1' });
        expect(got.status).toBe(m === 'hang' ? 503 : 500);
        expect(got.status).toBe(want.status);
        expect(got.headers).toEqual(want.headers);
        expect(got.body.toString()).toBe(want.body.toString());
      }
      expect(s.framework()).toBe(0);
      await until('the slots given back', () => s.app.pagerState.admission?.running === 0);
    } finally {
      await s.app.close();
      await ts.cleanup();
    }
  });
});

/** A log destination that keeps each JSON line the server writes, parsed, in `lines`. */
function logLines(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  return { lines, stream };
}
