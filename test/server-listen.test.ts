/**
 * The service on a real listening socket (127.0.0.1, port 0): compression on
 * the wire, connection limit, graceful shutdown with a page and an append in
 * flight, and the `serve` command (token rules, demo corpus, SIGTERM).
 */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { existsSync, promises as fsp } from 'node:fs';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer, shutdown } from '../src/main/server/index.js';
import { isLoopback, parseServeArgs, startServe } from '../src/main/cli/serve.js';
import { CliError } from '../src/main/cli/common.js';
import { openStore } from '../src/main/store.js';
import type { Store } from '../src/main/store-types.js';
import { makeEvents, openSse, rawRequest, seedSession, sleep, tempStore, until, type TempStore } from './server-helpers.js';

const TOKEN = 'listen-token-123456';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const ROOT = resolve(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'session-pager.js');

let ts: TempStore;
const cleanups: (() => Promise<void>)[] = [];

async function listen(store: Store, opts: Parameters<typeof buildServer>[1] = {}): Promise<{ app: FastifyInstance; base: string }> {
  const app = buildServer(store, { token: TOKEN, maxEventLoopLagMs: 0, followShedFromMs: 0, ...opts });
  await app.listen({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => app.close());
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

beforeAll(async () => {
  ts = await tempStore(2);
  await seedSession(ts.store, 'wire', 2000, 500);
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await ts.cleanup();
});

describe('on the wire', () => {
  it('compresses with gzip and brotli; both decode to the page the store gives', async () => {
    const { base } = await listen(ts.store);
    const url = `${base}/v1/sessions/wire/page?maxMessages=100`;
    const plain = await rawRequest(url, { headers: AUTH });
    expect(plain.status).toBe(200);
    expect(plain.body.equals((await ts.store.pageBuffer('wire', { maxMessages: 100 })).body)).toBe(true);
    const gz = await rawRequest(url, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
    const br = await rawRequest(url, { headers: { ...AUTH, 'accept-encoding': 'br;q=1, gzip;q=0.5' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
    expect(JSON.parse(plain.body.toString())).toEqual(await ts.store.page('wire', { maxMessages: 100 }));
    // A follow stream is coded as a whole (issue 12), each write a piece ending on a flush, so
    // no event waits in a compressor (test/http-coded-process.test.ts decodes one as it arrives);
    // a client that accepts no coding gets it uncoded.
    const coded = await openSse(`${base}/v1/sessions/wire/follow?maxMessages=1`, { ...AUTH, 'accept-encoding': 'gzip, br' });
    expect(coded.res.headers['content-encoding']).toBe('gzip');
    coded.close();
    const c = await openSse(`${base}/v1/sessions/wire/follow?maxMessages=1`, AUTH);
    expect(c.res.headers['content-encoding']).toBeUndefined();
    await c.waitFor('snapshot', (e) => e.length === 1);
    c.close();
  });

  it('logs and counts a request the client abandons before the page is ready', async () => {
    const lines: { msg: string; sessionId?: string }[] = [];
    const stream = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
        cb();
      },
    });
    const slow: Store = new Proxy(ts.store, {
      get(target, prop) {
        if (prop === 'pageBuffer') return async (...args: unknown[]) => (await sleep(300), target.pageBuffer(...(args as Parameters<Store['pageBuffer']>)));
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const { app, base } = await listen(slow, { logger: { level: 'info', stream } as never });
    const req = httpRequest(`${base}/v1/sessions/wire/page`, { headers: AUTH });
    req.on('error', () => undefined);
    req.end();
    await sleep(100);
    req.destroy();
    await until('the abort log line', () => lines.find((l) => l.msg === 'request aborted by the client'));
    expect(lines.find((l) => l.msg === 'request aborted by the client')!.sessionId).toBe('wire');
    await sleep(400);
    expect(await app.pagerState.metrics.registry.metrics()).toMatch(/session_pager_http_aborted_total\{route="\/v1\/sessions\/:id\/page"\} 1/);
  });

  it('limits concurrent connections', async () => {
    const { base, app } = await listen(ts.store, { maxConnections: 2 });
    const port = (app.server.address() as AddressInfo).port;
    const open = (): Promise<Socket> =>
      new Promise((res, rej) => {
        const s = connect(port, '127.0.0.1', () => res(s));
        s.on('error', rej);
      });
    const a = await open();
    const b = await open();
    await sleep(50);
    const c = await open();
    // Past the limit: answered 503 overloaded and closed by the server, not reset (connection-limit.ts).
    let answer = '';
    let error: string | null = null;
    c.on('data', (d: Buffer) => (answer += d.toString()));
    const closed = await new Promise<boolean>((res) => {
      c.on('close', () => res(true));
      c.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
      c.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      setTimeout(() => res(false), 2000);
    });
    expect(closed).toBe(true);
    expect(error).toBeNull();
    expect(answer).toMatch(/^HTTP\/1\.1 503 [^]*\r\nretry-after: 1\r\n[^]*"code":"overloaded"/);
    a.destroy();
    b.destroy();
    await sleep(50);
    const ok = await rawRequest(`${base}/healthz`);
    expect(ok.status).toBe(200);
  });

  it('shuts down gracefully: the page and the append in flight both complete, then the store closes', async () => {
    const t2 = await tempStore(1);
    cleanups.push(t2.cleanup);
    await seedSession(t2.store, 'g', 1000, 250);
    const entered: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const real = t2.store;
    const slow: Store = new Proxy(real, {
      get(target, prop) {
        if (prop === 'pageBuffer' || prop === 'append') {
          return async (...args: unknown[]) => {
            entered.push(prop);
            await gate;
            return (Reflect.get(target, prop) as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          };
        }
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const app = buildServer(slow, { token: TOKEN, maxEventLoopLagMs: 0, followShedFromMs: 0 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const page = rawRequest(`${base}/v1/sessions/g/page?maxMessages=10`, { headers: AUTH });
    const append = rawRequest(`${base}/v1/sessions/g/events`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ events: makeEvents(1000, 50) }) });
    await until('both requests in the store', () => entered.length === 2);
    const closing = shutdown(app, slow);
    await sleep(100);
    // No new connections once closing.
    await expect(rawRequest(`${base}/healthz`)).rejects.toThrow();
    release();
    const [p, a] = await Promise.all([page, append]);
    await closing;
    expect(p.status).toBe(200);
    expect(JSON.parse(p.body.toString())).toMatchObject({ sessionId: 'g', throughSeq: 999, toSeq: 1000 });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body.toString())).toEqual({ fromSeq: 1000, toSeq: 1050, nextSeq: 1050 });
    await expect(real.list()).resolves.toBeDefined();
    await expect(real.append('g', makeEvents(1050, 1))).rejects.toMatchObject({ code: 'internal' });
    // The append was durable: a new store sees it.
    const again = await openStore({ dataDir: t2.dir, workers: 1 });
    expect((await again.info('g')).nextSeq).toBe(1050);
    await again.close();
  });
});

describe('serve command', () => {
  it('knows loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopback(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'example.com', '::ffff:10.0.0.1']) expect(isLoopback(h), h).toBe(false);
  });

  it('refuses a non-loopback host without a token; takes the token from --token or SESSION_PAGER_TOKEN', () => {
    expect(() => parseServeArgs(['--host', '0.0.0.0'], {})).toThrow(CliError);
    expect(() => parseServeArgs(['--host', '0.0.0.0'], {})).toThrow(/refusing to listen on non-loopback address 0\.0\.0\.0 without a token/);
    expect(parseServeArgs(['--host', '0.0.0.0', '--token', 'abc'], {}).token).toBe('abc');
    expect(parseServeArgs(['--host', '0.0.0.0'], { SESSION_PAGER_TOKEN: 'from-env' }).token).toBe('from-env');
    expect(parseServeArgs(['--token', 'flag'], { SESSION_PAGER_TOKEN: 'env' }).token).toBe('flag');
    const d = parseServeArgs([], {});
    expect(d).toMatchObject({ host: '127.0.0.1', port: 8080, token: null, dataDir: './data', demo: false });
    expect(parseServeArgs(['--demo'], {}).dataDir).toBe('./.demo-data');
    expect(parseServeArgs(['--demo', '--data', '/x'], {}).dataDir).toBe('/x');
    expect(() => parseServeArgs(['--port', 'http'], {})).toThrow(CliError);
    expect(() => parseServeArgs(['--port', '70000'], {})).toThrow(CliError);
    expect(() => parseServeArgs(['--token', ''], {})).toThrow(CliError);
    expect(() => parseServeArgs(['--bogus'], {})).toThrow(CliError);
  });

  it('generates a demo corpus on first start, makes a token, prints URL, token and a working curl', async () => {
    const dir = await fsp.mkdtemp(join(tmpdir(), 'sp-demo-'));
    cleanups.push(() => fsp.rm(dir, { recursive: true, force: true }));
    const plan = [
      { id: 'demo-a', events: 300, tailEvents: 0, format: 'jsonl' as const, seed: 1 },
      { id: 'demo-b', events: 3000, tailEvents: 1000, format: 'binary' as const, seed: 2 },
    ];
    let out = '';
    const sink = { write: (s: string) => ((out += s), true) } as unknown as NodeJS.WritableStream;
    const cfg = { ...parseServeArgs(['--demo', '--data', dir, '--port', '0', '--log-level', 'silent'], {}), demoPlan: plan };
    const s1 = await startServe(cfg, {}, sink);
    try {
      // It listens first; the demo corpus is made during the warm-up.
      await s1.ready;
      expect(s1.token).toMatch(/^[A-Za-z0-9_-]{24,}$/);
      expect(out).toContain(`listening on ${s1.url}`);
      expect(out).toContain(`token: ${s1.token}`);
      expect(out).toMatch(/generated 2 sessions, 3,300 events/);
      const curl = out.split('\n').find((l) => l.includes('/page?'))!;
      const m = /-H 'Authorization: Bearer ([^']+)' '([^']+)'/.exec(curl)!;
      expect(m[1]).toBe(s1.token);
      const r = await fetch(m[2]!, { headers: { authorization: `Bearer ${m[1]}` } });
      expect(r.status).toBe(200);
      const page = (await r.json()) as { sessionId: string; throughSeq: number };
      expect(page).toMatchObject({ sessionId: 'demo-b', throughSeq: 2999 });
      expect((await fsp.stat(join(dir, '.demo-token'))).mode & 0o777).toBe(0o600);
    } finally {
      await s1.close();
    }
    // Second start: reuses corpus and token.
    out = '';
    const s2 = await startServe(cfg, {}, sink);
    try {
      await s2.ready;
      expect(out).toMatch(/demo corpus: 2 sessions, 3,300 events/);
      expect(s2.token).toBe(s1.token);
      expect((await (await fetch(`${s2.url}/v1/sessions`, { headers: { authorization: `Bearer ${s2.token}` } })).json()) as unknown).toMatchObject({ sessions: [{ id: 'demo-a' }, { id: 'demo-b' }] });
    } finally {
      await s2.close();
    }
  });

  it('exits non-zero with one line on a non-loopback host without a token; shuts down on SIGTERM, ending follow streams', async () => {
    expect(existsSync(join(ROOT, 'dist', 'main', 'cli', 'serve.js'))).toBe(true);
    const refused = spawn(process.execPath, [BIN, 'serve', '--host', '0.0.0.0', '--data', ts.dir], { env: { ...process.env, SESSION_PAGER_TOKEN: '' } });
    let err = '';
    refused.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => refused.on('exit', r));
    expect(code).not.toBe(0);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/refusing to listen on non-loopback address 0\.0\.0\.0 without a token/);

    const child = spawn(process.execPath, [BIN, 'serve', '--data', ts.dir, '--port', '0', '--log-level', 'warn'], { env: { ...process.env, SESSION_PAGER_TOKEN: TOKEN } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', r));
    const url = await until('the banner', () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1], 20_000);
    // A server past its warm-up (shutting down during the warm-up waits for it).
    await until('ready', async () => (await rawRequest(`${url}/readyz`)).status === 200, 60_000, 100);
    const s = await openSse(`${url}/v1/sessions/wire/follow?maxMessages=1`, AUTH);
    await s.waitFor('snapshot', (e) => e.length === 1);
    const page = await rawRequest(`${url}/v1/sessions/wire/page`, { headers: AUTH });
    expect(page.status).toBe(200);
    const tKill = Date.now();
    child.kill('SIGTERM');
    await s.ended;
    expect(s.events.at(-1)!.event).toBe('end');
    expect(await exited).toBe(0);
    expect(Date.now() - tKill).toBeLessThan(3000);
  });
});
