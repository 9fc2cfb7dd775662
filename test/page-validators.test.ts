/**
 * What a page's validators promise over HTTP, on a hand-formatted log served
 * by two servers that cut its pages differently (one worker writing each
 * page whole; four workers and a slice per 1 byte of cost): one ETag per
 * page, parameters and content coding, the same tag from both servers for
 * the same identity bytes; every coded form decodes to those bytes; HEAD
 * answers GET's headers; the unpinned page at a cut is the pinned page's
 * bytes and tag; Vary on every page answer, 304s included
 * (docs/decisions.md, "A page's bytes do not depend on how it was cut").
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { decompress as fzstdDecompress } from 'fzstd';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importSession } from '../src/main/maintenance/import.js';
import { buildServer } from '../src/main/server/index.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { handFormattedLog, handFormattedLogArb } from './helpers/hand-formatted-log.js';

const TOKEN = 'validators-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const CODINGS = [
  { accept: undefined, encoding: undefined, decode: (b: Buffer) => b },
  { accept: 'gzip', encoding: 'gzip', decode: (b: Buffer) => gunzipSync(b) },
  { accept: 'zstd', encoding: 'zstd', decode: (b: Buffer) => Buffer.from(fzstdDecompress(b)) },
  { accept: 'br', encoding: 'br', decode: (b: Buffer) => brotliDecompressSync(b) },
] as const;

let dir: string;
const stores: PagerStore[] = [];
const apps: FastifyInstance[] = [];
let last = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-validators-'));
  mkdirSync(join(dir, 'in'));
  const [items] = fc.sample(handFormattedLogArb(300, 300), { seed: 12, numRuns: 1 });
  const { text, events } = handFormattedLog(items as NonNullable<typeof items>, 'h');
  last = events.length - 1;
  writeFileSync(join(dir, 'in', 'h.jsonl'), text);
  await importSession(dir, join(dir, 'in', 'h.jsonl'), { id: 'h' });
  for (const opts of [{ workers: 1 }, { workers: 4, splitCost: 1 }]) {
    const s = await openStore({ dataDir: dir, warmUp: { jit: false }, pageCacheBytes: 0, ...opts });
    stores.push(s);
    const a = buildServer(s, { token: TOKEN, maxEventLoopLagMs: 0 });
    apps.push(a);
  }
}, 60_000);

afterAll(async () => {
  for (const a of apps) await a.close();
  for (const s of stores) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

const pinned = () => `/v1/sessions/h/page?throughSeq=${last}&maxMessages=1000`;

describe('page validators', () => {
  it('one tag per page and coding from both servers, each naming the same identity bytes', async () => {
    const identity: Buffer[] = [];
    const tags = new Map<string, Set<string>>();
    for (const a of apps) {
      for (const c of CODINGS) {
        const r = await a.inject({ url: pinned(), headers: c.accept === undefined ? AUTH : { ...AUTH, 'accept-encoding': c.accept } });
        expect(r.statusCode).toBe(200);
        expect(r.headers['content-encoding']).toBe(c.encoding);
        expect(String(r.headers.vary).toLowerCase()).toContain('accept-encoding');
        const body = c.decode(r.rawPayload);
        identity.push(body);
        const etag = r.headers.etag as string;
        expect(etag).toMatch(c.encoding === undefined ? /^"[A-Za-z0-9_-]+"$/ : new RegExp(`^"[A-Za-z0-9_-]+-${c.encoding}"$`));
        (tags.get(c.encoding ?? 'identity') ?? tags.set(c.encoding ?? 'identity', new Set()).get(c.encoding ?? 'identity'))?.add(etag);
      }
    }
    // Both servers give one tag per coding (four tags in all), all for the same identity bytes.
    for (const set of tags.values()) expect(set.size).toBe(1);
    expect(new Set([...tags.values()].flatMap((s) => [...s])).size).toBe(CODINGS.length);
    for (const b of identity) expect(b.equals(identity[0] as Buffer)).toBe(true);
  });

  it('HEAD answers what GET does, without the body; 304 for either with the tag, Vary kept', async () => {
    for (const a of apps) {
      for (const c of CODINGS) {
        const headers = c.accept === undefined ? AUTH : { ...AUTH, 'accept-encoding': c.accept };
        const get = await a.inject({ url: pinned(), headers });
        const head = await a.inject({ method: 'HEAD', url: pinned(), headers });
        expect(head.statusCode).toBe(200);
        expect(head.rawPayload.length).toBe(0);
        for (const h of ['etag', 'content-encoding', 'cache-control', 'vary', 'content-type']) expect(head.headers[h], h).toEqual(get.headers[h]);
        for (const method of ['GET', 'HEAD'] as const) {
          const nm = await a.inject({ method, url: pinned(), headers: { ...headers, 'if-none-match': get.headers.etag as string } });
          expect(nm.statusCode).toBe(304);
          expect(nm.headers.etag).toBe(get.headers.etag);
          expect(String(nm.headers.vary).toLowerCase()).toContain('accept-encoding');
        }
      }
    }
  });

  it('the unpinned page at the last cut is the pinned page: the same bytes and tag, revalidated', async () => {
    for (const a of apps) {
      const p = await a.inject({ url: pinned(), headers: AUTH });
      const u = await a.inject({ url: '/v1/sessions/h/page?maxMessages=1000', headers: AUTH });
      expect(u.rawPayload.equals(p.rawPayload)).toBe(true);
      expect(u.headers.etag).toBe(p.headers.etag);
      expect(p.headers['cache-control']).toContain('immutable');
      expect(u.headers['cache-control']).toBe('no-cache');
    }
  });
});
