/**
 * Follow across processes over Redis (`redisUrl`, store/redis-bus.ts and
 * store/remote-appends.ts), against a real redis-server: a durable append
 * is published as `{session, nextSeq}` and every other store's followers
 * read the new events from storage by seq. The readers here have file
 * watching off (`watchFiles: false`), so whatever reaches them came by the
 * bus: from another store in this process, from a writer in another
 * process, after lost messages, after a message that came before the
 * storage showed the append, and across a Redis restart. Malformed messages
 * are dropped and counted. Latency is measured by loadtest/cluster.mjs, not
 * here.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/core/types.js';
import { decodeAppendMessage, encodeAppendMessage, type AppendBus, type BusListener } from '../src/main/store/append-bus.js';
import { checkRedisUrl, DEFAULT_REDIS_PREFIX, RedisAppendBus } from '../src/main/store/redis-bus.js';
import { parseServeArgs } from '../src/main/cli/serve.js';
import { openStore, type PagerStore, type StoreOptions } from '../src/main/store.js';
import { startRedisServer, type RedisServer } from './helpers/redis.js';
import { tickEvents } from './helpers/tick-events.mjs';
import { sleep, until } from './server-helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
const child = resolve(here, 'helpers/bus-append-child.mjs');
const dist = resolve(here, '../dist/main/index.js');
const ticks = tickEvents as (from: number, n: number) => SessionEvent[];
const NO_WARMUP = { jit: false, pagePath: false };

let redis: RedisServer;
let dir: string;
const stores: PagerStore[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  dir = await mkdtemp(join(tmpdir(), 'sp-redis-follow-'));
});

afterAll(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  await redis?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function store(opts: Partial<StoreOptions> = {}): Promise<PagerStore> {
  const s = await openStore({ dataDir: dir, workers: 1, warmUp: NO_WARMUP, watchPollMs: 10 * 60_000, ...opts });
  stores.push(s);
  return s;
}

/** A reader that hears of other processes' appends only by the bus. */
const reader = (opts: Partial<StoreOptions> = {}) => store({ redisUrl: redis.url, watchFiles: false, ...opts });

/**
 * A follower read with a deadline: a `next()` that timed out stays pending
 * and is the next one taken (a dropped `next()` would swallow an event).
 */
class Pull {
  private pending: Promise<IteratorResult<SessionEvent, undefined>> | undefined;
  constructor(readonly it: AsyncIterableIterator<SessionEvent>) {}

  private next(): Promise<IteratorResult<SessionEvent, undefined>> {
    this.pending ??= this.it.next();
    return this.pending;
  }

  /** `n` events, failing after `timeoutMs`. */
  async take(n: number, timeoutMs = 10_000): Promise<SessionEvent[]> {
    const out: SessionEvent[] = [];
    const deadline = Date.now() + timeoutMs;
    while (out.length < n) {
      const r = await Promise.race([this.next(), sleep(Math.max(1, deadline - Date.now())).then(() => 'timeout' as const)]);
      if (r === 'timeout') throw new Error(`timed out after ${out.length} of ${n} events`);
      this.pending = undefined;
      if (r.done) throw new Error(`follower ended after ${out.length} of ${n} events`);
      out.push(r.value);
    }
    return out;
  }

  /** Nothing more arrives within `ms`. */
  async nothingWithin(ms: number): Promise<void> {
    const r = await Promise.race([this.next(), sleep(ms).then(() => 'quiet' as const)]);
    expect(r).toBe('quiet');
  }

  async end(): Promise<void> {
    await this.it.return?.();
  }
}

const follow = (s: PagerStore, id: string, fromSeq: number) => new Pull(s.follow(id, { fromSeq }));

/** A bus reader is subscribed once its store's stats say so and Redis counts the channel's subscriber. */
async function subscribed(s: PagerStore, id: string): Promise<void> {
  const probe = new Redis(redis.url);
  try {
    await until(`a subscriber on ${id}`, async () => {
      const [, n] = (await probe.pubsub('NUMSUB', DEFAULT_REDIS_PREFIX + id)) as [string, number];
      return n > 0 && (s.stats().follow.bus?.connected ?? false);
    });
  } finally {
    probe.disconnect();
  }
}

describe('append messages', () => {
  it('are exactly {session, nextSeq} or {session, nextSeq, at}; anything else is refused', () => {
    expect(decodeAppendMessage(encodeAppendMessage('s-1.a', 42))).toEqual({ session: 's-1.a', nextSeq: 42 });
    expect(encodeAppendMessage('s-1.a', 42)).toBe('{"session":"s-1.a","nextSeq":42}');
    expect(decodeAppendMessage(encodeAppendMessage('s-1.a', 42, 'm17'))).toEqual({ session: 's-1.a', nextSeq: 42, at: 'm17' });
    expect(decodeAppendMessage('{"nextSeq":0,"session":"x"}')).toEqual({ session: 'x', nextSeq: 0 });
    for (const bad of [
      '',
      'nope',
      '[]',
      'null',
      '42',
      '{"session":"x"}',
      '{"session":"x","nextSeq":1,"extra":true}',
      '{"session":"x","nextSeq":-1}',
      '{"session":"x","nextSeq":1.5}',
      '{"session":"x","nextSeq":"1"}',
      `{"session":"x","nextSeq":${2 ** 53}}`,
      '{"session":"../x","nextSeq":1}',
      '{"session":"a..b","nextSeq":1}',
      '{"session":"","nextSeq":1}',
      '{"session":7,"nextSeq":1}',
      '{"session":"x","nextSeq":1,"at":7}',
      '{"session":"x","nextSeq":1,"at":""}',
      '{"session":"x","nextSeq":1,"at":"m 1"}',
      `{"session":"x","nextSeq":1,"at":"${'m'.repeat(65)}"}`,
      '{"session":"x","nextSeq":1,"at":"m1","extra":true}',
    ]) {
      expect(decodeAppendMessage(bad), bad).toBeNull();
    }
  });

  it('redis URLs are checked with a clear error', () => {
    expect(checkRedisUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(checkRedisUrl('rediss://user:pw@host:6380/2')).toBe('rediss://user:pw@host:6380/2');
    expect(() => checkRedisUrl('localhost:6379')).toThrow(/redis:\/\/ or rediss:\/\//);
    expect(() => checkRedisUrl('not a url')).toThrow(/is not a URL/);
    expect(() => checkRedisUrl('redis://')).toThrow(/names no host/);
    expect(() => checkRedisUrl('http://host:6379')).toThrow(/redis:\/\/ or rediss:\/\//);
  });

  it('serve --redis / SESSION_PAGER_REDIS_URL: taken when valid, refused by name when not', () => {
    expect(parseServeArgs(['--redis', 'redis://127.0.0.1:6380'], {})).toMatchObject({ redisUrl: 'redis://127.0.0.1:6380' });
    expect(parseServeArgs([], { SESSION_PAGER_REDIS_URL: 'redis://10.0.0.2:6379' })).toMatchObject({ redisUrl: 'redis://10.0.0.2:6379' });
    expect(parseServeArgs([], {})).toMatchObject({ redisUrl: null });
    expect(() => parseServeArgs(['--redis', 'http://x:1'], {})).toThrow(/^--redis: redis URL must start with redis:\/\//);
    expect(() => parseServeArgs([], { SESSION_PAGER_REDIS_URL: 'nope' })).toThrow(/^SESSION_PAGER_REDIS_URL: redis URL "nope" is not a URL/);
  });
});

describe('follow over Redis', () => {
  it('a follower on one store gets another store’s appends by the bus, in order, no gap, no duplicate', async () => {
    const w = await store({ redisUrl: redis.url });
    await w.create('r1', { title: 'bus' });
    await w.append('r1', ticks(0, 5));
    const r = await reader();
    const f = follow(r, 'r1', 0);
    expect(await f.take(5)).toEqual(ticks(0, 5));
    await subscribed(r, 'r1');
    for (let b = 0; b < 6; b++) {
      const next = f.take(7);
      await w.append('r1', ticks(5 + b * 7, 7));
      expect(await next).toEqual(ticks(5 + b * 7, 7));
    }
    await f.nothingWithin(100);
    const bus = r.stats().follow.bus;
    expect(bus).toMatchObject({ kind: 'redis', connected: true, rejected: 0, watchedSessions: 1 });
    expect(bus!.received).toBeGreaterThanOrEqual(6);
    expect(w.stats().follow.bus!.published).toBeGreaterThanOrEqual(7);
    await f.end();
    expect(r.stats().follow).toMatchObject({ watchedSessions: 0, followers: 0, bus: { watchedSessions: 0 } });
  });

  it('a writer in another process: every appended event reaches the follower here', async () => {
    const w = await store();
    await w.create('r2', { title: 'cross-process bus' });
    await w.append('r2', ticks(0, 3));
    await w.close(); // the child takes the session's lease
    const r = await reader();
    const f = follow(r, 'r2', 0);
    expect(await f.take(3)).toEqual(ticks(0, 3));
    await subscribed(r, 'r2');
    const total = 3 + 12 * 5;
    const got = f.take(total - 3, 30_000);
    await new Promise<void>((ok, fail) => {
      const p = spawn(process.execPath, [child, dist, dir, 'r2', redis.url, '12', '5', '20'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      p.stderr.on('data', (d) => (err += d));
      p.on('error', fail);
      p.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`writer process exited ${code}: ${err}`))));
    });
    expect(await got).toEqual(ticks(3, total - 3));
    await f.nothingWithin(100);
    await f.end();
  });

  it('lost messages only delay: the next message brings every event since', async () => {
    const w = await store({ redisUrl: redis.url });
    await w.create('r3', {});
    // A bus that loses the first two messages it hears.
    const inner = new RedisAppendBus(redis.url);
    let drop = 2;
    const lossy: AppendBus = {
      publish: (id, n) => inner.publish(id, n),
      subscribe: (id, fn: BusListener) => inner.subscribe(id, (n) => (n !== undefined && drop-- > 0 ? undefined : fn(n))),
      stats: () => inner.stats(),
      close: () => inner.close(),
    };
    const r = await reader({ appendBus: lossy, redisUrl: undefined });
    const f = follow(r, 'r3', 0);
    await f.nothingWithin(20);
    await subscribed(r, 'r3');
    await w.append('r3', ticks(0, 4));
    await w.append('r3', ticks(4, 4));
    await until('both messages dropped', () => drop <= 0);
    await f.nothingWithin(150); // still waiting: both appends' messages were lost
    await w.append('r3', ticks(8, 4));
    expect(await f.take(12)).toEqual(ticks(0, 12));
    await f.end();
    await r.close();
    await inner.close();
  });

  it('a message that comes before the storage shows the append: the follower still gets it', async () => {
    const w = await store(); // appends without publishing
    await w.create('r4', {});
    await w.append('r4', ticks(0, 2));
    const r = await reader();
    const f = follow(r, 'r4', 2);
    await f.nothingWithin(20);
    await subscribed(r, 'r4');
    const pub = new Redis(redis.url);
    try {
      await pub.publish(DEFAULT_REDIS_PREFIX + 'r4', encodeAppendMessage('r4', 5));
      await sleep(120);
      await w.append('r4', ticks(2, 3)); // heard of by no one: only the reader's looks after the early message find it
      expect(await f.take(3, 5_000)).toEqual(ticks(2, 3));
    } finally {
      pub.disconnect();
    }
    await f.end();
  });

  it('malformed messages and other sessions’ messages are dropped, counted, and break nothing', async () => {
    const w = await store({ redisUrl: redis.url });
    await w.create('r5', {});
    const r = await reader();
    const f = follow(r, 'r5', 0);
    await f.nothingWithin(20);
    await subscribed(r, 'r5');
    const before = r.stats().follow.bus!.rejected;
    const pub = new Redis(redis.url);
    try {
      for (const m of ['garbage', '{"session":"r5"}', encodeAppendMessage('other', 3), '{"session":"r5","nextSeq":-4}']) await pub.publish(DEFAULT_REDIS_PREFIX + 'r5', m);
      await until('four rejected', () => r.stats().follow.bus!.rejected === before + 4);
    } finally {
      pub.disconnect();
    }
    await w.append('r5', ticks(0, 3));
    expect(await f.take(3)).toEqual(ticks(0, 3));
    await f.end();
  });

  it('survives a Redis restart: appends made while it was away reach the follower once it is back', async () => {
    const w = await store({ redisUrl: redis.url });
    await w.create('r6', {});
    const r = await reader();
    const f = follow(r, 'r6', 0);
    await f.nothingWithin(20);
    await subscribed(r, 'r6');
    await w.append('r6', ticks(0, 2));
    expect(await f.take(2)).toEqual(ticks(0, 2));
    await f.nothingWithin(50); // the follower waits at the end: only a notification makes it look again

    await redis.kill();
    await until('the reader saw Redis go', () => r.stats().follow.bus!.connected === false);
    const ack = await w.append('r6', ticks(2, 3)); // durable; its message is lost
    expect(ack.nextSeq).toBe(5);
    await f.nothingWithin(150);
    await redis.restart();
    // The reader's reconnection makes every follower look again.
    expect(await f.take(3, 10_000)).toEqual(ticks(2, 3));
    await subscribed(r, 'r6');
    await w.append('r6', ticks(5, 1));
    expect(await f.take(1)).toEqual(ticks(5, 1));
    await f.end();
  });
});
