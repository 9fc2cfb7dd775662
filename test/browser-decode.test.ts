/**
 * A real browser's decoder (issue 12): headless Chromium (Debian's
 * `chromium-headless-shell`, or `chromium`; .ci/run installs the former)
 * fetches a page from a real server process with its own Accept-Encoding
 * (`gzip, deflate, br, zstd`: it gets zstd), then narrowed to gzip and to
 * br, and follows the session with an EventSource (a coded stream); each
 * decoded body is posted back and must be exactly the identity page. The
 * browser reaches the server through a loopback proxy of this test that
 * only adds the bearer token (a page cannot set Authorization on a plain
 * navigation or an EventSource) and narrows Accept-Encoding where asked,
 * passing the coded bytes through untouched.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findChromium, openInChromium } from './helpers/chromium.js';
import { startServerProcess, type ServerProcess } from './helpers/serve-process.js';
import { rawRequest } from './server-helpers.js';

const CHROMIUM = findChromium();

let server: ServerProcess;
let auth: string;

beforeAll(async () => {
  server = await startServerProcess({ workers: 2 });
  auth = `Bearer ${server.token}`;
  const put = await rawRequest(`${server.url}/v1/sessions/web`, { method: 'PUT', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{}' });
  expect(put.status).toBe(201);
  const events: Record<string, unknown>[] = [{ type: 'user/message', seq: 0, time: 0, data: { text: 'hello, browser — ünïcode too' } }];
  for (let k = 1; k < 30_000; k++) events.push({ type: 'assistant/chunk', seq: k, time: k, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: ` t${(k * 31) % 997}` } } });
  for (let at = 0; at < events.length; at += 10_000) {
    const r = await rawRequest(`${server.url}/v1/sessions/web/events`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ events: events.slice(at, at + 10_000) }) });
    expect(r.status).toBe(200);
  }
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

const PAGE = '/v1/sessions/web/page?maxMessages=5';
/** What the browser's script asks (via the proxy) and the Accept-Encoding sent on (null: the browser's own). */
const ROUTES: Record<string, { path: string; acceptEncoding: string | null }> = {
  '/page': { path: PAGE, acceptEncoding: null },
  '/page-gzip': { path: PAGE, acceptEncoding: 'gzip' },
  '/page-br': { path: PAGE, acceptEncoding: 'br' },
  '/follow': { path: '/v1/sessions/web/follow?maxMessages=5', acceptEncoding: null },
};

const SCRIPT = `
const post = (name, body) => fetch('/result?name=' + name, { method: 'POST', body });
(async () => {
  for (const name of ['page', 'page-gzip', 'page-br']) {
    const r = await fetch('/' + name);
    await post(name, await r.arrayBuffer());
  }
  const es = new EventSource('/follow');
  es.addEventListener('snapshot', (e) => { es.close(); post('follow', e.data); });
})().catch((e) => post('error', String(e)));
`;

describe('a real browser decodes what the server sends', () => {
  it('Chromium is there to check with (required in CI: .ci/run installs chromium-headless-shell)', () => {
    if (process.env.CI) expect(CHROMIUM, 'chromium must be installed in CI').not.toBeNull();
  });

  it('its own Accept-Encoding gets zstd; gzip and br narrowed; a follow stream: every body it decoded is the identity page', async () => {
    if (CHROMIUM === null) return;
    const identity = (await rawRequest(`${server.url}${PAGE}`, { headers: { authorization: auth } })).body;
    expect(identity.length).toBeGreaterThan(200_000);
    const results = new Map<string, Buffer>();
    const sent = new Map<string, { asked: string; coding: string }>();
    let allIn!: () => void;
    const done = new Promise<void>((r) => (allIn = r));
    const upstream = new URL(server.url);
    const proxy: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><title>decode</title><script>${SCRIPT}</script>`);
        return;
      }
      if (url.pathname === '/result') {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          res.end('ok');
          results.set(url.searchParams.get('name') ?? '?', Buffer.concat(chunks));
          if (results.has('follow') || results.has('error')) allIn();
        });
        return;
      }
      const route = ROUTES[url.pathname];
      if (route === undefined) {
        res.writeHead(404);
        res.end();
        return;
      }
      const asked = route.acceptEncoding ?? String(req.headers['accept-encoding'] ?? '');
      const up = httpRequest({ host: upstream.hostname, port: upstream.port, path: route.path, headers: { authorization: auth, accept: String(req.headers.accept ?? '*/*'), 'accept-encoding': asked } }, (ur) => {
        sent.set(url.pathname.slice(1), { asked, coding: String(ur.headers['content-encoding'] ?? 'identity') });
        // The coded bytes as they come (a stream stays a stream).
        const headers: Record<string, string> = { 'content-type': String(ur.headers['content-type']) };
        if (ur.headers['content-encoding'] !== undefined) headers['content-encoding'] = String(ur.headers['content-encoding']);
        res.writeHead(ur.statusCode ?? 502, headers);
        ur.pipe(res);
        res.on('close', () => ur.destroy());
      });
      up.on('error', () => res.destroy());
      up.end();
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as { port: number }).port;
    const browser = openInChromium(CHROMIUM, `http://127.0.0.1:${port}/`);
    try {
      await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error(`the browser did not report back in 90 s (got ${[...results.keys()].join(', ')})`)), 90_000))]);
      expect(results.get('error')?.toString()).toBeUndefined();
      // What Chromium asked for itself, and what each response was coded in.
      expect(sent.get('page')?.asked).toMatch(/zstd/);
      expect([...sent.entries()].map(([k, v]) => [k, v.coding])).toEqual([
        ['page', 'zstd'],
        ['page-gzip', 'gzip'],
        ['page-br', 'br'],
        ['follow', 'zstd'],
      ]);
      for (const name of ['page', 'page-gzip', 'page-br']) expect(results.get(name)?.equals(identity), `${name} as Chromium decoded it`).toBe(true);
      // The page's bytes exactly as they stand in the snapshot's data: `{"cursor":N,"page":<page>}`.
      const data = (results.get('follow') as Buffer).toString('utf8');
      expect(data.slice(data.indexOf('"page":') + 7, -1)).toBe(identity.toString('utf8'));
    } finally {
      await browser.close();
      proxy.closeAllConnections();
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  }, 150_000);
});
