/**
 * zstd on the wire, against a real `session-pager serve` process (issue 12):
 * a browser's `Accept-Encoding: gzip, deflate, br, zstd` gets zstd, and
 * every coding of the page and of the catalog decodes (fzstd, an independent
 * decoder, for zstd) to exactly the identity bytes.
 */
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { decompress as fzstdDecompress } from 'fzstd';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from './helpers/serve-process.js';
import { makeEvents, rawRequest } from './server-helpers.js';

const BROWSER = 'gzip, deflate, br, zstd';
let server: ServerProcess;
let auth: Record<string, string>;

beforeAll(async () => {
  server = await startServerProcess();
  auth = { authorization: `Bearer ${server.token}` };
  const put = await rawRequest(`${server.url}/v1/sessions/z1`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
  expect(put.status).toBe(201);
  for (let at = 0; at < 3000; at += 1000) {
    const r = await rawRequest(`${server.url}/v1/sessions/z1/events`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ events: makeEvents(at, 1000) }) });
    expect(r.status).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

describe('zstd from a real server process', () => {
  it('a browser asking gzip, deflate, br, zstd gets zstd that decodes to the identity page', async () => {
    const url = `${server.url}/v1/sessions/z1/page?maxMessages=200`;
    const plain = await rawRequest(url, { headers: auth });
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const z = await rawRequest(url, { headers: { ...auth, 'accept-encoding': BROWSER } });
    expect(z.status).toBe(200);
    expect(z.headers['content-encoding']).toBe('zstd');
    expect(String(z.headers.vary).toLowerCase()).toContain('accept-encoding');
    expect(String(z.headers.etag)).toMatch(new RegExp(`^${String(plain.headers.etag).slice(0, -1)}-zstd\\.[0-9a-f]{6}"$`));
    expect(Buffer.from(fzstdDecompress(z.body)).equals(plain.body)).toBe(true);
    expect(z.body.length).toBeLessThan(plain.body.length / 2);
    // Its tag revalidates it (and, compared by identity bytes, any coding of the page).
    const again = await rawRequest(url, { headers: { ...auth, 'accept-encoding': BROWSER, 'if-none-match': String(z.headers.etag) } });
    expect(again.status).toBe(304);
    // q values: gzip preferred by weight, br only when neither zstd nor gzip is accepted, identity when nothing is.
    const gz = await rawRequest(url, { headers: { ...auth, 'accept-encoding': 'zstd;q=0.5, gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
    const br = await rawRequest(url, { headers: { ...auth, 'accept-encoding': 'br, zstd;q=0, gzip;q=0' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
    const none = await rawRequest(url, { headers: { ...auth, 'accept-encoding': 'identity;q=0, *;q=0' } });
    expect(none.status).toBe(200);
    expect(none.headers['content-encoding']).toBeUndefined();
    expect(none.body.equals(plain.body)).toBe(true);
  });

  it('the catalog takes the same coding path', async () => {
    // Enough sessions that the catalog passes the compression threshold (1 KiB).
    for (let i = 0; i < 40; i++) {
      const r = await rawRequest(`${server.url}/v1/sessions/cat-${i}`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
      expect(r.status).toBe(201);
    }
    const url = `${server.url}/v1/sessions`;
    const plain = await rawRequest(url, { headers: auth });
    expect(plain.body.length, plain.body.toString()).toBeGreaterThan(1024);
    const z = await rawRequest(url, { headers: { ...auth, 'accept-encoding': BROWSER } });
    expect(z.headers['content-encoding']).toBe('zstd');
    expect(String(z.headers.vary).toLowerCase()).toContain('accept-encoding');
    expect(Buffer.from(fzstdDecompress(z.body)).equals(plain.body)).toBe(true);
    expect(JSON.parse(plain.body.toString()).sessions).toHaveLength(41);
  });
});
