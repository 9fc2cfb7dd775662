/**
 * A request not received in time (issue 16): a client that sends part of a
 * request head, or the head and part of its body, then stalls, is answered
 * `408 request_timeout` in the SPEC's error shape once the request timeout
 * passes, the connection is closed, and nothing of the request is done.
 * Against a real server process whose timeout is made short
 * (SESSION_PAGER_REQUEST_TIMEOUT_MS) so the test is quick.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange, rawRequestBytes, type ServerProcess } from './helpers/server-process.js';
import { makeEvents } from './server-helpers.js';
import { oneSessionServer } from './helpers/one-session-server.js';

const TOKEN = 'request-timeout-token-7';
const TIMEOUT_MS = 600;
const AUTH = `Authorization: Bearer ${TOKEN}`;
let server: ServerProcess;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ server, stop } = await oneSessionServer({ prefix: 'sp-reqtimeout-', token: TOKEN, events: 20, env: { SESSION_PAGER_REQUEST_TIMEOUT_MS: String(TIMEOUT_MS), SESSION_PAGER_PAGE_WARMUP: '0' } }));
}, 60_000);

afterAll(async () => {
  await stop?.();
});

async function timedOut(request: Buffer): Promise<number> {
  const t0 = performance.now();
  const r = await rawExchange(server.port, request, { timeoutMs: 20_000 });
  const ms = performance.now() - t0;
  expect(r.answer, `no answer (${r.ended} ${r.error ?? ''}): ${r.received.toString('latin1').slice(0, 200)}`).toBeDefined();
  expect(r.answer!.status, r.answer!.body.toString()).toBe(408);
  expect(r.answer!.headers['content-type']).toMatch(/^application\/json/);
  expect(r.answer!.headers.connection).toBe('close');
  const json = JSON.parse(r.answer!.body.toString('utf8'));
  expect(Object.keys(json)).toEqual(['error']);
  expect(json.error.code).toBe('request_timeout');
  expect(json.error.message).toMatch(/not received in time/);
  return ms;
}

describe('408 request_timeout (a real server, request timeout 600 ms)', () => {
  it('a request head never finished is answered 408 once the timeout passed', async () => {
    const head = Buffer.from(`GET /v1/sessions HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`, 'latin1');
    const ms = await timedOut(head);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
  });

  it('a body never finished is answered 408 and nothing of it is appended', async () => {
    const body = JSON.stringify({ events: makeEvents(20, 5) });
    const partial = rawRequestBytes(['POST /v1/sessions/s1/events HTTP/1.1', 'Host: x', AUTH, 'Content-Type: application/json', `Content-Length: ${body.length}`], body.slice(0, 40));
    const ms = await timedOut(partial);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    const info = await fetch(`${server.url}/v1/sessions/s1`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(((await info.json()) as { nextSeq: number }).nextSeq).toBe(20);
  });

  it('a request received within the timeout is served, and the server serves on after timeouts', async () => {
    const ok = await rawExchange(server.port, rawRequestBytes(['GET /v1/sessions/s1/page?maxMessages=2 HTTP/1.1', 'Host: x', AUTH]), { timeoutMs: 20_000 });
    expect(ok.answer?.status).toBe(200);
    const res = await fetch(`${server.url}/v1/sessions/s1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events: makeEvents(20, 5) }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ fromSeq: 20, toSeq: 25, nextSeq: 25 });
  });
});
