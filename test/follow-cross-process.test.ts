/**
 * Follow across processes on one machine: a writer in a child process
 * appends; a library follower (`store.follow`) and an HTTP SSE follower in
 * this process get every event, in order, with no gap and no duplicate.
 * The store's backstop poll is set far longer than the test, so what
 * arrives came through the file watcher (fs.watch on the entry sidecar).
 * Many SSE followers of one session share the store's looks (the end after
 * a change, each range of events): each range is read about once, not once
 * per follower. Latency is measured by bench/follow-latency.mjs, not here.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { SessionEvent } from '../src/core/types.js';
import { buildServer } from '../src/main/server/index.js';
import type { Store } from '../src/main/store-types.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { openSse, until, type SseClient } from './server-helpers.js';
import { tickEvents } from './helpers/tick-events.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const child = resolve(here, 'helpers/append-child.mjs');
const dist = resolve(here, '../dist/main/index.js');
const ticks = tickEvents as (from: number, n: number) => SessionEvent[];

let dir: string;
let store: PagerStore;
let app: FastifyInstance;
let sse: SseClient | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sp-xproc-'));
  store = await openStore({ dataDir: dir, workers: 1, watchPollMs: 10 * 60_000 });
  app = buildServer(store, { token: null, maxEventLoopLagMs: 0, followShedFromMs: 0 });
  await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  sse?.close();
  await app?.close();
  await store?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** Run the child writer: `batches` appends of `size` events, `delayMs` apart. */
function appendFromChild(id: string, batches: number, size: number, delayMs: number): Promise<void> {
  return new Promise((ok, fail) => {
    const p = spawn(process.execPath, [child, dist, dir, id, String(batches), String(size), String(delayMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => (err += d));
    p.on('error', fail);
    p.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`writer process exited ${code}: ${err}`))));
  });
}

describe('follow across processes', () => {
  it('delivers another process’s appends to library and SSE followers, no gap, no duplicate', async () => {
    expect(existsSync(dist), 'dist/ is built by `npm test` (tsc) before the tests run').toBe(true);
    const w = await SessionWriter.create(dir, 'xp', { title: 'cross-process' });
    await w.append(ticks(0, 10));
    await w.close(); // the child process takes the session's lock

    const port = (app.server.address() as AddressInfo).port;
    sse = await openSse(`http://127.0.0.1:${port}/v1/sessions/xp/follow?maxMessages=1`);
    expect(sse.status).toBe(200);
    await sse.waitFor('snapshot', (e) => e.some((x) => x.event === 'snapshot'));

    const total = 10 + 20 * 7;
    const got: SessionEvent[] = [];
    const follower = (async () => {
      for await (const e of store.follow('xp', { fromSeq: 0 })) {
        got.push(e);
        if (e.seq === total - 1) break;
      }
    })();

    await appendFromChild('xp', 20, 7, 15);
    await Promise.race([follower, new Promise((_, fail) => setTimeout(() => fail(new Error(`library follower got ${got.length} of ${total} events`)), 20_000))]);
    expect(got).toEqual(ticks(0, total));

    await sse.waitFor('every appended event', (e) => e.filter((x) => x.event === 'event').length >= total - 10, 20_000);
    const evs = sse.events.filter((x) => x.event === 'event');
    expect(evs.map((x) => x.id)).toEqual(ticks(10, total - 10).map((e) => String(e.seq)));
    expect(evs.map((x) => JSON.parse(x.data))).toEqual(ticks(10, total - 10));
    expect(store.stats().follow).toEqual({ watchedSessions: 1, followers: 0 }); // the SSE stream's watcher
    sse.close();
    await sse.ended;
    // The server sees the client go, then closes the stream and its watch.
    await until('the stream’s watcher closed', () => store.stats().follow.watchedSessions === 0, 10_000);
    expect(store.stats().follow).toEqual({ watchedSessions: 0, followers: 0 });
  });
  it('many SSE followers of one session each get every event, no gap, no duplicate, while the store reads each range about once, not once per follower', async () => {
    const FOLLOWERS = 12;
    const w = await SessionWriter.create(dir, 'many', { title: 'fan-out' });
    await w.append(ticks(0, 5));
    await w.close();
    // The store as the server sees it, counting the reads its followers ask for.
    const reads: string[] = [];
    const counted = new Proxy(store, {
      get(target, prop) {
        if (prop === 'readEvents') {
          return (id: string, from: number, to: number) => {
            reads.push(`${id}:${from}:${to}`);
            return target.readEvents(id, from, to);
          };
        }
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as Store;
    const fan = buildServer(counted, { token: null, maxEventLoopLagMs: 0, followShedFromMs: 0 });
    await fan.listen({ host: '127.0.0.1', port: 0 });
    const clients: SseClient[] = [];
    try {
      const port = (fan.server.address() as AddressInfo).port;
      for (let k = 0; k < FOLLOWERS; k++) {
        const c = await openSse(`http://127.0.0.1:${port}/v1/sessions/many/follow?maxMessages=1`);
        clients.push(c);
        expect(c.status).toBe(200);
        await c.waitFor('snapshot', (e) => e.some((x) => x.event === 'snapshot'));
      }
      await appendFromChild('many', 20, 7, 15);
      const total = 5 + 20 * 7;
      for (const c of clients) {
        await c.waitFor('every appended event', (e) => e.filter((x) => x.event === 'event').length >= total - 5, 20_000);
        const evs = c.events.filter((x) => x.event === 'event');
        expect(evs.map((x) => x.id)).toEqual(ticks(5, total - 5).map((e) => String(e.seq)));
        expect(evs.map((x) => JSON.parse(x.data))).toEqual(ticks(5, total - 5));
      }
      // Unshared, each follower read each range itself: FOLLOWERS times as many reads as ranges.
      const ranges = new Set(reads).size;
      expect(ranges).toBeGreaterThan(0);
      expect(reads.length, `${reads.length} reads of ${ranges} ranges`).toBeLessThanOrEqual(3 * ranges);
    } finally {
      for (const c of clients) c.close();
      await fan.close();
    }
  });
});
