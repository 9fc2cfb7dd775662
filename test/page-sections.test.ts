/**
 * An identity page written as its sections (PageBuffer.sections): the
 * store hands the assembled pieces over instead of copying them into one
 * body, the server writes them as they are with the page's Content-Length,
 * and the bytes on the wire are the page's, byte for byte, in both stored
 * formats; what the cache keeps afterwards is the joined body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../src/main/server/index.js';
import { openStore } from '../src/main/store.js';
import type { Store } from '../src/main/store-types.js';
import { makeEvents, tempStore, type TempStore } from './server-helpers.js';

const TOKEN = 'page-sections-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let ts: TempStore;
/** A store over the same files without the page cache: every page built. */
let uncached: Store;
let app: FastifyInstance;

beforeAll(async () => {
  ts = await tempStore(2);
  for (const format of ['jsonl', 'binary'] as const) {
    await ts.store.create(format, { title: format }, { format });
    for (let at = 0; at < 3000; at += 500) await ts.store.append(format, makeEvents(at, 500));
  }
  uncached = await openStore({ dataDir: ts.dir, workers: 2, pageCacheBytes: 0 });
  app = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0 });
  await app.ready();
});

afterAll(async () => {
  await app.close();
  await uncached.close();
  await ts.cleanup();
});

describe('pageBuffer with out.sections', () => {
  for (const format of ['jsonl', 'binary']) {
    it(`${format}: the sections joined are the page's body, and the body read from them is too`, async () => {
      for (const params of [{ maxMessages: 50 }, { maxMessages: 3 }, { throughSeq: 1234, maxMessages: 7 }]) {
        const whole = await uncached.pageBuffer(format, params);
        expect(whole.sections).toBeUndefined();
        const pb = await uncached.pageBuffer(format, params, undefined, undefined, undefined, { sections: true });
        const sections = pb.sections;
        expect(sections).toBeDefined();
        if (sections === undefined) return;
        expect(sections.byteLength).toBe(whole.body.length);
        expect(Buffer.concat(sections.buffers as Buffer[]).equals(whole.body)).toBe(true);
        expect(pb.body.equals(whole.body)).toBe(true);
        expect([pb.fromSeq, pb.toSeq, pb.throughSeq, pb.hasMore]).toEqual([whole.fromSeq, whole.toSeq, whole.throughSeq, whole.hasMore]);
      }
    });
  }

  it('not for a coded page: its body comes whole, with the coded form', async () => {
    const pb = await uncached.pageBuffer('jsonl', { maxMessages: 50 }, undefined, { encoding: 'gzip', levels: { brotliQuality: 4, gzipLevel: 1 } }, undefined, { sections: true });
    expect(pb.sections).toBeUndefined();
    expect(pb.encoded?.encoding).toBe('gzip');
  });
});

describe('the page route', () => {
  it('writes an identity page built for the request from its sections: its bytes and length, not chunked; the cache then holds the joined body', async () => {
    for (const format of ['jsonl', 'binary']) {
      const url = `/v1/sessions/${format}/page?maxMessages=40`;
      const expected = (await uncached.pageBuffer(format, { maxMessages: 40 })).body;
      const hitsBefore = ts.store.stats().cache.pageHits;
      const r = await app.inject({ url, headers: { ...AUTH, 'accept-encoding': 'identity' } });
      expect(r.statusCode).toBe(200);
      expect(r.headers['content-length']).toBe(String(expected.length));
      expect(r.headers['transfer-encoding']).toBeUndefined();
      expect(r.rawPayload.equals(expected)).toBe(true);
      // Kept once written (after the request's turn): the next ask is a cache hit with the same bytes.
      await new Promise((res) => setImmediate(res));
      const again = await app.inject({ url, headers: { ...AUTH, 'accept-encoding': 'identity' } });
      expect(again.rawPayload.equals(expected)).toBe(true);
      expect(again.headers['content-length']).toBe(String(expected.length));
      expect(ts.store.stats().cache.pageHits).toBe(hitsBefore + 1);
      // HEAD: the length, no body.
      const head = await app.inject({ method: 'HEAD', url: `/v1/sessions/${format}/page?maxMessages=41`, headers: AUTH });
      expect(head.statusCode).toBe(200);
      expect(head.body).toBe('');
    }
  });
});
