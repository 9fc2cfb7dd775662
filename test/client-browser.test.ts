/**
 * `session-pager/client` in a real browser (issue 15: "works in Node and browsers, no Node-only
 * imports"). The built client is bundled for the browser with vite, as an application would
 * bundle it: the bundle must come out with no warning, no stub and no import left (vite
 * replaces a Node built-in it meets, `node:fs` say, by a `__vite-browser-external` stub, and
 * pulls in a polyfill for a package like `buffer`; checked by hand: a `readFileSync` called in
 * src/client/sse.ts fails the bundle check). Headless Chromium then runs the bundle against a
 * real server process, through a same-origin proxy of this test that also serves the page and
 * the bundle: it walks random logs and a session written through the API newest-first (every
 * row expanded and checked, records canonical), reads a range, follows a session while
 * appending to it itself, through a cut of the first follow connection mid-frame (resumed with
 * Last-Event-ID), and maps a server error to its SPEC code. What it saw is posted back and must
 * be exactly the logs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionPagerClient, type SessionEvent } from '../src/client/index.js';
import { makeEvents } from './server-helpers.js';
import { findChromium, openInChromium } from './helpers/chromium.js';
import { randomLog } from './helpers/random-log.js';
import { ROOT, startServerProcess, type ServerProcess } from './helpers/serve-process.js';

const CHROMIUM = findChromium();

/** The built client (`dist/client/index.js`, what `session-pager/client` resolves to) bundled for a browser. */
async function bundleClient(): Promise<{ code: string; warnings: string[]; imports: string[] }> {
  const { build } = await import('vite');
  const warnings: string[] = [];
  const out = await build({
    configFile: false,
    logLevel: 'silent',
    root: ROOT,
    build: {
      write: false,
      minify: false,
      target: 'es2022',
      lib: { entry: join(ROOT, 'dist/client/index.js'), formats: ['es'], fileName: 'client' },
      rollupOptions: { onwarn: (w: { message: string }) => void warnings.push(w.message) },
    },
  });
  const chunks = (Array.isArray(out) ? out : [out]).flatMap((o) => ('output' in o ? o.output : [])).filter((c) => c.type === 'chunk');
  expect(chunks).toHaveLength(1);
  const chunk = chunks[0] as { code: string; imports: string[]; dynamicImports: string[] };
  return { code: chunk.code, warnings, imports: [...chunk.imports, ...chunk.dynamicImports] };
}

let dir: string;
let server: ServerProcess;
/** Each session the browser walks, and its events: random logs (every packing edge) and one written through the API. */
const expected = new Map<string, SessionEvent[]>();
const SEEDS = [11, 12, 43, 46, 47, 48];
const PLAIN = makeEvents(0, 600);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sp-client-browser-'));
  for (const seed of SEEDS) expected.set(`random-${seed}`, (await randomLog(seed, { dataDir: dir, id: `random-${seed}`, maxPieces: 200 })).events);
  server = await startServerProcess({ dir, workers: 1 });
  const c = new SessionPagerClient({ baseUrl: server.url, token: server.token });
  await c.create('plain', {});
  for (let at = 0; at < PLAIN.length; at += 150) await c.append('plain', PLAIN.slice(at, at + 150));
  expected.set('plain', PLAIN);
  await c.create('live', {});
  await c.append('live', makeEvents(0, 40));
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Appended by the browser, three batches, while it follows. */
const BATCHES = [makeEvents(40, 20), makeEvents(60, 20), makeEvents(80, 20)];
const LAST = 99;

const pageScript = (token: string, ids: string[]) => `
import { SessionPagerClient } from '/client.js';
const post = (name, body) => fetch('/result?name=' + name, { method: 'POST', body });
const BATCHES = ${JSON.stringify(BATCHES)};
(async () => {
  const c = new SessionPagerClient({ baseUrl: location.origin, token: ${JSON.stringify(token)}, checkCanonical: true });
  const walked = {};
  let pages = 0;
  for (const id of ${JSON.stringify(ids)}) {
    for (const maxMessages of [1, 3]) {
      const chunks = [];
      for await (const p of c.pages(id, { maxMessages })) { chunks.push(p.events); pages++; }
      walked[id + '/' + maxMessages] = chunks.reverse().flat();
    }
  }
  const range = await c.readRange('plain', 17, 345, { maxMessages: 2 });
  let missing = null;
  try { await c.page('no-such-session'); } catch (e) { missing = { name: e.name, code: e.code, status: e.status }; }
  const f = c.follow('live', { maxMessages: 3, retryMs: 50 });
  const followed = [];
  let snapshotFrom = null;
  for await (const item of f) {
    if (item.kind === 'snapshot') {
      snapshotFrom = item.page.fromSeq;
      followed.push(...item.events);
      (async () => {
        for (const b of BATCHES) { await c.append('live', b); await new Promise((r) => setTimeout(r, 60)); }
      })().catch((e) => post('error', 'append: ' + e));
    } else followed.push(item.event);
    if (followed.at(-1)?.seq === ${LAST}) break;
  }
  await post('result', JSON.stringify({ pages, walked, range, missing, snapshotFrom, followed, stats: f.stats }));
})().catch((e) => post('error', String(e && e.stack || e)));
`;

describe('session-pager/client in a browser', () => {
  it('Chromium is there to check with (required in CI: .ci/run installs chromium-headless-shell)', () => {
    if (process.env.CI) expect(CHROMIUM, 'chromium must be installed in CI').not.toBeNull();
  });

  it('bundles for a browser with no warning, no stub of a Node built-in and no import left', async () => {
    const b = await bundleClient();
    expect(b.warnings).toEqual([]);
    expect(b.imports).toEqual([]);
    // Vite stubs a Node built-in as `__vite-browser-external` (its warning is not reported under vitest).
    expect(b.code).not.toMatch(/__vite[-_]browser[-_]external|["']node:[a-z_/]+["']/);
    expect(b.code).toMatch(/export \{[^}]*\bSessionPagerClient\b/);
  }, 60_000);

  it('walks, reads a range, follows through a cut mid-frame (Last-Event-ID resume) and maps errors, in Chromium', async () => {
    if (CHROMIUM === null) return;
    const bundle = (await bundleClient()).code;
    const results = new Map<string, string>();
    let allIn!: () => void;
    const done = new Promise<void>((r) => (allIn = r));
    const upstream = new URL(server.url);
    const follows: { lastEventId: string | undefined }[] = [];
    let cuts = 0;
    const proxy: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><title>client</title><script type="module">${pageScript(server.token, [...expected.keys()])}</script>`);
        return;
      }
      if (url.pathname === '/client.js') {
        res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
        res.end(bundle);
        return;
      }
      if (url.pathname === '/result') {
        const parts: Buffer[] = [];
        req.on('data', (c: Buffer) => parts.push(c));
        req.on('end', () => {
          res.end('ok');
          results.set(url.searchParams.get('name') ?? '?', Buffer.concat(parts).toString('utf8'));
          allIn();
        });
        return;
      }
      if (!url.pathname.startsWith('/v1/')) {
        res.writeHead(404);
        res.end();
        return;
      }
      // The API, passed on with the browser's own headers (the client sets Authorization itself).
      const follow = url.pathname.endsWith('/follow');
      const headers = { ...req.headers, host: upstream.host, ...(follow ? { 'accept-encoding': 'identity' } : {}) };
      if (follow) follows.push({ lastEventId: req.headers['last-event-id'] as string | undefined });
      const cutThis = follow && follows.length === 1;
      const up = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        if (!cutThis) {
          ur.pipe(res);
          return;
        }
        // The first follow stream: passed on until 40 bytes past the snapshot frame, i.e. into the
        // first live event's frame (events flow only once the browser has the snapshot and appends),
        // then the connection is cut.
        let seen = '';
        ur.on('data', (c: Buffer) => {
          const before = seen.length;
          seen += c.toString('latin1');
          const snap = seen.indexOf('event: snapshot');
          const end = snap === -1 ? -1 : seen.indexOf('\n\n', snap);
          if (end === -1 || seen.length < end + 2 + 40) {
            res.write(c);
            return;
          }
          res.write(c.subarray(0, end + 2 + 40 - before));
          cuts++;
          ur.destroy();
          res.destroy();
        });
        ur.on('end', () => res.end());
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as { port: number }).port;
    const browser = openInChromium(CHROMIUM, `http://127.0.0.1:${port}/`);
    try {
      await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error('the browser did not report back in 90 s')), 90_000))]);
      expect(results.get('error')).toBeUndefined();
      const r = JSON.parse(results.get('result') as string) as {
        pages: number;
        walked: Record<string, SessionEvent[]>;
        range: SessionEvent[];
        missing: unknown;
        snapshotFrom: number;
        followed: SessionEvent[];
        stats: { reconnects: number; duplicates: number; gaps: number };
      };
      expect(r.pages).toBeGreaterThan(100);
      expect(Object.keys(r.walked)).toHaveLength(2 * expected.size);
      for (const [id, events] of expected) for (const mm of [1, 3]) expect(r.walked[`${id}/${mm}`], `${id} by ${mm}`).toEqual(events);
      expect(r.range).toEqual(PLAIN.slice(17, 345));
      expect(r.missing).toEqual({ name: 'ClientError', code: 'session_not_found', status: 404 });
      // Every event from the snapshot's first to the last appended, once, in order, across the cut.
      expect(r.followed).toEqual(makeEvents(r.snapshotFrom, LAST + 1 - r.snapshotFrom));
      expect(cuts).toBe(1);
      expect(r.stats.reconnects).toBeGreaterThanOrEqual(1);
      expect(follows.length).toBeGreaterThanOrEqual(2);
      expect(follows[0]?.lastEventId).toBeUndefined();
      expect(Number(follows[1]?.lastEventId)).toBeGreaterThanOrEqual(39);
    } finally {
      await browser.close();
      proxy.closeAllConnections();
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  }, 150_000);
});
