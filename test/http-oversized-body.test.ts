/**
 * A body past the 16 MiB limit, against a real server process: the server
 * answers `413 payload_too_large` (SPEC shape) without reading the body,
 * then closes the connection lingering (src/main/server/lingering-close.ts):
 * what the client still sends is read and discarded, so a client that
 * writes its whole body before it reads (node's fetch with a Buffer body,
 * a raw socket) reads the 413. Until 12-03 such a client got a reset
 * instead: the server closed with the body unread (docs/benchmarks.md, "rel
 * (twelfth session)"). The lingering is bounded: a body far past its bound
 * is cut.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { floodAfter, LINGER_BYTES, MiB, sendThenRead, type ServerProcess } from './helpers/server-process.js';
import { oneSessionServer } from './helpers/one-session-server.js';

const TOKEN = 'oversized-body-token-7';
const AUTH = `Authorization: Bearer ${TOKEN}`;
let server: ServerProcess;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ server, stop } = await oneSessionServer({ prefix: 'sp-oversized-', token: TOKEN, events: 3 }));
}, 60_000);

afterAll(async () => {
  await stop?.();
});

/** A JSON array of events, `size` bytes long (what an oversized append looks like). */
function jsonBody(size: number): Buffer {
  const b = Buffer.alloc(size, 0x20);
  b.write('{"events":[', 0);
  b.write(']}', size - 2);
  return b;
}

function chunkedOf(body: Buffer, chunk = 4 * MiB): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < body.length; at += chunk) {
    const c = body.subarray(at, at + chunk);
    parts.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

function expect413(text: string, what: string): void {
  expect(text.match(/HTTP\/1\.1 \d{3}/g), what).toEqual(['HTTP/1.1 413']);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  const json = JSON.parse(body);
  expect(Object.keys(json), what).toEqual(['error']);
  expect(json.error.code, what).toBe('payload_too_large');
  expect(typeof json.error.message, what).toBe('string');
  expect(text, what).toMatch(/\r\ncontent-type: application\/json/i);
}

describe('a body past the limit', () => {
  it('40 MiB written whole before reading, Content-Length and chunked, close or keep-alive: the client reads the 413', async () => {
    const body = jsonBody(40 * MiB);
    const chunked = chunkedOf(body);
    const post = 'POST /v1/sessions/s1/events HTTP/1.1';
    for (const framing of ['length', 'chunked'] as const) {
      for (const connection of ['close', 'keep-alive'] as const) {
        const head = [post, 'Host: x', AUTH, 'Content-Type: application/json', framing === 'length' ? `Content-Length: ${body.length}` : 'Transfer-Encoding: chunked', ...(connection === 'close' ? ['Connection: close'] : [])];
        const what = `${framing}, ${connection}`;
        const r = await sendThenRead(server.port, Buffer.concat([Buffer.from(head.join('\r\n') + '\r\n\r\n', 'latin1'), framing === 'length' ? body : chunked]));
        expect(r.error, `${what}: ${r.text.slice(0, 100)}`).toBeUndefined();
        expect(r.wrote, `${what}: the whole request written`).toBe(true);
        expect413(r.text, what);
      }
    }
  }, 120_000);

  it("node's fetch with a 40 MiB Buffer body gets the 413 in the SPEC shape; the session is unchanged", async () => {
    // Three times: fetch reads while it writes, so before the lingering close it lost the answer
    // only in about half of the tries (by hand, 12-03: 3 of 6 `fetch failed`, EPIPE).
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/v1/sessions/s1/events`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: jsonBody(40 * MiB) });
      expect(res.status).toBe(413);
      const json = (await res.json()) as { error: { code: string } };
      expect(Object.keys(json)).toEqual(['error']);
      expect(json.error.code).toBe('payload_too_large');
    }
    const info = (await (await fetch(`${server.url}/v1/sessions/s1`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { nextSeq: number };
    expect(info.nextSeq).toBe(3);
  }, 60_000);

  it('a body far past the lingering bound is cut: the server stops reading within its bound', async () => {
    for (const framing of ['length', 'chunked'] as const) {
      // A client that only writes: an endless body, declared 1 GiB or chunked, as fast as the socket takes it.
      const written = await floodAfter(server.port, ['POST /v1/sessions/s1/events HTTP/1.1', 'Host: x', AUTH, 'Content-Type: application/json'], framing);
      // Cut (a reset or a broken pipe), after at most the bound plus what the socket buffers and the
      // 16 MiB the server reads before it refuses a chunked body hold (by hand: cut at 65 MiB
      // declared, 86 MiB chunked).
      expect(written.error, framing).toMatch(/^(ECONNRESET|EPIPE)$/);
      expect(written.bytes, framing).toBeLessThan(LINGER_BYTES + 48 * MiB);
    }
    // The server is still up and answering.
    const res = await fetch(`${server.url}/v1/sessions/s1`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
  }, 120_000);
});
