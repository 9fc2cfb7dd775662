/**
 * Large page bodies are built into memory used again (store/body-pool.ts),
 * and only once every holder is done with it: the caller that got the page
 * (PageBuffer.release; the HTTP route releases when the response's socket
 * write is over) and the prepared-page cache while it keeps the page. A
 * page's bytes never change while anyone holds them.
 */
import { connect } from 'node:net';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyPool } from '../src/main/store/body-pool.js';
import { PageCache } from '../src/main/page-cache.js';
import { buildServer } from '../src/main/server/index.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import type { PageBuffer, Store } from '../src/main/store-types.js';
import type { PageParams } from '../src/core/types.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { mulberry32 } from '../src/main/gen/prng.js';
import { makeEvents, seedSession, sleep, T0, tempStore, until, type TempStore } from './server-helpers.js';

describe('BodyPool', () => {
  it('takes a released buffer for a body of about its size, and only once its last holder released it', () => {
    const pool = new BodyPool(1000);
    const a = pool.take(5000);
    expect(a.length).toBe(5000);
    pool.hold(a); // a second holder (the cache)
    const releaseA = pool.releaser(a);
    releaseA();
    releaseA(); // once per holder: the second call must not take the cache's count
    const b = pool.take(5000);
    expect(b.buffer).not.toBe(a.buffer);
    pool.release(a); // the cache lets go
    const c = pool.take(4900);
    expect(c.buffer).toBe(a.buffer);
    expect(c.length).toBe(4900);
    expect(pool.reused).toBe(1);
  });

  it('leaves small bodies to Buffer.allocUnsafe and does not pin a large buffer under a small body', () => {
    const pool = new BodyPool(1000);
    const small = pool.take(999);
    pool.release(small);
    expect(pool.freeBytes).toBe(0);
    const big = pool.take(100_000);
    pool.release(big);
    expect(pool.freeBytes).toBeGreaterThanOrEqual(100_000);
    expect(pool.take(2000).buffer).not.toBe(big.buffer);
    expect(pool.take(90_000).buffer).toBe(big.buffer);
  });

  it('keeps the result buffer of a released whole page as a spare for a task of about its size, once', () => {
    const pool = new BodyPool(1000, 600_000);
    const page = Buffer.from(new ArrayBuffer(5000), 0, 4000); // a page written whole: a view of its result
    const release = pool.spareReleaser(page);
    expect(pool.takeSpare(1, 10_000)).toBeUndefined(); // its caller still holds it
    release();
    release(); // once: a second call must not put it there twice
    expect(pool.freeBytes).toBe(0); // not a body buffer for take()
    expect(pool.takeSpare(5001, 10_000)).toBeUndefined(); // too small
    expect(pool.takeSpare(1000, 4999)).toBeUndefined(); // too large
    expect(pool.takeSpare(2500, 5000)).toBe(page.buffer);
    expect(pool.takeSpare(1, 10_000)).toBeUndefined(); // handed out once
    expect(pool.sparesTaken).toBe(1);
  });

  it('keeps a prepared buffer, every page of it touched, for the first body that fits in it, also once idle', async () => {
    const pool = new BodyPool(1000, 20);
    pool.prepare(500); // below the pool's smallest body: nothing
    expect(pool.preparedBytes).toBe(0);
    pool.prepare(10_000);
    expect(pool.preparedBytes).toBe(12_288); // whole 4 KiB pages
    await sleep(60); // past the idle time: released bodies are let go, this one is kept
    expect(pool.take(13_000).buffer.byteLength).not.toBe(12_288); // too large for it: a fresh buffer
    const body = pool.take(2000);
    expect(body.buffer.byteLength).toBe(12_288);
    expect(body.length).toBe(2000);
    expect(pool.reused).toBe(1);
    expect(pool.preparedBytes).toBe(0);
  });

  it('keeps nothing once idle', async () => {
    const pool = new BodyPool(1000, 20);
    pool.release(pool.take(10_000));
    expect(pool.freeBytes).toBeGreaterThan(0);
    await until('the idle timer', () => pool.freeBytes === 0);
  });
});

describe("the warm-up's body for the first large page", () => {
  let ts: TempStore;
  const opened: PagerStore[] = [];
  beforeAll(async () => {
    ts = await tempStore(1);
    await seedSession(ts.store, 'w', 1200, 300);
  });
  afterAll(async () => {
    for (const s of opened) await s.close();
    await ts?.cleanup();
  });
  const open = async (bodyBytes: number) => {
    const s = await openStore({ dataDir: ts.dir, workers: 1, pageCacheBytes: 0, inPlaceBytes: 1, bodyPool: { minBytes: 1, idleMs: 600_000 }, warmUp: { jit: false, pagePath: false, bodyBytes } });
    opened.push(s);
    await s.warmUp();
    return s;
  };

  it("is the first page's body when the page fits it, and that page is the reference page", async () => {
    const params = { maxMessages: 200 };
    const want = referencePage(await readWholeLog(join(ts.dir, 'sessions', 'w.events')), 'w', params);
    const size = Buffer.byteLength(JSON.stringify(want));
    // Half as large again as the body: not the size a fresh body's buffer gets (1/8 of headroom).
    expect(size).toBeGreaterThan(16 * 1024);
    const prepared = Math.ceil((size * 1.5) / 4096) * 4096;
    const store = await open(prepared);
    const first = await store.pageBuffer('w', params);
    expect(first.body.buffer.byteLength).toBe(prepared);
    expect(JSON.parse(first.body.toString('utf8'))).toEqual(want);
    expect(Buffer.from(first.body).equals(Buffer.from((await ts.store.pageBuffer('w', params)).body))).toBe(true);
    // Without it (bodyBytes 0) the first body is a fresh buffer with the pool's headroom.
    const without = await (await open(0)).pageBuffer('w', params);
    expect(without.body.buffer.byteLength).not.toBe(prepared);
    expect(without.body.equals(first.body)).toBe(true);
  });
});

describe('PageCache', () => {
  it('tells of each page it stops keeping', () => {
    const evicted: PageBuffer[] = [];
    const page = (n: number): PageBuffer => ({ body: Buffer.alloc(n), sessionId: 's', throughSeq: n, fromSeq: 0, toSeq: n, hasMore: false, frames: 0, frameBytes: 0, logBytesRead: 0 });
    const cache = new PageCache(400, 200, 10, (p) => evicted.push(p));
    const p1 = page(150);
    const p2 = page(150);
    const p3 = page(150);
    expect(cache.set('1', p1, true)).toBe(true);
    expect(cache.set('2', p2, true)).toBe(true);
    expect(evicted).toEqual([]);
    expect(cache.set('3', p3, true)).toBe(true);
    expect(evicted).toEqual([p1]);
    expect(cache.set('big', page(300), true)).toBe(false);
  });
});

describe('page bodies in a store', () => {
  let ts: TempStore;
  let cached: PagerStore;
  let uncached: PagerStore;
  beforeAll(async () => {
    ts = await tempStore(1);
    await seedSession(ts.store, 'c', 1200, 300);
    // Every body pooled (the default starts at 256 KiB) and none written whole by its worker (only
    // slices under the in-place size are: 1 byte), and kept however slow a loaded machine is
    // between pages; one store without the prepared-page cache.
    const bodyPool = { minBytes: 1, idleMs: 600_000 };
    cached = await openStore({ dataDir: ts.dir, workers: 1, bodyPool, inPlaceBytes: 1 });
    uncached = await openStore({ dataDir: ts.dir, workers: 1, bodyPool, inPlaceBytes: 1, pageCacheBytes: 0 });
  });
  afterAll(async () => {
    await cached?.close();
    await uncached?.close();
    await ts?.cleanup();
  });

  /** Pages of 40 messages ending at different seqs: different bytes, about the same size. */
  const at = (throughSeq: number) => ({ throughSeq, maxMessages: 40 });

  it('builds a later page into a released body, never into one its caller still holds', async () => {
    const held = await uncached.pageBuffer('c', at(600));
    const heldBytes = Buffer.from(held.body);
    const other = await uncached.pageBuffer('c', at(700));
    expect(other.body.buffer).not.toBe(held.body.buffer);
    expect(held.body.equals(heldBytes)).toBe(true);
    // Done with it: the next page of about its size is built there, and is right.
    held.release?.();
    const next = await uncached.pageBuffer('c', at(800));
    expect(next.body.buffer).toBe(held.body.buffer);
    expect(next.body.equals(Buffer.from((await ts.store.pageBuffer('c', at(800))).body))).toBe(true);
    // The holder of `other` never released it: it is still its page.
    expect(other.body.equals((await ts.store.pageBuffer('c', at(700))).body)).toBe(true);
  });

  it('never builds into a body the prepared-page cache keeps, though its caller released it', async () => {
    const tail = await cached.pageBuffer('c', { maxMessages: 40 }); // a session's newest page is kept at once
    const tailBytes = Buffer.from(tail.body);
    tail.release?.();
    const buffers = new Set<ArrayBufferLike>();
    for (const seq of [500, 600, 700, 800]) {
      const p = await cached.pageBuffer('c', at(seq));
      expect(p.body.buffer).not.toBe(tail.body.buffer);
      buffers.add(p.body.buffer);
      p.release?.();
    }
    // Bodies were used again meanwhile (these pages are built once, not kept), just not the cached one.
    expect(buffers.size).toBeLessThan(4);
    expect(tail.body.equals(tailBytes)).toBe(true);
    const hit = await cached.pageBuffer('c', { maxMessages: 40 });
    expect(hit.body).toBe(tail.body);
    expect(hit.body.equals(tailBytes)).toBe(true);
    hit.release?.();
  });
});

describe('pages written whole by their worker', () => {
  // A small page of one slice is written whole into its worker's result, and its body is a view
  // of that buffer (page-service.ts, SliceTask.pageHead): the buffer is the page's from then on.
  let ts: TempStore;
  let whole: PagerStore;
  let assembled: PagerStore;
  beforeAll(async () => {
    ts = await tempStore(1);
    await seedSession(ts.store, 'w', 4000, 250);
    // A session that begins with an answer's chunks: its first pages begin with a run (the run a
    // worker writing the page whole settles first, where an assembler closes the head run).
    await ts.store.create('h', { title: 'h' });
    await ts.store.append('h', makeEvents(1, 600).map((e) => ({ ...e, seq: e.seq - 1 })));
    // Slices of ~4 KiB of decode cost: pages of 40 messages are cut in two at 1 in flight, and
    // are one slice with as many pages in flight as workers. The second store writes no page
    // whole (only slices under its in-place size are; 1 byte: none) and pools every body: every
    // one of its pages is assembled, as before.
    whole = await openStore({ dataDir: ts.dir, workers: 2, pageCacheBytes: 0, splitCost: 4096 });
    assembled = await openStore({ dataDir: ts.dir, workers: 2, pageCacheBytes: 0, splitCost: 4096, inPlaceBytes: 1, bodyPool: { minBytes: 1 } });
  });
  afterAll(async () => {
    await whole?.close();
    await assembled?.close();
    await ts?.cleanup();
  });

  const seqs = Array.from({ length: 24 }, (_, i) => 300 + i * 151);
  const at = (throughSeq: number) => ({ throughSeq, maxMessages: 40 });
  /** The page's result buffer holds the header and trailer after the page: the page is its first bytes. */
  const writtenWhole = (p: PageBuffer) => p.body.byteOffset === 0 && p.body.buffer.byteLength > p.body.length;

  it('are the bytes of the same page assembled from two slices, and keep them while later pages are built', async () => {
    const alone = await whole.pageBuffer('w', at(1000));
    expect(writtenWhole(alone)).toBe(false); // two slices, assembled
    const first = await Promise.all(seqs.map((s) => whole.pageBuffer('w', at(s))));
    expect(first.every(writtenWhole)).toBe(true);
    expect(new Set(first.map((p) => p.body.buffer)).size).toBe(first.length);
    const copies = first.map((p) => Buffer.from(p.body));
    // More pages at once while the first ones' callers still hold theirs: never written into.
    const later = await Promise.all(seqs.map((s) => whole.pageBuffer('w', at(s + 75))));
    expect(later.every(writtenWhole)).toBe(true);
    for (const p of later) expect(first.some((f) => f.body.buffer === p.body.buffer)).toBe(false);
    for (const [i, p] of first.entries()) expect(p.body.equals(copies[i] as Buffer)).toBe(true);
    for (const p of first) p.release?.();
    // The same bytes as the assembled pages, one at a time (two slices each) and at once.
    for (const [i, s] of seqs.entries()) expect((await assembled.pageBuffer('w', at(s))).body.equals(copies[i] as Buffer)).toBe(true);
    const together = await Promise.all(seqs.map((s) => assembled.pageBuffer('w', at(s + 75))));
    // (Its bodies come from the pool: buffers with room beyond the body, so writtenWhole cannot tell them.)
    for (const [i, p] of together.entries()) expect(p.body.equals((later[i] as PageBuffer).body)).toBe(true);
  });

  it('go back to the workers once released, and later pages written into them are right', async () => {
    const bodies = (whole as unknown as { pages: { bodies: BodyPool } }).pages.bodies;
    const taken = bodies.sparesTaken;
    const first = await Promise.all(seqs.map((s) => whole.pageBuffer('w', at(s))));
    const kept = first.slice(0, 4);
    const keptCopies = kept.map((p) => Buffer.from(p.body));
    // Callers done with all but four: their buffers are spares for the next pages' tasks.
    for (const p of first.slice(4)) p.release?.();
    for (let round = 0; round < 3; round++) {
      const next = await Promise.all(seqs.map((s) => whole.pageBuffer('w', at(s + 37 * (round + 1)))));
      expect(next.every(writtenWhole)).toBe(true);
      for (const [i, p] of next.entries()) expect(p.body.equals((await assembled.pageBuffer('w', at((seqs[i] as number) + 37 * (round + 1)))).body)).toBe(true);
      for (const p of next) p.release?.();
    }
    expect(bodies.sparesTaken).toBeGreaterThan(taken);
    // The four still held were never handed back: their bytes are their pages'.
    for (const [i, p] of kept.entries()) expect(p.body.equals(keptCopies[i] as Buffer)).toBe(true);
    for (const p of kept) p.release?.();
  });

  it('begin with a run as the assembled pages do', async () => {
    const first = Array.from({ length: 24 }, (_, i) => ({ throughSeq: 150 + i * 17, maxMessages: 200 }));
    const pages = await Promise.all(first.map((q) => whole.pageBuffer('h', q)));
    for (const [i, p] of pages.entries()) {
      expect(writtenWhole(p)).toBe(true);
      expect(p.fromSeq).toBe(0);
      expect(p.body.includes('"records":[{"chunks"')).toBe(true);
      expect(p.body.equals((await assembled.pageBuffer('h', first[i])).body)).toBe(true);
    }
  });
});

describe('the page route', () => {
  let ts: TempStore;
  beforeAll(async () => {
    ts = await tempStore(1);
    await seedSession(ts.store, 'c', 200, 200);
  });
  afterAll(async () => {
    await ts?.cleanup();
  });

  it('releases a body only once its response has been written to the last byte', async () => {
    // A body larger than the loopback socket's buffers can take while the client does not read.
    const big = Buffer.alloc(16 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i);
    let released = 0;
    let returned = false;
    const store = new Proxy(ts.store, {
      get(target, prop) {
        if (prop === 'pageBuffer') {
          return async (...args: Parameters<Store['pageBuffer']>) => {
            const pb = await target.pageBuffer(...args);
            returned = true;
            return { ...pb, body: big, release: () => released++ };
          };
        }
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const app = buildServer(store, { maxEventLoopLagMs: 0 });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.address() as AddressInfo;
      const socket = connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      socket.pause();
      socket.write('GET /v1/sessions/c/page HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      await until('the page handed to the route', () => returned);
      await sleep(300); // the server writes what the socket takes, then waits for the client
      expect(released).toBe(0);
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      const ended = new Promise((r) => socket.once('end', r));
      socket.resume();
      await ended;
      const all = Buffer.concat(chunks);
      const head = all.indexOf('\r\n\r\n');
      expect(all.subarray(0, head).toString('latin1')).toMatch(/^HTTP\/1\.1 200/);
      expect(all.subarray(head + 4).equals(big)).toBe(true);
      await until('the release', () => released > 0);
      expect(released).toBe(1);
      socket.destroy();
    } finally {
      await app.close();
    }
  });
});

/** One GET on a fresh connection whose reader waits `pauseMs` before taking any byte: the status and the body. */
async function slowGet(port: number, path: string, pauseMs: number): Promise<{ status: string; body: Buffer }> {
  const socket = connect(port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  socket.pause();
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n`);
  if (pauseMs > 0) await sleep(pauseMs);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise((r) => socket.once('end', r));
  socket.resume();
  await ended;
  socket.destroy();
  const all = Buffer.concat(chunks);
  const head = all.indexOf('\r\n\r\n');
  return { status: all.subarray(0, head).toString('latin1').split('\r\n')[0] as string, body: all.subarray(head + 4) };
}

describe('pages served over HTTP while their buffers are recycled', () => {
  const N = 400;
  let ts: TempStore;
  let store: PagerStore;
  beforeAll(async () => {
    ts = await tempStore(1);
    // Messages of ~40 KB of text that hardly compresses: 150-message pages of ~6 MB, more than a
    // loopback connection's kernel buffers take while its reader waits (~4 MB: smaller responses
    // are all in the kernel at once, their buffers free whatever the route does), stored in about as many bytes (a
    // released buffer is handed to a task whose stored bytes are at least half its size).
    const rand = mulberry32(3);
    const text = () => Array.from({ length: 30_000 + Math.floor(rand() * 20_000) }, () => String.fromCharCode(48 + Math.floor(rand() * 75))).join('');
    await ts.store.create('r', { title: 'r' });
    for (let at = 0; at < N; at += 20) {
      await ts.store.append('r', Array.from({ length: 20 }, (_, i) => ({ type: 'user/message', seq: at + i, time: T0 + at + i, data: { content: [{ type: 'text', text: text() }] } })));
    }
    await ts.store.close();
    // As `serve` opens it (the prepared-page cache on), but every page one slice under the in-place
    // size, written whole by its worker: the buffers released pages go back to (body-pool.ts).
    store = await openStore({ dataDir: ts.dir, workers: 2, splitCost: 1e12, inPlaceBytes: 16 * 1024 * 1024 });
  });
  afterAll(async () => {
    await store?.close();
    await ts?.cleanup();
  });

  it('are the reference pages byte for byte, many at once, with readers that hold their response while later pages are built', async () => {
    const log = await readWholeLog(join(ts.dir, 'sessions', 'r.events'));
    const bodies = (store as unknown as { pages: { bodies: BodyPool } }).pages.bodies;
    const app = buildServer(store, { maxEventLoopLagMs: 0, token: 't' });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.address() as AddressInfo;
      const rand = mulberry32(7);
      // Random pages as the HTTP lanes ask (most asked once), some asked again (the cache's), and the tail.
      const asked: PageParams[] = [];
      for (let i = 0; i < 48; i++) {
        const again = i > 8 && rand() < 0.15 ? asked[Math.floor(rand() * asked.length)] : undefined;
        asked.push(again ?? (rand() < 0.05 ? { maxMessages: 150 } : { throughSeq: N - 1, beforeSeq: 1 + Math.floor(rand() * N), maxMessages: 150 }));
      }
      const qs = (p: PageParams) => new URLSearchParams(Object.entries(p).map(([k, v]): [string, string] => [k, String(v)])).toString();
      const taken = bodies.sparesTaken;
      const wrong: string[] = [];
      // 8 clients, each asking its next page as soon as it has read the last; a third of the readers
      // wait up to 150 ms before taking a byte, while the others' pages are built (into released buffers).
      const pauses = asked.map(() => (rand() < 0.33 ? Math.floor(rand() * 150) : 0));
      let next = 0;
      const client = async () => {
        while (next < asked.length) {
          const i = next++;
          const p = asked[i] as PageParams;
          const g = await slowGet(port, `/v1/sessions/r/page?${qs(p)}`, pauses[i] as number);
          if (!/^HTTP\/1\.1 200/.test(g.status) || !g.body.equals(Buffer.from(JSON.stringify(referencePage(log, 'r', p))))) wrong.push(`${qs(p)}: ${g.status}`);
        }
      };
      await Promise.all(Array.from({ length: 8 }, client));
      expect(wrong).toEqual([]);
      // Released pages' buffers did go back to the workers (so the bytes above were written into recycled ones).
      expect(bodies.sparesTaken - taken).toBeGreaterThan(5);
    } finally {
      await app.close();
    }
  });
});
