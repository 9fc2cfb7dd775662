/**
 * Answers given before the request's body was read (401, 415, a router
 * error), against a real server process (src/main/server/early-answer.ts).
 * Until 12-03 node read and discarded the whole unread body after such an
 * answer to keep the connection, bounded only by the 30 s request timeout:
 * a client without a token could have the server read 1 GiB for one 401. A
 * large or unknown (chunked) body now gets its answer with `Connection:
 * close`, and the server reads at most the lingering close's bound of it; a
 * small body is read and the connection stays usable, as before.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { floodAfter, LINGER_BYTES, MiB, parseResponse, type RawAnswer, type ServerProcess } from './helpers/server-process.js';
import { makeEvents } from './server-helpers.js';
import { oneSessionServer } from './helpers/one-session-server.js';

const TOKEN = 'early-answer-token-3';
const AUTH = `Authorization: Bearer ${TOKEN}`;
let server: ServerProcess;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ server, stop } = await oneSessionServer({ prefix: 'sp-early-answer-', token: TOKEN, events: 3 }));
}, 60_000);

afterAll(async () => {
  await stop?.();
});

const head = (lines: string[]) => Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');

function expectSpecError(a: RawAnswer | undefined, status: number, code: string, what: string): void {
  expect(a?.status, what).toBe(status);
  const json = JSON.parse((a as RawAnswer).body.toString('utf8'));
  expect(Object.keys(json), what).toEqual(['error']);
  expect(json.error.code, what).toBe(code);
}

/** One request on an open keep-alive socket: its answer, or undefined when the server closed first. */
function exchange(s: Socket, request: Buffer[], gapMs = 0): Promise<RawAnswer | undefined> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    const onData = (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const r = parseResponse(buf, false);
      if (r !== undefined) done(r.answer);
    };
    const onClose = () => done(undefined);
    const done = (a: RawAnswer | undefined) => {
      s.off('data', onData);
      s.off('close', onClose);
      resolve(a);
    };
    s.on('data', onData);
    s.once('close', onClose);
    // The head alone first, the body a moment later: the server sees the body still unread.
    void (async () => {
      for (const part of request) {
        s.write(part);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
    })();
  });
}

describe('an early answer to a large or unknown body', () => {
  const cases: [string, string[], 'length' | 'chunked', number, string][] = [
    ['401 without a token, 1 GiB declared', ['POST /v1/sessions/s1/events HTTP/1.1', 'Host: x', 'Content-Type: application/json'], 'length', 401, 'unauthorized'],
    ['401 without a token, chunked', ['POST /v1/sessions/s1/events HTTP/1.1', 'Host: x', 'Content-Type: application/json'], 'chunked', 401, 'unauthorized'],
    ['400 a router error (bad escape), chunked', ['POST /v1/sessions/%zz/events HTTP/1.1', 'Host: x', 'Content-Type: application/json'], 'chunked', 400, 'invalid_request'],
    ['400 a router error (bad escape), 1 GiB declared', ['POST /v1/sessions/%zz/events HTTP/1.1', 'Host: x', 'Content-Type: application/json'], 'length', 400, 'invalid_request'],
    ['415 a media type not JSON, 1 GiB declared', ['POST /v1/sessions/s1/events HTTP/1.1', 'Host: x', AUTH, 'Content-Type: text/plain'], 'length', 415, 'unsupported_media_type'],
    ['415 an unknown Content-Encoding, chunked', ['POST /v1/sessions/s1/events HTTP/1.1', 'Host: x', AUTH, 'Content-Type: application/json', 'Content-Encoding: zstd'], 'chunked', 415, 'unsupported_media_type'],
  ];
  it.each(cases)('%s: answered with Connection: close; the server reads at most the lingering bound', async (what, lines, framing, status, code) => {
    await expectLingeringAnswer(server.port, what, lines, framing, status, code);
  }, 60_000);

  it('a client that writes a 1 MiB body whole before reading reads its 401', async () => {
    const body = Buffer.alloc(MiB, 0x20);
    for (const framing of ['length', 'chunked'] as const) {
      const res = await new Promise<{ received: Buffer; error?: string }>((resolve) => {
        const received: Buffer[] = [];
        let error: string | undefined;
        const framed = framing === 'length' ? body : Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
        const s = connect(server.port, '127.0.0.1', () => {
          s.pause();
          s.write(Buffer.concat([head(['POST /v1/sessions/s1/events HTTP/1.1', 'Host: x', 'Content-Type: application/json', framing === 'length' ? `Content-Length: ${body.length}` : 'Transfer-Encoding: chunked']), framed]), () => s.resume());
        });
        s.on('data', (c: Buffer) => received.push(c));
        s.on('end', () => s.end());
        s.on('error', (e: NodeJS.ErrnoException) => (error = e.code));
        s.on('close', () => resolve({ received: Buffer.concat(received), ...(error ? { error } : {}) }));
        setTimeout(() => s.destroy(), 30_000);
      });
      expect(res.error, framing).toBeUndefined();
      const answer = parseResponse(res.received, true)?.answer;
      expectSpecError(answer, 401, 'unauthorized', framing);
      expect(answer?.headers.connection, framing).toBe('close');
    }
  }, 60_000);
});

describe('an early answer to a small body', () => {
  it('a small unauthenticated POST (declared or chunked, its body after the head) gets its 401 and the connection serves the next request', async () => {
    const body = Buffer.from(JSON.stringify({ events: makeEvents(3, 2) }));
    const bodies: [string, Buffer][] = [
      ['declared', body],
      ['chunked', Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')])],
      ['declared, 200 KiB', Buffer.alloc(200 * 1024, 0x20)],
    ];
    for (const [what, framed] of bodies) {
      const s = connect(server.port, '127.0.0.1');
      await new Promise((r) => s.once('connect', r));
      const length = what === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${framed.length}`;
      const a = await exchange(s, [head(['POST /v1/sessions/s1/events HTTP/1.1', 'Host: x', 'Content-Type: application/json', length]), framed], 50);
      expectSpecError(a, 401, 'unauthorized', what);
      expect(a?.headers.connection, what).not.toBe('close');
      // The same connection: the body was read, the next request parses.
      const next = await exchange(s, [head(['GET /v1/sessions/s1 HTTP/1.1', 'Host: x', AUTH])]);
      expect(next?.status, what).toBe(200);
      expect(JSON.parse((next as RawAnswer).body.toString('utf8')).nextSeq, what).toBe(3);
      s.destroy();
    }
  }, 30_000);
});

describe('a request with a body to no route', () => {
  // fastify parses the body for its not-found handler too: up to the 16 MiB body limit (then a
  // 413), for a 404 that discards it. Now answered before the body is read, as the other early answers.
  const cases: [string, string[], 'length' | 'chunked', number, string][] = [
    ['POST to an unknown path, 1 GiB declared', ['POST /v1/nothing/here HTTP/1.1', 'Host: x', AUTH, 'Content-Type: application/json'], 'length', 404, 'not_found'],
    ['PUT to an unknown path, chunked', ['PUT /v2/sessions/s1 HTTP/1.1', 'Host: x', AUTH, 'Content-Type: application/json'], 'chunked', 404, 'not_found'],
    ['POST to a path only GET answers, 1 GiB declared', ['POST /v1/sessions/s1/page HTTP/1.1', 'Host: x', AUTH, 'Content-Type: application/json'], 'length', 405, 'method_not_allowed'],
  ];
  it.each(cases)('%s: answered at once with Connection: close; the server reads at most the lingering bound', async (what, lines, framing, status, code) => {
    await expectLingeringAnswer(server.port, what, lines, framing, status, code);
  }, 60_000);

  it('a 1 MiB body declared and never sent: the 404 comes without it (the body is not waited for)', async () => {
    const s = connect(server.port, '127.0.0.1');
    await new Promise((r) => s.once('connect', r));
    const timer = setTimeout(() => s.destroy(), 10_000);
    const a = await exchange(s, [head(['POST /v1/no-such-route HTTP/1.1', 'Host: x', AUTH, 'Content-Type: application/json', `Content-Length: ${MiB}`])]);
    clearTimeout(timer);
    expectSpecError(a, 404, 'not_found', 'declared, unsent');
    expect(a?.headers.connection).toBe('close');
    s.destroy();
  }, 30_000);

  it('a small body (declared or chunked, not JSON at all) gets its 404, not a parse error, and the connection serves the next request', async () => {
    const body = Buffer.from('{"this is": not json');
    const bodies: [string, Buffer][] = [
      ['declared', body],
      ['chunked', Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')])],
    ];
    for (const [what, framed] of bodies) {
      const s = connect(server.port, '127.0.0.1');
      await new Promise((r) => s.once('connect', r));
      const length = what === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${framed.length}`;
      for (const method of ['POST', 'PUT']) {
        const a = await exchange(s, [head([`${method} /v1/sessions/s1/nothing HTTP/1.1`, 'Host: x', AUTH, 'Content-Type: application/json', length]), framed], 50);
        expectSpecError(a, 404, 'not_found', `${method} ${what}`);
        expect(a?.headers.connection, what).not.toBe('close');
      }
      const next = await exchange(s, [head(['GET /v1/sessions/s1 HTTP/1.1', 'Host: x', AUTH])]);
      expect(next?.status, what).toBe(200);
      s.destroy();
    }
  }, 30_000);
});

/**
 * An endless body after `lines`: the answer is the SPEC error `status`/`code` with Connection: close, and
 * the server cuts the client (a reset or a broken pipe) after at most the lingering bound plus what the
 * socket buffers hold and the 256 KiB read before the answer (before, node read on to the client's 512 MiB).
 */
async function expectLingeringAnswer(port: number, what: string, lines: string[], framing: 'length' | 'chunked', status: number, code: string): Promise<void> {
  const r = await floodAfter(port, lines, framing);
  const answer = parseResponse(r.received, true)?.answer;
  expectSpecError(answer, status, code, what);
  expect(answer?.headers.connection, what).toBe('close');
  expect(r.error, what).toMatch(/^(ECONNRESET|EPIPE)$/);
  expect(r.bytes, what).toBeLessThan(LINGER_BYTES + 32 * MiB);
}
