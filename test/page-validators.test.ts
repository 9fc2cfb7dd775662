/**
 * What a page's validators promise over HTTP, on a hand-formatted log served
 * by servers that cut its pages differently (one worker writing each page
 * whole; four workers and a slice per 1 byte of cost; two workers with a
 * prepared-page cache, whose coded forms of a cached body are re-cut in
 * equal pieces): the identity tag is the same from every server; a coded
 * tag names its level and cuts, so equal tags always mean equal bytes;
 * every coded form decodes to the identity bytes; If-None-Match compares by
 * identity bytes, so any server's tag of the page in any coding gets a 304
 * and another page's never does; HEAD answers GET's headers; the unpinned
 * page at a cut is the pinned page's bytes and tag; Vary on every page
 * answer, 304s included (docs/decisions.md, "A page's bytes do not depend
 * on how it was cut" and "Coded tags name their cuts").
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
  for (const opts of [{ workers: 1, pageCacheBytes: 0 }, { workers: 4, splitCost: 1, pageCacheBytes: 0 }, { workers: 2, splitCost: 1, pageCacheBytes: 64 << 20 }]) {
    const s = await openStore({ dataDir: dir, warmUp: { jit: false }, ...opts });
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
  it('equal tags are equal bytes, for every coding and server (fresh builds and cached bodies re-coded); every form decodes to one identity body', async () => {
    const byTag = new Map<string, Buffer>();
    const identity: Buffer[] = [];
    const identityTags = new Set<string>();
    // Three rounds: the caching server keeps the page the second time it is asked, and codes its
    // cached body in the other codings (equal pieces, not the workers' slices).
    for (let round = 0; round < 3; round++) {
      for (const a of apps) {
        for (const c of CODINGS) {
          const r = await a.inject({ url: pinned(), headers: c.accept === undefined ? AUTH : { ...AUTH, 'accept-encoding': c.accept } });
          expect(r.statusCode).toBe(200);
          expect(r.headers['content-encoding']).toBe(c.encoding);
          expect(String(r.headers.vary).toLowerCase()).toContain('accept-encoding');
          identity.push(c.decode(r.rawPayload));
          const etag = r.headers.etag as string;
          expect(etag).toMatch(c.encoding === undefined ? /^"[A-Za-z0-9_-]{27}"$/ : new RegExp(`^"[A-Za-z0-9_-]{27}-${c.encoding}\\.[0-9a-f]{6}"$`));
          if (c.encoding === undefined) identityTags.add(etag);
          const seen = byTag.get(etag);
          // A strong tag: the bytes it names, always.
          if (seen !== undefined) expect(r.rawPayload.equals(seen), `${etag} named two byte sequences`).toBe(true);
          else byTag.set(etag, r.rawPayload);
        }
      }
    }
    expect(identityTags.size).toBe(1);
    for (const b of identity) expect(b.equals(identity[0] as Buffer)).toBe(true);
    // Every coded tag is the identity tag's digest with a coding suffix.
    const digest = [...identityTags][0]!.slice(1, -1);
    for (const t of byTag.keys()) expect(t.startsWith(`"${digest}`)).toBe(true);
  });

  it('If-None-Match compares by identity bytes: a tag from any server in any coding gets a 304, another page\'s never does, `*` does', async () => {
    const tags: string[] = [];
    for (const a of apps) for (const c of CODINGS) tags.push((await a.inject({ url: pinned(), headers: c.accept === undefined ? AUTH : { ...AUTH, 'accept-encoding': c.accept } })).headers.etag as string);
    const other: string[] = [];
    for (const a of apps) for (const c of CODINGS) other.push((await a.inject({ url: `/v1/sessions/h/page?throughSeq=${last - 1}&maxMessages=1000`, headers: c.accept === undefined ? AUTH : { ...AUTH, 'accept-encoding': c.accept } })).headers.etag as string);
    for (const t of other) expect(tags).not.toContain(t);
    for (const b of apps) {
      for (const c of CODINGS) {
        const headers = c.accept === undefined ? AUTH : { ...AUTH, 'accept-encoding': c.accept };
        for (const t of tags) {
          const r = await b.inject({ url: pinned(), headers: { ...headers, 'if-none-match': t } });
          expect(r.statusCode, `${t} asked as ${c.accept}`).toBe(304);
          // The client's own tag: the representation it holds, for its cache to freshen.
          expect(r.headers.etag).toBe(t);
          expect(String(r.headers.vary).toLowerCase()).toContain('accept-encoding');
        }
        // Weak (W/) and listed tags; the one of the coding asked for is the one answered.
        const mine = tags.find((t) => (c.encoding === undefined ? !/-(?:gzip|zstd|br)\./.test(t) : t.includes(`-${c.encoding}.`)))!;
        const listed = await b.inject({ url: pinned(), headers: { ...headers, 'if-none-match': `"nope", ${other.join(', ')}, W/${tags.filter((t) => t !== mine)[0]}, ${mine}` } });
        expect(listed.statusCode).toBe(304);
        expect(listed.headers.etag).toBe(mine);
        for (const t of other) expect((await b.inject({ url: pinned(), headers: { ...headers, 'if-none-match': t } })).statusCode, t).toBe(200);
        // A tag that only begins with the page's digest names something else.
        const digest = (tags[0] as string).slice(1, 28);
        for (const t of [`"${digest}x"`, `"${digest}-gzip.zzzzzz"`, `"${digest.slice(0, -1)}"`]) expect((await b.inject({ url: pinned(), headers: { ...headers, 'if-none-match': t } })).statusCode, t).toBe(200);
        const star = await b.inject({ url: pinned(), headers: { ...headers, 'if-none-match': '*' } });
        expect(star.statusCode).toBe(304);
        if (c.encoding === undefined) expect(star.headers.etag).toBe(`"${digest}"`);
      }
    }
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
