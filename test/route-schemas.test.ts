/**
 * Route schemas (issue 11): params, query strings and bodies validated by
 * fastify's JSON schemas, every failure the SPEC's `invalid_request` naming
 * the parameter; unknown query parameters refused on every route; the page
 * parameter rules of SPEC section 5 exactly (checked against an
 * independent restatement on random query strings).
 */
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/main/server/index.js';
import { makeEvents, seedSession, tempStore, type TempStore } from './server-helpers.js';

const TOKEN = 'schema-token-0123';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const LAST = 99; // the last committed seq of "s"
let ts: TempStore;
let app: FastifyInstance;

beforeAll(async () => {
  ts = await tempStore(1);
  await seedSession(ts.store, 's', LAST + 1, 50);
  app = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0 });
  await app.ready();
});

afterAll(async () => {
  await app.close();
  await ts.cleanup();
});

async function get(url: string, headers: Record<string, string> = {}) {
  const r = await app.inject({ url, headers: { ...AUTH, ...headers } });
  return { status: r.statusCode, json: r.body === '' ? undefined : JSON.parse(r.body) };
}

function expectInvalid(r: { status: number; json: any }, param?: string): void {
  expect(r.status, JSON.stringify(r.json)).toBe(400);
  expect(Object.keys(r.json)).toEqual(['error']);
  expect(r.json.error.code).toBe('invalid_request');
  if (param !== undefined) {
    expect(r.json.error.param).toBe(param);
    expect(r.json.error.message).toContain(param);
  }
}

describe('page parameters (SPEC section 5)', () => {
  it('accepts plain decimal integers in range, and the boundaries', async () => {
    for (const q of ['maxMessages=1', 'maxMessages=1000', `throughSeq=${LAST}`, 'throughSeq=0', 'beforeSeq=0', `beforeSeq=${Number.MAX_SAFE_INTEGER}`, 'maxBytes=1', `maxBytes=${Number.MAX_SAFE_INTEGER}`, '']) {
      const r = await get(`/v1/sessions/s/page?${q}`);
      expect(r.status, q).toBe(200);
    }
  });

  it('refuses anything else, naming the parameter', async () => {
    const cases: [string, string][] = [
      ['maxMessages=0', 'maxMessages'],
      ['maxMessages=1001', 'maxMessages'],
      ['maxMessages=01', 'maxMessages'],
      ['maxMessages=+5', 'maxMessages'],
      ['maxMessages=-1', 'maxMessages'],
      ['maxMessages=1.0', 'maxMessages'],
      ['maxMessages=1e2', 'maxMessages'],
      ['maxMessages=0x10', 'maxMessages'],
      ['maxMessages=', 'maxMessages'],
      ['maxMessages= 5', 'maxMessages'],
      ['maxMessages=5&maxMessages=5', 'maxMessages'],
      [`throughSeq=${LAST + 1}`, 'throughSeq'],
      ['throughSeq=99999999999999999999', 'throughSeq'],
      [`beforeSeq=${Number.MAX_SAFE_INTEGER + 1}`, 'beforeSeq'],
      ['beforeSeq=abc', 'beforeSeq'],
      ['maxBytes=0', 'maxBytes'],
      ['maxbytes=5', 'maxbytes'],
      ['foo=1', 'foo'],
      ['maxMessages=5&x=', 'x'],
    ];
    for (const [q, param] of cases) expectInvalid(await get(`/v1/sessions/s/page?${q}`), param);
  });

  it('HEAD takes the same parameters as GET', async () => {
    const ok = await app.inject({ method: 'HEAD', url: '/v1/sessions/s/page?maxMessages=5&throughSeq=50', headers: AUTH });
    expect(ok.statusCode).toBe(200);
    const bad = await app.inject({ method: 'HEAD', url: '/v1/sessions/s/page?maxMessages=05', headers: AUTH });
    expect(bad.statusCode).toBe(400);
  });

  it('agrees with the SPEC rule on random query strings', async () => {
    const NAMES = ['throughSeq', 'beforeSeq', 'maxMessages', 'maxBytes'] as const;
    const range: Record<string, [number, number]> = { throughSeq: [0, LAST], beforeSeq: [0, Number.MAX_SAFE_INTEGER], maxMessages: [1, 1000], maxBytes: [1, Number.MAX_SAFE_INTEGER] };
    const value = fc.oneof(
      fc.nat({ max: 2000 }).map(String),
      fc.constantFrom('', '-0', '-1', '00', '007', '1.5', '1e3', ' 1', '1 ', '+1', 'NaN', 'Infinity', '9007199254740991', '9007199254740992', '123456789012345678901234567890'),
      fc.string({ maxLength: 6 }),
    );
    const param = fc.tuple(fc.oneof(fc.constantFrom(...NAMES), fc.constantFrom('x', 'maxmessages', 'before_seq', '')), value);
    await fc.assert(
      fc.asyncProperty(fc.array(param, { maxLength: 4 }), async (pairs) => {
        const qs = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
        // The rule, restated: each name once, known, a plain decimal in its range.
        const seen = new Map<string, number>();
        for (const [k] of pairs) seen.set(k, (seen.get(k) ?? 0) + 1);
        const bad = new Set<string>();
        for (const [k, v] of pairs) {
          if (!(NAMES as readonly string[]).includes(k) || (seen.get(k) ?? 0) > 1 || !/^(0|[1-9][0-9]*)$/.test(v)) bad.add(k);
          else {
            const n = Number(v);
            const [lo, hi] = range[k] as [number, number];
            if (!(n >= lo && n <= hi)) bad.add(k);
          }
        }
        const r = await get(`/v1/sessions/s/page?${qs}`);
        if (bad.size === 0) {
          expect(r.status, qs).toBe(200);
        } else {
          expectInvalid(r);
          expect([...bad], qs).toContain(r.json.error.param);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('every route refuses unknown query parameters', () => {
  it('GET, PUT, POST and the service routes', async () => {
    for (const url of ['/v1/sessions?page=2', '/v1/sessions/s?x=1', '/v1/sessions/s/follow?maxMessages=5&since=3', '/v1/openapi.json?v=2', '/metrics?name=x', '/healthz?probe=1']) {
      const r = await get(url);
      const param = new URLSearchParams(url.split('?')[1]).keys().next().value;
      expectInvalid(r, url.includes('follow') ? 'since' : param);
    }
    const put = await app.inject({ method: 'PUT', url: '/v1/sessions/new1?format=jsonl&mode=fast', headers: AUTH });
    expect(put.statusCode).toBe(400);
    expect(JSON.parse(put.body).error.param).toBe('mode');
    const post = await app.inject({ method: 'POST', url: '/v1/sessions/s/events?sync=1', headers: AUTH, payload: { events: makeEvents(LAST + 1, 1) } });
    expect(post.statusCode).toBe(400);
    expect(JSON.parse(post.body).error.param).toBe('sync');
    // Nothing was created or appended.
    expect((await ts.store.list()).map((s) => s.id)).not.toContain('new1');
    expect((await ts.store.info('s')).nextSeq).toBe(LAST + 1);
  });
});

describe('params, headers and bodies', () => {
  it('an invalid id is refused by its schema, naming id', async () => {
    for (const id of ['a..b', '.hidden', '-x', 'x'.repeat(129), 'sp%20ace', '%C3%A9']) expectInvalid(await get(`/v1/sessions/${id}`), 'id');
  });

  it('create: format is jsonl or binary; the body is a JSON object', async () => {
    const f = await app.inject({ method: 'PUT', url: '/v1/sessions/n2?format=xml', headers: AUTH });
    expectInvalid({ status: f.statusCode, json: JSON.parse(f.body) }, 'format');
    for (const payload of ['[]', '"header"', '3', 'null']) {
      const r = await app.inject({ method: 'PUT', url: '/v1/sessions/n2', headers: { ...AUTH, 'content-type': 'application/json' }, payload });
      expectInvalid({ status: r.statusCode, json: JSON.parse(r.body) });
      expect(JSON.parse(r.body).error.message).toMatch(/^body /);
    }
    expect((await ts.store.list()).map((s) => s.id)).not.toContain('n2');
  });

  it('append: the body is {"events":[...]} of events, the message says where it is wrong', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /body must have "events"/],
      [{ events: [] }, /body\.events must not be empty/],
      [{ events: {} }, /body\.events must be a JSON array/],
      [{ events: [1] }, /body\.events\[0\] must be a JSON object/],
      [{ events: [{ type: 'x', time: 1 }] }, /body\.events\[0\] must have "seq"/],
      [{ events: [{ type: 'x', seq: -1, time: 1 }] }, /body\.events\[0\]\.seq must be a non-negative integer/],
      [{ events: [{ type: 7, seq: 0, time: 1 }] }, /body\.events\[0\]\.type must be a string/],
      [{ events: makeEvents(LAST + 1, 1), more: true }, /body has an unknown key "more"/],
    ];
    for (const [payload, message] of cases) {
      const r = await app.inject({ method: 'POST', url: '/v1/sessions/s/events', headers: AUTH, payload: payload as object });
      expect(r.statusCode, JSON.stringify(payload)).toBe(400);
      const e = JSON.parse(r.body).error;
      expect(e.code).toBe('invalid_request');
      expect(e.message).toMatch(message);
    }
    expect((await ts.store.info('s')).nextSeq).toBe(LAST + 1);
  });

  it('follow: Last-Event-ID and lastEventId are a seq or -1', async () => {
    expectInvalid(await get('/v1/sessions/s/follow', { 'last-event-id': 'x1' }), 'Last-Event-ID');
    expectInvalid(await get('/v1/sessions/s/follow?lastEventId=-2'), 'lastEventId');
    expectInvalid(await get('/v1/sessions/s/follow?maxMessages=0'), 'maxMessages');
  });
});
