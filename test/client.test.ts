/**
 * The client library (`session-pager/client`) against a real server process:
 * pages newest-first with checked joins, exact expansion of packed rows,
 * range reads, error mapping, and following as a journal through proxies
 * that cut the connection mid-stream, drop events, resend old ones, resume
 * past Last-Event-ID (a gap after a reconnect) or ignore it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientError, SessionPagerClient, type FollowItem, type Follower, type SessionEvent } from '../src/client/index.js';
import { makeEvents } from './server-helpers.js';
import { randomLog } from './helpers/random-log.js';
import { startServerProcess, type ServerProcess } from './helpers/serve-process.js';
import { SseProxy, TcpProxy } from './helpers/fault-proxy.js';

let dir: string;
let server: ServerProcess;
let client: SessionPagerClient;
const randomSessions: { id: string; events: SessionEvent[] }[] = [];
const SEEDS = [11, 12, 13, 14, 15, 16];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sp-client-'));
  for (const seed of SEEDS) {
    const log = await randomLog(seed, { dataDir: dir, id: `random-${seed}`, maxPieces: 60 });
    randomSessions.push({ id: log.id, events: log.events });
  }
  server = await startServerProcess({ dir, workers: 1 });
  client = new SessionPagerClient({ baseUrl: server.url, token: server.token, checkCanonical: true });
  await client.create('plain', { title: 'plain' });
  for (let at = 0; at < 3000; at += 500) await client.append('plain', makeEvents(at, 500));
});

afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function walk(id: string, maxMessages: number): Promise<{ events: SessionEvent[]; pages: number }> {
  const chunks: SessionEvent[][] = [];
  for await (const p of client.pages(id, { maxMessages })) chunks.push(p.events);
  return { events: chunks.reverse().flat(), pages: chunks.length };
}

/** Take items from a follower until `pred` holds; returns the events delivered. */
async function take(f: Follower, pred: (events: SessionEvent[], items: FollowItem[]) => boolean, timeoutMs = 20_000): Promise<{ events: SessionEvent[]; items: FollowItem[] }> {
  const events: SessionEvent[] = [];
  const items: FollowItem[] = [];
  const timer = setTimeout(() => f.close(), timeoutMs);
  try {
    for await (const item of f) {
      items.push(item);
      if (item.kind === 'snapshot') events.push(...item.events);
      else events.push(item.event);
      if (pred(events, items)) break;
    }
  } finally {
    clearTimeout(timer);
  }
  if (!pred(events, items)) throw new Error(`follower stopped after ${events.length} events (${f.lastReconnectReason ?? 'no reconnect'})`);
  return { events, items };
}

function expectExactly(events: SessionEvent[], expected: SessionEvent[]): void {
  expect(events.map((e) => e.seq)).toEqual(expected.map((e) => e.seq));
  expect(events).toEqual(expected);
}

describe('pages', () => {
  it('walks random logs newest-first back to seq 0: every event exactly once, rows expanded exactly, records canonical', async () => {
    for (const s of randomSessions) {
      for (const maxMessages of [1, 3, 50]) {
        const { events } = await walk(s.id, maxMessages);
        expectExactly(events, s.events);
      }
    }
  });

  it('walks a session written through the API and reads any range exactly', async () => {
    const all = makeEvents(0, 3000);
    const { events, pages } = await walk('plain', 7);
    expect(pages).toBeGreaterThan(10);
    expectExactly(events, all);
    for (const [a, b] of [[0, 1], [5, 6], [17, 1234], [2990, 3000], [0, 3000]] as const) {
      expectExactly(await client.readRange('plain', a, b, { maxMessages: 5 }), all.slice(a, b));
    }
    expect(await client.readRange('plain', 40, 40)).toEqual([]);
  });

  it('pins the walk: appends made while walking do not move older pages', async () => {
    const it = client.pages('plain', { maxMessages: 100 });
    const first = await it.next();
    expect(first.done).toBe(false);
    const through = (first.value as { page: { throughSeq: number } }).page.throughSeq;
    await client.append('plain', makeEvents(through + 1, 20));
    const chunks: SessionEvent[][] = [(first.value as { events: SessionEvent[] }).events];
    for await (const p of it) {
      expect(p.page.throughSeq).toBe(through);
      chunks.push(p.events);
    }
    expectExactly(chunks.reverse().flat(), makeEvents(0, through + 1));
  });

  it('maps server errors to their SPEC codes', async () => {
    await expect(client.page('no-such-session')).rejects.toMatchObject({ code: 'session_not_found', status: 404 });
    await expect(client.page('plain', { maxMessages: 0 })).rejects.toMatchObject({ code: 'invalid_request', status: 400 });
    await expect(client.page('plain', { throughSeq: 10_000_000 })).rejects.toMatchObject({ code: 'invalid_request', status: 400 });
    const wrong = new SessionPagerClient({ baseUrl: server.url, token: 'wrong-token-000000' });
    await expect(wrong.sessions()).rejects.toMatchObject({ code: 'unauthorized', status: 401 });
    const info = await client.info('plain');
    await expect(client.append('plain', makeEvents(info.nextSeq + 1, 1))).rejects.toMatchObject({ code: 'seq_conflict', status: 409 });
    const dead = new SessionPagerClient({ baseUrl: 'http://127.0.0.1:9', token: 't' });
    await expect(dead.sessions()).rejects.toBeInstanceOf(ClientError);
    await expect(dead.sessions()).rejects.toMatchObject({ code: 'network' });
    const catalog = await client.sessions();
    expect(catalog.map((s) => s.id).sort()).toEqual(['plain', ...SEEDS.map((s) => `random-${s}`)].sort());
  });
});

describe('follow', () => {
  it('delivers the snapshot, then every appended event once, in order', async () => {
    await client.create('live-1', {});
    await client.append('live-1', makeEvents(0, 200));
    const f = client.follow('live-1', { maxMessages: 5 });
    const appender = (async () => {
      for (let at = 200; at < 400; at += 25) await client.append('live-1', makeEvents(at, 25));
    })();
    appender.catch(() => undefined); // awaited below; never unhandled if the test fails first
    const { events, items } = await take(f, (ev) => ev.at(-1)?.seq === 399);
    await appender;
    expect(items[0]?.kind).toBe('snapshot');
    const snap = items[0] as Extract<FollowItem, { kind: 'snapshot' }>;
    expect(snap.page.toSeq).toBe(snap.cursor + 1);
    expectExactly(events, makeEvents(snap.page.fromSeq, 400 - snap.page.fromSeq));
    expect(f.stats).toMatchObject({ reconnects: 0, gaps: 0 });
  });

  it('resumes with Last-Event-ID after the connection is cut mid-stream (TCP, mid-frame), losing and repeating nothing', async () => {
    await client.create('live-cut', {});
    await client.append('live-cut', makeEvents(0, 100));
    const port = Number(new URL(server.url).port);
    const proxy = await new TcpProxy({ host: '127.0.0.1', port }).listen();
    try {
      const pc = new SessionPagerClient({ baseUrl: proxy.url, token: server.token });
      const f = pc.follow('live-cut', { maxMessages: 3, retryMs: 50 });
      const it = f[Symbol.asyncIterator]();
      const first = await it.next();
      expect((first.value as FollowItem).kind).toBe('snapshot');
      const events = [...(first.value as Extract<FollowItem, { kind: 'snapshot' }>).events];
      const fromSeq = events[0]!.seq;
      // The next answer bytes on this stream are events: cut it 700 bytes in, mid-frame.
      proxy.cut();
      proxy.cutNextFollowAfter(900);
      const appender = (async () => {
        for (let at = 100; at < 600; at += 50) {
          await client.append('live-cut', makeEvents(at, 50));
          await new Promise((r) => setTimeout(r, 30));
        }
      })();
      appender.catch(() => undefined); // awaited below; never unhandled if the test fails first
      while (events.at(-1)!.seq < 599) {
        const r = await it.next();
        if (r.done) throw new Error(`follower ended: ${f.lastReconnectReason}`);
        events.push((r.value as Extract<FollowItem, { kind: 'event' }>).event);
      }
      await appender;
      await it.return?.();
      expect(proxy.cuts).toBeGreaterThanOrEqual(2);
      expect(f.stats.reconnects).toBeGreaterThanOrEqual(2);
      expect(f.stats.gaps).toBe(0);
      expectExactly(events, makeEvents(fromSeq, 600 - fromSeq));
    } finally {
      await proxy.close();
    }
  });

  it('repairs a gap in the stream by reading the missing range from pages', async () => {
    await client.create('live-gap', {});
    await client.append('live-gap', makeEvents(0, 50));
    const port = Number(new URL(server.url).port);
    const proxy = await new SseProxy({ host: '127.0.0.1', port }, { drop: new Set([60, 61, 62, 75, 130]) }).listen();
    try {
      const pc = new SessionPagerClient({ baseUrl: proxy.url, token: server.token });
      const f = pc.follow('live-gap', { maxMessages: 2, retryMs: 50 });
      // The appends start once the snapshot is delivered: begun with the follow, some of
      // them (seq 60-62 on a busy machine) landed in the snapshot, where no live event is dropped.
      let snapshotDelivered!: () => void;
      const snapshot = new Promise<void>((resolve) => (snapshotDelivered = resolve));
      const appender = (async () => {
        await snapshot;
        for (let at = 50; at < 150; at += 10) await client.append('live-gap', makeEvents(at, 10));
      })();
      appender.catch(() => undefined); // awaited below; never unhandled if the test fails first
      const { events, items } = await take(f, (ev, seen) => {
        if (seen.length > 0) snapshotDelivered();
        return ev.at(-1)?.seq === 149;
      });
      await appender;
      expect(proxy.dropped).toBe(5);
      expect(f.stats.gaps).toBe(3);
      expect(f.stats.repairedEvents).toBe(5);
      const repaired = items.filter((i) => i.kind === 'event' && i.repaired).map((i) => (i as { event: SessionEvent }).event.seq);
      expect(repaired).toEqual([60, 61, 62, 75, 130]);
      const from = (items[0] as Extract<FollowItem, { kind: 'snapshot' }>).page.fromSeq;
      expectExactly(events, makeEvents(from, 150 - from));
    } finally {
      await proxy.close();
    }
  });

  it('repairs a gap after a reconnect: a resume answered from past Last-Event-ID', async () => {
    await client.create('live-skip', {});
    await client.append('live-skip', makeEvents(0, 100));
    const port = Number(new URL(server.url).port);
    const proxy = await new SseProxy({ host: '127.0.0.1', port }, { cutAfterEvents: 10, skipOnResume: 15 }).listen();
    try {
      const pc = new SessionPagerClient({ baseUrl: proxy.url, token: server.token });
      // From seq 10: the first stream passes 10..19 and is cut; the resume after 19 is answered from 35.
      const f = pc.follow('live-skip', { after: 9, retryMs: 20 });
      const { events, items } = await take(f, (ev) => ev.at(-1)?.seq === 99);
      expect(proxy.resumes).toBeGreaterThanOrEqual(2);
      expect(f.stats.gaps).toBe(1);
      expect(f.stats.repairedEvents).toBe(15);
      const repaired = items.filter((i) => i.kind === 'event' && i.repaired).map((i) => (i as { event: SessionEvent }).event.seq);
      expect(repaired).toEqual(Array.from({ length: 15 }, (_, k) => 20 + k));
      expectExactly(events, makeEvents(10, 90));
    } finally {
      await proxy.close();
    }
  });

  it('drops duplicates: a resume answered from before Last-Event-ID, and a new snapshot overlapping what was delivered', async () => {
    await client.create('live-dup', {});
    await client.append('live-dup', makeEvents(0, 40));
    const port = Number(new URL(server.url).port);
    for (const faults of [{ rewind: 6 }, { stripLastEventId: true }]) {
      const proxy = await new SseProxy({ host: '127.0.0.1', port }, { ...faults, cutAfterEvents: 10 }).listen();
      try {
        const pc = new SessionPagerClient({ baseUrl: proxy.url, token: server.token });
        const start = (await client.info('live-dup')).lastSeq;
        const f = pc.follow('live-dup', { after: start, retryMs: 20 });
        const target = start + 60;
        const appender = (async () => {
          for (let at = start + 1; at <= target; at += 5) {
            await client.append('live-dup', makeEvents(at, 5));
            await new Promise((r) => setTimeout(r, 15));
          }
        })();
        appender.catch(() => undefined); // awaited below; never unhandled if the test fails first
        const { events } = await take(f, (ev) => ev.at(-1)?.seq === target);
        await appender;
        expect(proxy.resumes).toBeGreaterThanOrEqual(1);
        expect(f.stats.duplicates).toBeGreaterThan(0);
        expectExactly(events, makeEvents(start + 1, target - start));
      } finally {
        await proxy.close();
      }
    }
  });

  it('follows an empty session from its start, and stops with the server error for a missing one', async () => {
    await client.create('live-empty', {});
    const f = client.follow('live-empty');
    const appender = (async () => {
      await new Promise((r) => setTimeout(r, 100));
      await client.append('live-empty', makeEvents(0, 12));
    })();
    appender.catch(() => undefined); // awaited below; never unhandled if the test fails first
    const { events, items } = await take(f, (ev) => ev.length === 12);
    await appender;
    expect(items[0]).toMatchObject({ kind: 'snapshot', cursor: -1, events: [] });
    expectExactly(events, makeEvents(0, 12));

    const missing = client.follow('no-such-session');
    await expect(take(missing, () => false)).rejects.toMatchObject({ code: 'session_not_found', status: 404 });
  });
});
