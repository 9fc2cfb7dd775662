/**
 * The S3 engine the S3 backend is built on (Ceph RGW, started by
 * scripts/services.mjs), held to the behaviour the backend relies on:
 * conditional create (`If-None-Match: *`) with exactly one winner among
 * racing writers, `If-Match` with an unquoted ETag, ranged GETs, listing by
 * prefix. If an engine upgrade changes any of these, this suite says which,
 * before the backend's own suites fail in less obvious ways.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { s3Request } from '../../scripts/services.mjs';

interface Creds { endpoint: string; accessKeyId: string; secretAccessKey: string; region: string }
type Req = (creds: Creds, method: string, path: string, opts?: { headers?: Record<string, string>; body?: string | Buffer; query?: Record<string, string> }) => Promise<Response>;
const req = s3Request as Req;

const creds: Creds = {
  endpoint: process.env.SESSION_PAGER_TEST_S3_ENDPOINT as string,
  accessKeyId: process.env.AWS_ACCESS_KEY_ID as string,
  secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY as string,
  region: process.env.AWS_REGION ?? 'us-east-1',
};
const bucket = process.env.SESSION_PAGER_TEST_S3_BUCKET as string;
const prefix = `rgw-engine-${randomUUID()}`;
const key = (name: string) => `/${bucket}/${prefix}/${name}`;

afterAll(async () => {
  const list = await req(creds, 'GET', `/${bucket}`, { query: { 'list-type': '2', prefix: `${prefix}/` } });
  for (const m of (await list.text()).matchAll(/<Key>([^<]+)<\/Key>/g)) await req(creds, 'DELETE', `/${bucket}/${m[1]}`);
});

describe('the S3 engine', () => {
  it('is configured: endpoint, keys and bucket', async () => {
    expect(creds.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const head = await req(creds, 'HEAD', `/${bucket}`);
    expect(head.status).toBe(200);
  });

  it('If-None-Match: * creates once; a second create is 412', async () => {
    const first = await req(creds, 'PUT', key('once'), { body: 'first', headers: { 'If-None-Match': '*' } });
    expect(first.status).toBe(200);
    const second = await req(creds, 'PUT', key('once'), { body: 'second', headers: { 'If-None-Match': '*' } });
    expect(second.status).toBe(412);
    expect(await (await req(creds, 'GET', key('once'))).text()).toBe('first');
  });

  it('racing conditional creates of one key: exactly one winner, and its body is what is stored', async () => {
    const bodies = Array.from({ length: 8 }, (_, i) => `writer-${i}`);
    const results = await Promise.all(bodies.map((body) => req(creds, 'PUT', key('race'), { body, headers: { 'If-None-Match': '*' } })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s !== 200).every((s) => s === 412 || s === 409)).toBe(true);
    const winner = bodies[statuses.indexOf(200)];
    expect(await (await req(creds, 'GET', key('race'))).text()).toBe(winner);
  });

  it('If-Match takes the ETag without quotes; a stale ETag is 412', async () => {
    const put = await req(creds, 'PUT', key('cas'), { body: 'v1' });
    const etag = (put.headers.get('etag') as string).replaceAll('"', '');
    const ok = await req(creds, 'PUT', key('cas'), { body: 'v2', headers: { 'If-Match': etag } });
    expect(ok.status).toBe(200);
    const stale = await req(creds, 'PUT', key('cas'), { body: 'v3', headers: { 'If-Match': etag } });
    expect(stale.status).toBe(412);
    expect(await (await req(creds, 'GET', key('cas'))).text()).toBe('v2');
  });

  it('answers ranged GETs with exactly the bytes asked for', async () => {
    const body = Buffer.from(Array.from({ length: 100_000 }, (_, i) => i % 251));
    expect((await req(creds, 'PUT', key('range'), { body })).status).toBe(200);
    for (const [a, b] of [[0, 0], [17, 4096], [99_000, 99_999]] as const) {
      const r = await req(creds, 'GET', key('range'), { headers: { Range: `bytes=${a}-${b}` } });
      expect(r.status).toBe(206);
      expect(Buffer.from(await r.arrayBuffer()).equals(body.subarray(a, b + 1))).toBe(true);
    }
  });

  it('lists keys by prefix', async () => {
    for (const n of ['list/a', 'list/b', 'other']) await req(creds, 'PUT', key(n), { body: n });
    const r = await req(creds, 'GET', `/${bucket}`, { query: { 'list-type': '2', prefix: `${prefix}/list/` } });
    expect(r.status).toBe(200);
    const keys = [...(await r.text()).matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]);
    expect(keys).toEqual([`${prefix}/list/a`, `${prefix}/list/b`]);
  });
});
