/**
 * loadtest/cluster.mjs's whole scenario, small (20 appends of 9 events, no
 * pause between them), with what every run must show: no failure, a second
 * writer fenced, every event there, the killed writer's append in flight
 * whole or not at all. test/cluster.test.ts runs it over a shared data
 * directory, test/s3/cluster-s3.test.ts over an S3 bucket.
 */
import { expect } from 'vitest';
import { runCluster } from '../../loadtest/cluster.mjs';

export interface ClusterResult {
  ok: boolean;
  failures: string[];
  events: number;
  pages: number;
  fenced: boolean;
  writerKill: { inFlightStatus: string; nextSeqAfter: number };
}
type Run = (opts: Record<string, unknown>) => Promise<ClusterResult>;

export async function runSmallCluster(storeArgs: string[], redisUrl: string, seed: number): Promise<ClusterResult> {
  const res = await (runCluster as unknown as Run)({
    storeArgs,
    redisUrl,
    appends: 20,
    batch: 9,
    intervalMs: 0,
    seed,
    env: { SESSION_PAGER_JIT_WARMUP: '0', SESSION_PAGER_PAGE_WARMUP: '0' },
  });
  expect(res.failures).toEqual([]);
  expect(res.ok).toBe(true);
  expect(res.fenced).toBe(true);
  expect(res.events).toBeGreaterThanOrEqual(20 * 9);
  expect(res.pages).toBeGreaterThan(40);
  expect(['200', 'killed']).toContain(res.writerKill.inFlightStatus);
  return res;
}
