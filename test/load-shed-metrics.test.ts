/**
 * Every `503 overloaded` a request is shed with is counted as a shed, not only in
 * errors_total{code="overloaded"}: the admission gates count theirs (admission_shed_total,
 * follow_shed_total: test/admission.test.ts), and load shedding counts its own by reason in
 * load_shed_total{reason}: the worker queue past its bound, the follow streams at their limit, a
 * new follow while the event loop has not waited for I/O for too long (fast-shed.ts, on the
 * loop's busy streak: saturation.ts), the event loop's sustained lag. Before, those answers rose
 * in errors_total{code="overloaded"} with no shed counted anywhere.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Admission } from '../src/main/server/admission.js';
import { fastShedder, installFastShed } from '../src/main/server/fast-shed.js';
import { buildServer } from '../src/main/server/index.js';
import { ServerMetrics } from '../src/main/server/metrics.js';
import { LoadMonitor, ShedPacer } from '../src/main/server/overload.js';
import type { LoopStreak } from '../src/main/server/saturation.js';
import { metricSample, seedSession, sleep, tempStore, type TempStore } from './server-helpers.js';

const TOKEN = 'load-shed-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let ts: TempStore;

beforeAll(async () => {
  ts = await tempStore(1);
  await seedSession(ts.store, 'l', 100, 100);
});

afterAll(async () => {
  await ts.cleanup();
});

describe('load_shed_total', () => {
  it('counts pages and follows shed for the worker queue, apart from the gates, and every reason is there from the start', async () => {
    // A worker-queue bound of 0: every page and follow is shed for it before admission.
    const app = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0, maxPoolQueue: 0, shedDelayMs: 0 });
    await app.ready();
    try {
      const fresh = (await app.inject({ url: '/metrics', headers: AUTH })).body;
      for (const reason of ['event_loop_lag', 'worker_queue', 'follow_loop_busy', 'follow_streams']) expect(metricSample(fresh, `session_pager_load_shed_total{reason="${reason}"}`), reason).toBe(0);
      const page = await app.inject({ url: '/v1/sessions/l/page?maxMessages=3', headers: AUTH });
      expect(page.statusCode).toBe(503);
      const follow = await app.inject({ url: '/v1/sessions/l/follow?maxMessages=3', headers: AUTH });
      expect(follow.statusCode).toBe(503);
      const m = (await app.inject({ url: '/metrics', headers: AUTH })).body;
      expect(metricSample(m, 'session_pager_errors_total{code="overloaded"}')).toBe(2);
      expect(metricSample(m, 'session_pager_load_shed_total{reason="worker_queue"}')).toBe(2);
      expect(metricSample(m, 'session_pager_admission_shed_total')).toBe(0);
      expect(metricSample(m, 'session_pager_follow_shed_total')).toBe(0);
    } finally {
      await app.close();
    }
  });

  it('counts follows refused past the follow-stream limit', async () => {
    const app = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0, follow: { maxStreams: 0 } });
    await app.ready();
    try {
      const follow = await app.inject({ url: '/v1/sessions/l/follow?maxMessages=3', headers: AUTH });
      expect(follow.statusCode).toBe(503);
      const m = (await app.inject({ url: '/metrics', headers: AUTH })).body;
      expect(metricSample(m, 'session_pager_errors_total{code="overloaded"}')).toBe(1);
      expect(metricSample(m, 'session_pager_load_shed_total{reason="follow_streams"}')).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('counts requests shed for the event loop\'s sustained lag', async () => {
    const app = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 5, lagSampleMs: 20, shedDelayMs: 0 });
    await app.ready();
    /** The loop's own work, held on this thread (what the lag monitor counts as lag, up to the CPU it used). */
    const block = (ms: number) => {
      const end = performance.now() + ms;
      while (performance.now() < end);
    };
    try {
      // Late at one sample, and late again now: sustained (whether the next sample is taken first or not).
      // The 1 ms timer fires after the overdue sample (timers fire by due time) and well before the
      // next one (20 ms on): no sample on time comes between the two stalls.
      block(150);
      await sleep(1);
      block(150);
      const r = await app.inject({ url: '/v1/sessions', headers: AUTH });
      expect(r.statusCode).toBe(503);
      const m = (await app.inject({ url: '/metrics', headers: AUTH })).body;
      expect(metricSample(m, 'session_pager_load_shed_total{reason="event_loop_lag"}')).toBe(1);
      expect(metricSample(m, 'session_pager_errors_total{code="overloaded"}')).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('counts a new follow shed before the framework for the loop busy streak (a free follow slot: no gate shed)', async () => {
    const metrics = new ServerMetrics(ts.store, new LoadMonitor(100));
    const admission = new Admission({ maxInFlight: 1, queueFactor: 1, minQueueMs: 50, maxQueueMs: 1000, maxQueue: 10, retryAfterSeconds: 1, maxFollowsInFlight: 1 });
    // A streak that says every new follow waited too long for the loop (saturation.ts decides it on the loop's real clock).
    const streak = { streak: () => 50, shed: () => true } as unknown as LoopStreak;
    const shed = fastShedder({ admission, pacer: new ShedPacer(0, 0), authorized: () => true, maxUrlLength: 4096, retryAfterSeconds: 1, metrics, closing: () => false, streak, followHoldMs: 0 });
    const server: Server = createServer((_req, res) => res.end('through'));
    installFastShed(server, shed);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const follow = await fetch(`${base}/v1/sessions/l/follow?maxMessages=3`, { headers: AUTH });
      expect(follow.status).toBe(503);
      expect(((await follow.json()) as { error: { code: string } }).error.code).toBe('overloaded');
      // Pages are not shed on the streak.
      expect(await (await fetch(`${base}/v1/sessions/l/page?maxMessages=3`, { headers: AUTH })).text()).toBe('through');
      const m = await metrics.registry.metrics();
      expect(metricSample(m, 'session_pager_errors_total{code="overloaded"}')).toBe(1);
      expect(metricSample(m, 'session_pager_load_shed_total{reason="follow_loop_busy"}')).toBe(1);
      expect(admission.follows.shed).toBe(0);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
