/**
 * Compressed pages from a real `session-pager serve` process (issue 12): a
 * page large enough that its slices are coded by the workers, in every
 * coding, decodes to exactly the identity page by every decoder we have
 * (zlib, fzstd, the gzip and zstd CLIs, curl --compressed); a client that
 * accepts nothing gets identity; a follow stream is coded as a whole (its
 * snapshot's page as the page path coded it, each event a piece after it)
 * and decodes as it arrives and, once ended, whole.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { createGunzip } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PageEncoding } from '../src/main/page-coding.js';
import { decoders } from './helpers/decoders.js';
import { startServerProcess, type ServerProcess } from './helpers/serve-process.js';
import { rawRequest } from './server-helpers.js';

let server: ServerProcess;
let auth: Record<string, string>;

/** A user message, then an in-flight answer of `n` deltas (one packed run across every slice). */
function inFlight(from: number, n: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let k = 0; k < n; k++) {
    const seq = from + k;
    out.push(k === 0 ? { type: 'user/message', seq, time: seq, data: { text: 'tell me everything' } } : { type: 'assistant/chunk', seq, time: seq, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: ` w${(seq * 7919) % 1013}` } } });
  }
  return out;
}

async function put(id: string, events: Record<string, unknown>[]): Promise<void> {
  const r = await rawRequest(`${server.url}/v1/sessions/${id}`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
  expect(r.status).toBe(201);
  for (let at = 0; at < events.length; at += 5000) {
    const a = await rawRequest(`${server.url}/v1/sessions/${id}/events`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ events: events.slice(at, at + 5000) }) });
    expect(a.status, a.body.toString()).toBe(200);
  }
}

beforeAll(async () => {
  server = await startServerProcess({ workers: 2 });
  auth = { authorization: `Bearer ${server.token}` };
  await put('big', inFlight(0, 40_000));
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

describe('compressed pages from a server process', () => {
  it('every coding decodes to the identity page (zlib, fzstd, gzip -d, zstd -d), built coded and from the cache', async () => {
    const url = `${server.url}/v1/sessions/big/page?maxMessages=5`;
    const plain = await rawRequest(url, { headers: auth });
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body.length).toBeGreaterThan(300_000);
    // Pinned pages are built anew per coding (each its own cache entry only once asked twice).
    const through = JSON.parse(plain.body.toString()).throughSeq as number;
    for (const [asked, want] of [['gzip, deflate, br, zstd', 'zstd'], ['gzip', 'gzip'], ['br', 'br'], ['zstd;q=0.1, gzip;q=0.2', 'gzip']] as [string, PageEncoding][]) {
      for (const u of [url, `${url}&throughSeq=${through}`]) {
        const r = await rawRequest(u, { headers: { ...auth, 'accept-encoding': asked } });
        expect(r.status).toBe(200);
        expect(r.headers['content-encoding']).toBe(want);
        expect(r.body.length).toBeLessThan(plain.body.length / 3);
        for (const d of decoders(want)) expect(d.decode(r.body).equals(plain.body), `${asked} -> ${want} by ${d.name}`).toBe(true);
      }
    }
  });

  it('a client that accepts nothing gets identity', async () => {
    const url = `${server.url}/v1/sessions/big/page?maxMessages=5`;
    const plain = await rawRequest(url, { headers: auth });
    for (const asked of ['identity;q=0, *;q=0', 'identity', 'deflate', '*;q=0', 'gzip;q=0, zstd;q=0, br;q=0']) {
      const r = await rawRequest(url, { headers: { ...auth, 'accept-encoding': asked } });
      expect(r.status).toBe(200);
      expect(r.headers['content-encoding'], asked).toBeUndefined();
      expect(r.body.equals(plain.body)).toBe(true);
    }
  });

  it('curl --compressed decodes what it is sent (its own Accept-Encoding, then each coding alone)', async () => {
    const has = spawnSync('curl', ['--version'], { encoding: 'utf8' });
    if (process.env.CI) expect(has.status, 'curl must be installed in CI').toBe(0);
    if (has.status !== 0) return;
    const url = `${server.url}/v1/sessions/big/page?maxMessages=5`;
    const plain = await rawRequest(url, { headers: auth });
    const features = has.stdout;
    const codings = ['', 'gzip', ...(/\bbrotli\b/i.test(features) ? ['br'] : []), ...(/\bzstd\b/i.test(features) ? ['zstd'] : [])];
    const tmp = mkdtempSync(join(tmpdir(), 'sp-curl-'));
    try {
      for (const coding of codings) {
        // The decoded body to a file; what it was sent in (the response's Content-Encoding) on stdout.
        const out = join(tmp, 'body');
        const args = ['-sS', '--compressed', '-H', `authorization: ${auth.authorization}`, '-o', out, '-w', '%header{content-encoding}'];
        if (coding !== '') args.push('-H', `accept-encoding: ${coding}`);
        const r = spawnSync('curl', [...args, url], { encoding: 'utf8' });
        expect(r.status, String(r.stderr)).toBe(0);
        if (coding !== '') expect(r.stdout).toBe(coding);
        else expect(r.stdout).toMatch(/^(zstd|gzip|br)$/);
        expect(readFileSync(out).equals(plain.body), `curl --compressed ${coding || '(its own)'}`).toBe(true);
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

/** Open a follow stream asking `acceptEncoding`; chunks as they come. */
function follow(url: string, acceptEncoding: string): Promise<{ headers: Record<string, unknown>; chunks: Buffer[]; ended: Promise<void>; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { ...auth, accept: 'text/event-stream', 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      const ended = new Promise<void>((r) => res.on('end', () => r()));
      resolve({ headers: res.headers, chunks, ended, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

async function until(cond: () => boolean, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The snapshot's page and the events' seqs in an SSE text. */
function parseSse(text: string): { page: string; seqs: number[] } {
  let page = '';
  const seqs: number[] = [];
  // Whole events only: what follows the last blank line has not all arrived.
  for (const block of text.split('\n\n').slice(0, -1)) {
    const data = block
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6))
      .join('\n');
    // The page's bytes exactly as they stand in the frame: `{"cursor":N,"page":<page>}`.
    if (/^event: snapshot$/m.test(block)) page = data.slice(data.indexOf('"page":') + 7, -1);
    else if (/^event: event$/m.test(block)) seqs.push(JSON.parse(data).seq as number);
  }
  return { page, seqs };
}

describe('a coded follow stream', () => {
  it('gzip and zstd: decodes as it arrives, and whole once the server ends it; its snapshot is the identity page', async () => {
    const own = await startServerProcess({ workers: 2 });
    const saved = { server, auth };
    server = own;
    auth = { authorization: `Bearer ${own.token}` };
    try {
      await put('f', inFlight(0, 20_000));
      const page = (await rawRequest(`${own.url}/v1/sessions/f/page?maxMessages=50`, { headers: auth })).body.toString();
      const streams = await Promise.all(['gzip', 'zstd'].map((e) => follow(`${own.url}/v1/sessions/f/follow?maxMessages=50`, e)));
      expect(streams.map((s) => s.headers['content-encoding'])).toEqual(['gzip', 'zstd']);
      // gzip decoded as it arrives: the snapshot is readable before the stream ends.
      const gunzip = createGunzip();
      let live = '';
      gunzip.on('data', (d: Buffer) => (live += d.toString()));
      const gz = streams[0]!;
      let fed = 0;
      const feed = () => {
        while (fed < gz.chunks.length) gunzip.write(gz.chunks[fed++]);
      };
      await until(() => {
        feed();
        return parseSse(live).page !== '';
      });
      expect(parseSse(live).page).toBe(page);
      // An append arrives as its own piece, decodable at once.
      const a = await rawRequest(`${own.url}/v1/sessions/f/events`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ events: inFlight(20_000, 3).map((e, k) => ({ ...e, type: 'tool/result', data: { n: k } })) }) });
      expect(a.status).toBe(200);
      await until(() => {
        feed();
        return parseSse(live).seqs.length === 3;
      });
      expect(parseSse(live).seqs).toEqual([20_000, 20_001, 20_002]);
      // Shutdown ends every stream with an `end` event and the coding's end: whole bodies.
      const ended = Promise.all(streams.map((s) => s.ended));
      await own.stop();
      await ended;
      for (const [i, encoding] of (['gzip', 'zstd'] as const).entries()) {
        const wire = Buffer.concat(streams[i]!.chunks);
        for (const d of decoders(encoding)) {
          const text = d.decode(wire).toString();
          expect(parseSse(text), `${encoding} by ${d.name}`).toEqual({ page, seqs: [20_000, 20_001, 20_002] });
          expect(text).toMatch(/event: end\n/);
        }
      }
    } finally {
      server = saved.server;
      auth = saved.auth;
      await own.stop();
    }
  }, 120_000);

  it('brotli-only and identity clients get an uncoded stream', async () => {
    for (const asked of ['br', 'identity']) {
      const s = await follow(`${server.url}/v1/sessions/big/follow?maxMessages=1`, asked);
      await until(() => Buffer.concat(s.chunks).includes('event: snapshot'));
      expect(s.headers['content-encoding']).toBeUndefined();
      s.close();
    }
  });
});
