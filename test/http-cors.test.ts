/**
 * CORS for browser web UIs: off by default; with an origin configured,
 * preflights for requests carrying Authorization succeed without a token,
 * and responses expose the headers a UI needs (ETag, Retry-After, ...).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer, type ServerOptions } from '../src/main/server/index.js';
import { seedSession, tempStore, type TempStore } from './server-helpers.js';

const TOKEN = 'cors-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const UI = 'https://ui.example.com';

let ts: TempStore;
const apps: FastifyInstance[] = [];

function make(opts: ServerOptions = {}): FastifyInstance {
  const a = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0, ...opts });
  apps.push(a);
  return a;
}

const preflight = (a: FastifyInstance, origin: string, headers = 'authorization, if-none-match') =>
  a.inject({ method: 'OPTIONS', url: '/v1/sessions/s/page?maxMessages=5', headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': headers } });

beforeAll(async () => {
  ts = await tempStore(1);
  await seedSession(ts.store, 's', 200, 200);
});

afterAll(async () => {
  for (const a of apps) await a.close();
  await ts.cleanup();
});

describe('CORS', () => {
  it('is off by default: no CORS headers, no preflight answered', async () => {
    const a = make();
    const r = await a.inject({ url: '/v1/sessions/s/page', headers: { ...AUTH, origin: UI } });
    expect(r.statusCode).toBe(200);
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
    const p = await preflight(a, UI);
    expect(p.statusCode).toBeGreaterThanOrEqual(400);
    expect(p.headers['access-control-allow-origin']).toBeUndefined();
    expect(JSON.parse(p.body).error.code).toBeTypeOf('string');
  });

  it('with an origin: answers the preflight (no token needed), allows Authorization, exposes ETag', async () => {
    const a = make({ corsOrigin: UI });
    const p = await preflight(a, UI);
    expect(p.statusCode).toBe(204);
    expect(p.headers['access-control-allow-origin']).toBe(UI);
    expect(String(p.headers['access-control-allow-methods'])).toMatch(/GET/);
    expect(String(p.headers['access-control-allow-headers']).toLowerCase().split(/\s*,\s*/)).toEqual(expect.arrayContaining(['authorization', 'if-none-match', 'content-type', 'last-event-id']));
    expect(p.headers['access-control-allow-credentials']).toBeUndefined();
    expect(Number(p.headers['access-control-max-age'])).toBeGreaterThan(0);

    const r = await a.inject({ url: '/v1/sessions/s/page?throughSeq=150', headers: { ...AUTH, origin: UI, 'accept-encoding': 'gzip' } });
    expect(r.statusCode).toBe(200);
    expect(r.headers['access-control-allow-origin']).toBe(UI);
    const exposed = String(r.headers['access-control-expose-headers']).toLowerCase().split(/\s*,\s*/);
    expect(exposed).toEqual(expect.arrayContaining(['etag', 'retry-after', 'x-request-id']));
    expect(r.headers.etag).toBeDefined();
    expect(String(r.headers.vary).toLowerCase()).toContain('accept-encoding');
    // Errors carry the CORS headers too, so the UI can read them.
    const e = await a.inject({ url: '/v1/sessions/s/page', headers: { origin: UI } });
    expect(e.statusCode).toBe(401);
    expect(e.headers['access-control-allow-origin']).toBe(UI);
  });

  it('with several origins: reflects a listed origin (Vary: Origin), none for others', async () => {
    const a = make({ corsOrigin: `${UI},http://localhost:5173` });
    const ok = await preflight(a, 'http://localhost:5173');
    expect(ok.statusCode).toBe(204);
    expect(ok.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    const other = await a.inject({ url: '/v1/sessions/s/page', headers: { ...AUTH, origin: 'https://evil.example' } });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const vary = String(other.headers.vary).toLowerCase();
    expect(vary).toContain('origin');
    expect(vary).toContain('accept-encoding');
  });
});
