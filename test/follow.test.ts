/**
 * Follow (SSE) against a real listening server on 127.0.0.1: snapshot then
 * every appended event individually, in order, no gap, no duplicate, ids =
 * seqs; Last-Event-ID resume; heartbeats; appends made outside the store;
 * slow clients bounded and dropped; shutdown ends streams.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { buildServer, type ServerOptions } from '../src/main/server/index.js';
import { SessionWriter } from '../src/main/session-writer.js';
import type { SessionEvent } from '../src/core/types.js';
import { burnCpu, makeEvents, openSse, seedSession, sleep, tempStore, until, type SseClient, type SseEvent, type TempStore } from './server-helpers.js';
import { damageFrame } from './helpers/damage.js';

const TOKEN = 'follow-token-abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let ts: TempStore;
const servers: FastifyInstance[] = [];
const clients: SseClient[] = [];

async function listen(opts: ServerOptions = {}): Promise<{ app: FastifyInstance; base: string }> {
  const app = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0, followShedFromMs: 0, ...opts, follow: { heartbeatMs: 10_000, ...opts.follow } });
  servers.push(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  return { app, base: `http://127.0.0.1:${port}` };
}

async function sse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const c = await openSse(url, { ...AUTH, ...headers });
  clients.push(c);
  return c;
}

async function appendHttp(base: string, id: string, events: SessionEvent[]): Promise<void> {
  const r = await fetch(`${base}/v1/sessions/${id}/events`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ events }) });
  expect(r.status).toBe(200);
  await r.json();
}

/** The `event` events' seqs must be exactly from..to-1, ids equal to seqs, data equal to the appended events. */
function expectRun(events: SseEvent[], from: number, to: number, expected: (from: number, n: number) => SessionEvent[] = makeEvents): void {
  const evs = events.filter((e) => e.event === 'event');
  const seqs = evs.map((e) => (JSON.parse(e.data) as SessionEvent).seq);
  expect(seqs.length).toBe(to - from);
  for (let i = 0; i < seqs.length; i++) {
    if (seqs[i] !== from + i) throw new Error(`event ${i}: seq ${seqs[i]} where ${from + i} was expected (gap or duplicate)`);
    if (evs[i]!.id !== String(from + i)) throw new Error(`event ${i}: id ${evs[i]!.id} is not its seq ${from + i}`);
  }
  expect(evs.map((e) => JSON.parse(e.data))).toEqual(expected(from, to - from));
}

function lastSeqOf(events: SseEvent[]): number {
  for (let i = events.length - 1; i >= 0; i--) if (events[i]!.event === 'event') return Number(events[i]!.id);
  return -2;
}

beforeAll(async () => {
  ts = await tempStore(2);
  await seedSession(ts.store, 'shared', 200, 100);
});

afterAll(async () => {
  for (const c of clients) c.close();
  for (const s of servers) await s.close();
  await ts.cleanup();
});

describe('follow', () => {
  it('sends the tail page as a snapshot, then every appended event individually', async () => {
    await seedSession(ts.store, 'f1', 500, 100);
    const { base } = await listen();
    const c = await sse(`${base}/v1/sessions/f1/follow?maxMessages=5`);
    expect(c.status).toBe(200);
    expect(c.res.headers['content-type']).toMatch(/^text\/event-stream/);
    await c.waitFor('snapshot', (e) => e.length >= 1);
    const snap = c.events[0]!;
    expect(snap.event).toBe('snapshot');
    const data = JSON.parse(snap.data) as { cursor: number; page: unknown };
    expect(data.cursor).toBe(499);
    expect(snap.id).toBe('499');
    expect(data.page).toEqual(await ts.store.page('f1', { maxMessages: 5, throughSeq: 499 }));

    // Batches of uneven sizes, appended over HTTP while the stream reads.
    let next = 500;
    const sizes = [1, 7, 200, 3, 1, 64, 999, 2, 50, 13];
    await Promise.all(
      (() => {
        const jobs: Promise<void>[] = [];
        let chain = Promise.resolve();
        for (const n of sizes) {
          const from = next;
          next += n;
          chain = chain.then(() => appendHttp(base, 'f1', makeEvents(from, n)));
          jobs.push(chain);
        }
        return jobs;
      })(),
    );
    await c.waitFor('all appended events', (e) => lastSeqOf(e) === next - 1);
    await sleep(100);
    expectRun(c.events.slice(1), 500, next);
  });

  it('loses nothing and repeats nothing when appends race the connection', async () => {
    await seedSession(ts.store, 'race', 100, 100);
    const { base } = await listen();
    let next = 100;
    let appending = true;
    const appender = (async () => {
      for (let i = 0; i < 60; i++) {
        const n = 1 + ((i * 37) % 23);
        await ts.store.append('race', makeEvents(next, n));
        next += n;
        if (i % 5 === 0) await sleep(1);
      }
      appending = false;
    })();
    // Some 80 follows opened 3 ms apart each ask for a snapshot page: on a busy
    // machine the server rightly sheds a few (503 + Retry-After); such a client
    // comes back after the wait, as a real one does, and must then see the same.
    const admitted = async (): Promise<SseClient> => {
      for (let attempt = 0; ; attempt++) {
        const c = await sse(`${base}/v1/sessions/race/follow?maxMessages=2`);
        if (c.status !== 503 || attempt === 20) return c;
        c.close();
        await sleep(Number(c.res.headers['retry-after'] ?? 1) * 1000);
      }
    };
    const streams: SseClient[] = [];
    while (appending) {
      streams.push(await admitted());
      await sleep(3);
    }
    await appender;
    streams.push(await admitted());
    expect(streams.length).toBeGreaterThan(2);
    for (const s of streams) {
      await s.waitFor('snapshot', (e) => e.length >= 1);
      const cursor = (JSON.parse(s.events[0]!.data) as { cursor: number }).cursor;
      expect(s.events[0]!.event).toBe('snapshot');
      await s.waitFor('the end of the log', (e) => lastSeqOf(e) === next - 1 || (cursor === next - 1 && e.length === 1));
      expectRun(s.events.slice(1), cursor + 1, next);
    }
  });

  it('resumes after Last-Event-ID without a snapshot, then continues live', async () => {
    await seedSession(ts.store, 'resume', 300, 100);
    const { base } = await listen();
    const c = await sse(`${base}/v1/sessions/resume/follow`, { 'last-event-id': '120' });
    expect(c.status).toBe(200);
    await c.waitFor('catch-up to 299', (e) => lastSeqOf(e) === 299);
    expect(c.events.some((e) => e.event === 'snapshot')).toBe(false);
    await appendHttp(base, 'resume', makeEvents(300, 40));
    await c.waitFor('live 339', (e) => lastSeqOf(e) === 339);
    expectRun(c.events, 121, 340);
    // The query-string form (for EventSource polyfills that cannot set headers).
    const q = await sse(`${base}/v1/sessions/resume/follow?lastEventId=330`);
    await q.waitFor('331..339', (e) => lastSeqOf(e) === 339);
    expectRun(q.events, 331, 340);
    // Resuming exactly at the end: nothing until the next append.
    const atEnd = await sse(`${base}/v1/sessions/resume/follow`, { 'last-event-id': '339' });
    await sleep(150);
    expect(atEnd.events).toEqual([]);
    await appendHttp(base, 'resume', makeEvents(340, 1));
    await atEnd.waitFor('340', (e) => lastSeqOf(e) === 340);
    expectRun(atEnd.events, 340, 341);
  });

  it('follows an empty session from its cursor -1', async () => {
    await ts.store.create('fresh', {});
    const { base } = await listen();
    const c = await sse(`${base}/v1/sessions/fresh/follow`);
    await c.waitFor('snapshot', (e) => e.length >= 1);
    expect(c.events[0]!.id).toBe('-1');
    expect(JSON.parse(c.events[0]!.data)).toEqual({ cursor: -1, page: { sessionId: 'fresh', throughSeq: -1, fromSeq: 0, toSeq: 0, hasMore: false, records: [] } });
    await appendHttp(base, 'fresh', makeEvents(0, 12));
    await c.waitFor('0..11', (e) => lastSeqOf(e) === 11);
    expectRun(c.events.slice(1), 0, 12);
    const r = await sse(`${base}/v1/sessions/fresh/follow`, { 'last-event-id': '-1' });
    await r.waitFor('0..11', (e) => lastSeqOf(e) === 11);
    expectRun(r.events, 0, 12);
  });

  it('rejects bad follow requests before the stream starts', async () => {
    const { base } = await listen();
    const cases: [string, Record<string, string>, number, string][] = [
      ['/v1/sessions/shared/follow', { 'last-event-id': 'abc' }, 400, 'invalid_request'],
      ['/v1/sessions/shared/follow', { 'last-event-id': '999999' }, 400, 'invalid_request'],
      ['/v1/sessions/shared/follow?maxMessages=0', {}, 400, 'invalid_request'],
      ['/v1/sessions/shared/follow?maxMessages=1001', {}, 400, 'invalid_request'],
      ['/v1/sessions/ghost/follow', {}, 404, 'session_not_found'],
      ['/v1/sessions/ghost/follow', { 'last-event-id': '3' }, 404, 'session_not_found'],
      ['/v1/sessions/bad..id/follow', {}, 400, 'invalid_request'],
    ];
    for (const [url, headers, status, code] of cases) {
      const r = await fetch(`${base}${url}`, { headers: { ...AUTH, ...headers } });
      expect(r.status, url).toBe(status);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe(code);
    }
    const unauth = await fetch(`${base}/v1/sessions/shared/follow`);
    expect(unauth.status).toBe(401);
  });

  it('ends the stream with an error event when catch-up reaches a damaged frame', async () => {
    await ts.store.create('dmg', {}, { format: 'binary' });
    for (let at = 0; at < 400; at += 20) await ts.store.append('dmg', makeEvents(at, 20));
    const victim = await damageFrame(ts.dir, 'dmg', 200);
    const { base } = await listen({ follow: { catchUpChunk: 50 } });
    const c = await sse(`${base}/v1/sessions/dmg/follow`, { 'last-event-id': '9' });
    expect(c.status).toBe(200);
    await c.ended;
    const last = c.events.at(-1)!;
    expect(last.event).toBe('error');
    const err = JSON.parse(last.data) as { error: { code: string; lastEventId: number } };
    expect(err.error.code).toBe('corrupt_range');
    // Everything before the damaged chunk arrived, in order; the error says where to resume.
    expect(err.error.lastEventId).toBe(lastSeqOf(c.events));
    expect(err.error.lastEventId).toBeLessThan(victim.seq);
    expectRun(c.events.slice(0, -1), 10, err.error.lastEventId + 1);
  });

  it('sends heartbeats as comment lines', async () => {
    const { base } = await listen({ follow: { heartbeatMs: 50 } });
    const c = await sse(`${base}/v1/sessions/shared/follow?maxMessages=1`);
    await until('three heartbeats', () => c.comments.filter((x) => x === 'heartbeat').length >= 3, 5000);
  });

  it('picks up appends made outside this store (another writer) through the file watcher', async () => {
    const w = await SessionWriter.create(ts.dir, 'external', { title: 'ext' });
    await w.append(makeEvents(0, 10));
    const { base } = await listen();
    const c = await sse(`${base}/v1/sessions/external/follow`);
    await c.waitFor('snapshot', (e) => e.length >= 1);
    expect(JSON.parse(c.events[0]!.data).cursor).toBe(9);
    await w.append(makeEvents(10, 15));
    await w.append(makeEvents(25, 5));
    await c.waitFor('29', (e) => lastSeqOf(e) === 29);
    expectRun(c.events.slice(1), 10, 30);
    await w.close();
  });

  it('bounds what a slow client can make the server buffer, drops it when stalled, and it resumes losslessly', async () => {
    await seedSession(ts.store, 'slow', 10, 10);
    const maxBufferedBytes = 64 * 1024;
    const { app, base } = await listen({ follow: { maxBufferedBytes, stallTimeoutMs: 1500, endGraceMs: 10_000 } });
    const hub = app.pagerState.hub;
    const c = await sse(`${base}/v1/sessions/slow/follow?maxMessages=1`);
    await c.waitFor('snapshot', (e) => e.length >= 1);
    c.pause();
    const big = (from: number, n: number): SessionEvent[] =>
      makeEvents(from, n).map((e) => (e.type === 'custom/note' || e.type === 'user/message' ? e : { ...e, type: 'custom/blob', data: { blob: `${e.seq}:`.padEnd(8000, 'z') } }));
    let next = 10;
    let maxSeen = 0;
    // ~24 MB of events: far more than the socket buffers can absorb.
    for (let i = 0; i < 30; i++) {
      await ts.store.append('slow', big(next, 100));
      next += 100;
      for (const b of hub.buffered()) maxSeen = Math.max(maxSeen, b);
      await sleep(5);
    }
    const total = next;
    // Queued live batches plus the socket buffer never pass the bound by more than one write group and a few frames.
    expect(maxSeen).toBeLessThanOrEqual(maxBufferedBytes + 256 * 1024);
    await until('the stalled client is dropped', async () => /reason="stalled"\} 1/.test(await app.pagerState.metrics.registry.metrics()), 10_000, 50);
    expect(hub.size).toBeLessThanOrEqual(1);
    c.resume();
    await c.ended;
    const last = c.events[c.events.length - 1]!;
    expect(last.event).toBe('error');
    const err = JSON.parse(last.data) as { error: { code: string; lastEventId: number } };
    expect(err.error.code).toBe('overloaded');
    const got = err.error.lastEventId;
    expect(got).toBe(lastSeqOf(c.events));
    expect(got).toBeLessThan(total - 1);
    expectRun(c.events.slice(1, -1), 10, got + 1, big);
    // Reconnect where it stopped: the rest, exactly once.
    const r = await sse(`${base}/v1/sessions/slow/follow`, { 'last-event-id': String(got) });
    await r.waitFor('the rest', (e) => lastSeqOf(e) === total - 1, 30_000);
    expectRun(r.events, got + 1, total, big);
  });

  it('refuses streams past the limit with overloaded', async () => {
    await seedSession(ts.store, 'lim', 20, 20);
    const { base } = await listen({ follow: { maxStreams: 1 } });
    const a = await sse(`${base}/v1/sessions/lim/follow?maxMessages=1`);
    expect(a.status).toBe(200);
    const r = await fetch(`${base}/v1/sessions/lim/follow?maxMessages=1`, { headers: AUTH });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('1');
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('overloaded');
  });

  it("these tests' servers turn the follow shed off (followShedFromMs: 0): a follow is admitted while the loop is kept busy, where the defaults shed it", async () => {
    await seedSession(ts.store, 'busy', 20, 20);
    // Four follows one after another while the loop never waits for I/O (a chain of immediates
    // doing busy work, as a loaded machine or a neighbouring test can make it): the first starts
    // the busy streak, the others come 400 ms into it (the loop's utilization, over its ~200 ms
    // time constant, then well above 0.8), and the fourth is the fourth request of the streak
    // (saturation.ts: LoopStreak), so the defaults shed it: no draw, the streak is past toMs.
    const statuses = async (opts: ServerOptions): Promise<number[]> => {
      const { base } = await listen(opts);
      const out: number[] = [];
      const open = async () => {
        const c = await sse(`${base}/v1/sessions/busy/follow?maxMessages=1`);
        out.push(c.status);
        c.close();
      };
      let spinning = true;
      const spin = () => {
        burnCpu(5);
        if (spinning) setImmediate(spin);
      };
      setImmediate(spin);
      try {
        await open();
        await sleep(400);
        for (let i = 0; i < 3; i++) await open();
      } finally {
        spinning = false;
      }
      return out;
    };
    expect(await statuses({})).toEqual([200, 200, 200, 200]);
    expect(await statuses({ followShedFromMs: undefined })).toEqual([200, 200, 200, 503]);
  });

  it('ends every stream with an end event on shutdown', async () => {
    await seedSession(ts.store, 'bye', 341, 100);
    const { app, base } = await listen();
    const a = await sse(`${base}/v1/sessions/bye/follow?maxMessages=1`);
    const b = await sse(`${base}/v1/sessions/bye/follow`, { 'last-event-id': '10' });
    await a.waitFor('snapshot', (e) => e.length >= 1);
    await b.waitFor('catch-up', (e) => lastSeqOf(e) === 340);
    const t0 = Date.now();
    await app.close();
    // Not held up by the streams' keep-alive connections.
    expect(Date.now() - t0).toBeLessThan(1000);
    await a.ended;
    await b.ended;
    for (const s of [a, b]) {
      const last = s.events[s.events.length - 1]!;
      expect(last.event).toBe('end');
      expect(JSON.parse(last.data).reason).toBe('shutdown');
    }
    expect(JSON.parse(b.events[b.events.length - 1]!.data).lastEventId).toBe(340);
  });
});
