/**
 * One writer and two reader processes (`session-pager serve` x3, different
 * ports) over one shared data directory, follow across them by a real
 * redis-server: loadtest/cluster.mjs's whole scenario, small. It checks
 * that every reader's pages equal the reference after every append, that a
 * follower on each reader gets every event once and in order, that a
 * killed reader loses nothing (its follower resumes with Last-Event-ID),
 * that a killed writer's acknowledged events are all readable after its
 * restart (the append in flight whole or not at all), that a second writer
 * is fenced with session_busy, and that pages walked from the tail give
 * back every event. Latency is the script's to measure, not this test's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { runSmallCluster } from './helpers/cluster-run.js';
import { startRedisServer, type RedisServer } from './helpers/redis.js';

let redis: RedisServer;
let dir: string;

beforeAll(async () => {
  redis = await startRedisServer();
  dir = mkdtempSync(join(tmpdir(), 'sp-cluster-'));
});

afterAll(async () => {
  await redis?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('a writer and two readers over a shared data directory', () => {
  it('pages equal the reference on every reader; followers lose nothing across reader and writer kills; a second writer is fenced', async () => {
    await runSmallCluster(['--data', dir], redis.url, 7);
  }, 240_000);
});
