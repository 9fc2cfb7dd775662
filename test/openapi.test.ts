/**
 * The OpenAPI 3.1 document (issue 11): generated from the route schemas by
 * @fastify/swagger, served at /v1/openapi.json without a token, its
 * info.version the package's; every route the server holds is in it, every
 * reference resolves, and what it says about parameters is what the server
 * enforces.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/main/server/index.js';
import { openApiDocumentBuilt } from '../src/main/server/openapi.js';
import { seedSession, tempStore, type TempStore } from './server-helpers.js';

const ROOT = resolve(import.meta.dirname, '..');
const TOKEN = 'openapi-token-9876';
let ts: TempStore;
let app: FastifyInstance;
let doc: any;

beforeAll(async () => {
  ts = await tempStore(1);
  await seedSession(ts.store, 's', 30, 30);
  app = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0 });
  await app.ready();
  const r = await app.inject({ url: '/v1/openapi.json' }); // no token
  expect(r.statusCode).toBe(200);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  doc = JSON.parse(r.body);
});

afterAll(async () => {
  await app.close();
  await ts.cleanup();
});

/** `/v1/sessions/:id/page` as `/v1/sessions/{id}/page`. */
const openapiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function resolveRef(ref: string): unknown {
  expect(ref.startsWith('#/')).toBe(true);
  return ref
    .slice(2)
    .split('/')
    .reduce<any>((o, k) => (o === undefined ? undefined : o[k]), doc);
}

function* walk(v: unknown, path = '$'): Generator<[string, any]> {
  if (v === null || typeof v !== 'object') return;
  yield [path, v];
  for (const [k, c] of Object.entries(v)) yield* walk(c, `${path}.${k}`);
}

describe('OpenAPI document', () => {
  it('is built at its first request, not at start-up (issue 12: ~50 ms of the main thread before ready), and once', async () => {
    const other = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0 });
    try {
      await other.ready();
      expect(openApiDocumentBuilt(other)).toBe(false);
      const first = await other.inject({ url: '/v1/openapi.json' });
      expect(first.statusCode).toBe(200);
      expect(openApiDocumentBuilt(other)).toBe(true);
      expect(JSON.parse(first.body)).toEqual(doc);
      expect((await other.inject({ url: '/v1/openapi.json' })).body).toBe(first.body);
    } finally {
      await other.close();
    }
  });

  it('is OpenAPI 3.1 with the package\'s version, served without a token', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBe('session-pager');
    expect(doc.info.version).toBe(pkg.version);
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearer: [] }]);
  });

  it('describes every route the server holds, and nothing else', () => {
    const routes = app.pagerState.routes.list().filter((r) => r.method !== 'HEAD');
    expect(routes.length).toBeGreaterThanOrEqual(9);
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    const held = routes.map((r) => `${r.method} ${openapiPath(r.url)}`);
    // A route missing here was added before @fastify/swagger loaded: register it inside app.register().
    expect(documented.sort()).toEqual(held.sort());
    for (const needed of ['GET /v1/sessions', 'GET /v1/sessions/{id}', 'PUT /v1/sessions/{id}', 'GET /v1/sessions/{id}/page', 'GET /v1/sessions/{id}/follow', 'POST /v1/sessions/{id}/events', 'GET /v1/openapi.json', 'GET /metrics', 'GET /healthz']) {
      expect(documented).toContain(needed);
    }
  });

  it('has a summary and responses for every operation, errors in the Error schema, and every $ref resolves', () => {
    for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [m, op] of Object.entries(ops)) {
        const where = `${m} ${p}`;
        expect(typeof op.summary, where).toBe('string');
        const codes = Object.keys(op.responses);
        expect(codes.some((c) => /^2\d\d$/.test(c)), where).toBe(true);
        for (const [code, resp] of Object.entries(op.responses as Record<string, any>)) {
          expect(typeof resp.description, `${where} ${code}`).toBe('string');
          if (/^[45]\d\d$/.test(code)) expect(resp.content['application/json'].schema, `${where} ${code}`).toEqual({ $ref: '#/components/schemas/Error' });
        }
        for (const param of op.parameters ?? []) {
          expect(['path', 'query', 'header'], where).toContain(param.in);
          expect(typeof param.name).toBe('string');
          expect(param.schema, `${where} ${param.name}`).toBeDefined();
          if (param.in === 'path') {
            expect(param.required).toBe(true);
            expect(p).toContain(`{${param.name}}`);
          }
        }
        for (const seg of p.match(/\{[^}]+\}/g) ?? []) {
          expect((op.parameters ?? []).some((x: any) => x.in === 'path' && `{${x.name}}` === seg), `${where} documents ${seg}`).toBe(true);
        }
      }
    }
    for (const [path, node] of walk(doc)) if (typeof node.$ref === 'string') expect(resolveRef(node.$ref), `${path} -> ${node.$ref}`).toBeDefined();
    const codes = doc.components.schemas.Error.properties.error.properties.code.enum;
    for (const c of ['invalid_request', 'unauthorized', 'session_not_found', 'not_found', 'method_not_allowed', 'seq_conflict', 'repair_required', 'session_busy', 'payload_too_large', 'uri_too_long', 'unsupported_media_type', 'corrupt_range', 'header_too_large', 'overloaded', 'internal']) {
      expect(codes).toContain(c);
    }
  });

  it('marks the routes open without a token, and only those', () => {
    const open = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([p, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => Array.isArray(op.security) && op.security.length === 0)
        .map(([m]) => `${m.toUpperCase()} ${p}`),
    );
    for (const o of open) expect(['GET /healthz', 'GET /livez', 'GET /readyz', 'GET /v1/openapi.json']).toContain(o);
    expect(open).toContain('GET /v1/openapi.json');
    expect(open).toContain('GET /healthz');
  });

  it('documents the page parameters of SPEC section 5, and the server enforces exactly those bounds', async () => {
    const op = doc.paths['/v1/sessions/{id}/page'].get;
    const params = Object.fromEntries((op.parameters as any[]).filter((x) => x.in === 'query').map((x) => [x.name, x.schema]));
    expect(Object.keys(params).sort()).toEqual(['beforeSeq', 'maxBytes', 'maxMessages', 'throughSeq']);
    expect(params.maxMessages).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000, default: 50 });
    expect(params.throughSeq).toMatchObject({ type: 'integer', minimum: 0 });
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const [name, schema] of Object.entries(params) as [string, any][]) {
      const below = await app.inject({ url: `/v1/sessions/s/page?${name}=${schema.minimum - 1}`, headers: auth });
      expect(below.statusCode, `${name} below its minimum`).toBe(400);
      expect(JSON.parse(below.body).error.param).toBe(name);
      const above = await app.inject({ url: `/v1/sessions/s/page?${name}=${BigInt(schema.maximum) + 1n}`, headers: auth });
      expect(above.statusCode, `${name} above its maximum`).toBe(400);
      const at = await app.inject({ url: `/v1/sessions/s/page?${name}=${name === 'throughSeq' ? 29 : schema.minimum}`, headers: auth });
      expect(at.statusCode, `${name} in range`).toBe(200);
    }
    const put = doc.paths['/v1/sessions/{id}'].put;
    expect(put.requestBody.required).toBe(false);
    expect(doc.paths['/v1/sessions/{id}/events'].post.requestBody.required).toBe(true);
    expect(put.parameters.find((x: any) => x.name === 'format').schema.enum).toEqual(['jsonl', 'binary']);
  });
});
