/**
 * Listening before the app exists (server/early-listen.ts): `serve` binds
 * its port first, answers /livez from the bare server, holds every other
 * request until the app is built on that server, and the app then serves
 * them as if they had just arrived (a page asked that early is served, not
 * refused; an append's body is not lost). Past the bound, or when the app
 * cannot be built, the held requests get the SPEC's error shape.
 */
import { lookup } from 'node:dns/promises';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/main/server/index.js';
import { EarlyListener } from '../src/main/server/early-listen.js';
import { floodAfter, MiB } from './helpers/server-process.js';
import { makeEvents, rawRequest, seedSession, sleep, tempStore, until, type RawResponse, type TempStore } from './server-helpers.js';

let ts: TempStore;

beforeAll(async () => {
  ts = await tempStore(1);
  await seedSession(ts.store, 'early', 300, 100);
});

afterAll(async () => {
  await ts.cleanup();
});

const LIMITS = { requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, maxConnections: 100 };

describe('early listen', () => {
  it('answers /livez at once, holds a page and an append until the app is built, then the app serves both', async () => {
    const early = new EarlyListener(LIMITS);
    const url = await early.listen('127.0.0.1', 0);
    const app = buildServer(ts.store, { serverFactory: early.factory });
    try {
      const live = await rawRequest(`${url}/livez`);
      expect(live.status).toBe(200);
      expect(JSON.parse(live.body.toString())).toEqual({ status: 'ok' });
      let page: RawResponse | null = null;
      let append: RawResponse | null = null;
      const pageAsked = rawRequest(`${url}/v1/sessions/early/page?maxMessages=3`).then((r) => (page = r));
      const appended = rawRequest(`${url}/v1/sessions/early/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ events: makeEvents(300, 5) }) }).then(
        (r) => (append = r),
      );
      await until('both requests held', () => early.heldCount === 2);
      await sleep(100);
      expect(page).toBeNull();
      expect(append).toBeNull();
      await app.ready();
      early.open();
      await Promise.all([pageAsked, appended]);
      expect(append!.status).toBe(200);
      expect(page!.status).toBe(200);
      // The page the store gives for the same cut (the append may have landed before or after it was built).
      const got = JSON.parse(page!.body.toString()) as { throughSeq: number };
      expect([299, 304]).toContain(got.throughSeq);
      expect(got).toEqual(await ts.store.page('early', { maxMessages: 3, throughSeq: got.throughSeq }));
      expect(await ts.store.nextSeq('early')).toBe(305);
      // From now on the app answers everything, /livez included.
      expect((await rawRequest(`${url}/v1/sessions/nobody/page`)).status).toBe(404);
      expect((await rawRequest(`${url}/livez`)).status).toBe(200);
    } finally {
      await app.close();
      await early.close();
    }
    expect(early.server.listening).toBe(false);
  });

  it('past its bound a request is `overloaded` with Retry-After; if the app cannot be built, what was held is `internal`', async () => {
    const early = new EarlyListener({ ...LIMITS, maxHeld: 1, retryAfterSeconds: 3 });
    const url = await early.listen('127.0.0.1', 0);
    try {
      const held = rawRequest(`${url}/v1/sessions`);
      await until('one request held', () => early.heldCount === 1);
      const refused = await rawRequest(`${url}/v1/sessions`);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('3');
      expect(JSON.parse(refused.body.toString())).toMatchObject({ error: { code: 'overloaded' } });
      early.fail('the server failed to start: no store');
      const r = await held;
      expect(r.status).toBe(500);
      expect(JSON.parse(r.body.toString())).toEqual({ error: { code: 'internal', message: 'the server failed to start: no store' } });
    } finally {
      await early.close();
    }
  });

  it("a refusal before the app exists closes a connection whose large body it left unread, within the lingering bound; a small body's connection is kept", async () => {
    const early = new EarlyListener({ ...LIMITS, maxHeld: 0 });
    const url = await early.listen('127.0.0.1', 0);
    const port = Number(new URL(url).port);
    try {
      // A body declared 1 GiB, written as fast as the socket takes it, on after the answer too.
      const written = await floodAfter(port, ['POST /v1/sessions/x/events HTTP/1.1', 'Host: x', 'Content-Type: application/json'], 'length');
      const flood = { ...written, text: written.received.toString('latin1') };
      expect(flood.text).toMatch(/^HTTP\/1\.1 503 .*\r\nconnection: close\r\n/is);
      // Node read the whole body to keep the connection; now the bound (64 MiB) plus socket buffers.
      expect(flood.error).toMatch(/^(ECONNRESET|EPIPE)$/);
      expect(flood.bytes).toBeLessThan(96 * MiB);
      // A small body: read, the connection kept for the next request (/livez, answered by the bare server).
      const both = await new Promise<string>((resolve) => {
        const s = connect(port, '127.0.0.1', () => {
          s.write('POST /v1/sessions/x/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n');
          setTimeout(() => s.write('{"events":['), 30);
          setTimeout(() => s.write('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n'), 60);
        });
        let text = '';
        s.on('data', (c: Buffer) => {
          text += c.toString('latin1');
          if (/"status":"ok"/.test(text)) {
            s.destroy();
            resolve(text);
          }
        });
        s.on('close', () => resolve(text));
      });
      expect(both.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 503', 'HTTP/1.1 200']);
      expect(both).not.toMatch(/connection: close/i);
    } finally {
      await early.close();
    }
  }, 60_000);

  it('a port in use fails at listen, before any app exists', async () => {
    const first = new EarlyListener(LIMITS);
    const url = await first.listen('127.0.0.1', 0);
    const second = new EarlyListener(LIMITS);
    try {
      await expect(second.listen('127.0.0.1', Number(new URL(url).port))).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await first.close();
    }
  });

  it('`localhost` is bound on every address it resolves to, each answering as the first does; an unbindable one is skipped', async () => {
    // 127.0.0.2 is loopback on Linux; 192.0.2.1 (TEST-NET) is no address of this host.
    const lookupAll = async () => ['127.0.0.1', '127.0.0.2', '192.0.2.1', '127.0.0.2'].map((address) => ({ address, family: 4 }));
    const early = new EarlyListener({ ...LIMITS, lookup: lookupAll });
    const url = await early.listen('localhost', 0);
    const port = new URL(url).port;
    expect(url).toBe(`http://127.0.0.1:${port}`);
    expect(early.addresses).toEqual([`127.0.0.1:${port}`, `127.0.0.2:${port}`]);
    const second = `http://127.0.0.2:${port}`;
    const app = buildServer(ts.store, { serverFactory: early.factory });
    try {
      expect((await rawRequest(`${second}/livez`)).status).toBe(200);
      const held = rawRequest(`${second}/v1/sessions/early/page?maxMessages=2`);
      await until('the page held', () => early.heldCount === 1);
      await app.ready();
      early.open();
      const page = await held;
      expect(page.status).toBe(200);
      expect(page.body.equals((await rawRequest(`${url}/v1/sessions/early/page?maxMessages=2`)).body)).toBe(true);
      expect((await rawRequest(`${second}/v1/sessions/nobody/page`)).status).toBe(404);
      // The app's own answers to what node would answer itself (framework-errors.ts): CONNECT refused in the SPEC's shape.
      const reply = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.2', () => socket.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'));
        let text = '';
        socket.on('data', (d) => (text += d.toString()));
        socket.on('end', () => resolve(text));
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
      expect(reply).toMatch(/^HTTP\/1\.1 400/);
      expect(reply).toContain('"code":"invalid_request"');
    } finally {
      await app.close();
      await early.close();
    }
    // Closed too (refused; this sandbox's loopback may reset instead).
    const err = (await rawRequest(`${second}/livez`).then(() => null, (e: NodeJS.ErrnoException) => e)) as NodeJS.ErrnoException | null;
    expect(['ECONNREFUSED', 'ECONNRESET']).toContain(err?.code);
  });

  it('`localhost` without a lookup of our own: every address the resolver gives', async () => {
    const early = new EarlyListener(LIMITS);
    const url = await early.listen('localhost', 0);
    try {
      const port = new URL(url).port;
      const expected = [...new Set((await lookup('localhost', { all: true })).map((a) => (a.family === 6 ? `[${a.address}]:${port}` : `${a.address}:${port}`)))];
      expect(early.addresses).toEqual(expected);
      for (const a of early.addresses) expect((await rawRequest(`http://${a}/livez`)).status).toBe(200);
    } finally {
      await early.close();
    }
  });
});
