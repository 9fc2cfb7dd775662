/**
 * The event-loop-lag guard sheds for the server's own overload (overload.ts,
 * LoadMonitor), not for a stall of the whole machine: the fault suites met
 * `503 overloaded (event-loop lag 530-685 ms)` on a starved 2-core machine.
 * A real `serve` process is stopped (SIGSTOP) for ~0.9 s, as a starved or
 * paused machine stops it, while a request of every guarded route waits for
 * it; when it runs again they are served, and so are requests sent just
 * after (once the late sample is taken). LoadMonitor itself, with a work
 * clock: a stall counts as far as the clock says the loop worked in it, and
 * only when sustained over two samples. That the guard still sheds a loop
 * busy with its own work is test/server.test.ts's "sheds requests while the
 * event loop lags".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoadMonitor, processWork, type WorkSample } from '../src/main/server/overload.js';
import { startServerProcess, type ServerProcess } from './helpers/server-process.js';
import { burnCpu, makeEvents, rawRequest, sleep, tempStore, until, type TempStore } from './server-helpers.js';

const TOKEN = 'lag-guard-token-5e21';
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** Past the default 500 ms lag bound, with room to spare. */
const STOP_MS = 900;

let ts: TempStore;
let server: ServerProcess;
let nextSeq = 0;

beforeAll(async () => {
  ts = await tempStore(1);
  await ts.store.create('s', { title: 'stalled' });
  await ts.store.append('s', makeEvents(0, 200));
  nextSeq = 200;
  await ts.store.close();
  // The lag guard on (the helpers turn it off): what this suite guards is that it does not shed for a stall.
  server = await startServerProcess({ dataDir: ts.dir, token: TOKEN, env: { SESSION_PAGER_PAGE_WARMUP: '0', SESSION_PAGER_JIT_WARMUP: '0' }, shedding: true });
  await until('ready', async () => (await rawRequest(`${server.url}/readyz`)).status === 200, 30_000, 50);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await ts?.cleanup();
});

/** One request of each route the lag guard covers: catalog, info, page, append. */
function guardedRequests(): Promise<{ what: string; status: number; body: string }>[] {
  const append = JSON.stringify({ events: makeEvents(nextSeq, 2) });
  nextSeq += 2;
  const reqs: [string, string, { method?: string; headers?: Record<string, string>; body?: string }][] = [
    ['catalog', '/v1/sessions', { headers: AUTH }],
    ['info', '/v1/sessions/s', { headers: AUTH }],
    ['page', '/v1/sessions/s/page?maxMessages=20', { headers: AUTH }],
    ['append', '/v1/sessions/s/events', { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: append }],
  ];
  return reqs.map(async ([what, path, opts]) => {
    const r = await rawRequest(`${server.url}${path}`, opts);
    return { what, status: r.status, body: r.body.toString().slice(0, 200) };
  });
}

describe('the event-loop-lag guard and a stalled machine', () => {
  it('serves what waited through a stop of the whole process, and what comes just after it', async () => {
    for (let round = 0; round < 3; round++) {
      // Settled: no lag left from the last round.
      await sleep(300);
      server.child.kill('SIGSTOP');
      let waited: Awaited<ReturnType<typeof guardedRequests>[number]>[];
      try {
        const during = guardedRequests();
        await sleep(STOP_MS);
        server.child.kill('SIGCONT');
        waited = await Promise.all(during);
      } finally {
        server.child.kill('SIGCONT');
      }
      // Sent once it runs again: the late timer has fired by now.
      await sleep(30);
      const after = await Promise.all(guardedRequests());
      for (const r of [...waited, ...after]) expect(r, `round ${round}: ${r.what} answered ${r.status} ${r.body}`).toMatchObject({ status: 200 });
    }
    // Every append landed, in order: nothing was shed.
    const info = await rawRequest(`${server.url}/v1/sessions/s`, { headers: AUTH });
    expect(JSON.parse(info.body.toString())).toMatchObject({ nextSeq });
  }, 60_000);
});

/** Keep the event loop busy for `ms` of wall time. */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // a stalled loop
  }
}

/** Let the overdue sample run (an interval timer due before this one fires first). */
const nextSample = () => sleep(1);

describe('LoadMonitor', () => {
  it('counts a stall as lag as far as the work done in it goes', async () => {
    let work: WorkSample = { activeMs: 0, cpuMs: 0 };
    const idle = new LoadMonitor(20, () => work);
    idle.start();
    try {
      // Two stalls in a row the clock says the loop did no work in: no lag.
      await sleep(60);
      block(300);
      await nextSample();
      block(300);
      expect(idle.lagMs).toBeLessThan(50);
      await nextSample();
      expect(idle.lagMs).toBeLessThan(50);
      // The same, the clock saying the loop worked 250 ms of each.
      await sleep(200);
      work = { activeMs: work.activeMs + 1000, cpuMs: work.cpuMs + 250 };
      block(300);
      await nextSample();
      work = { activeMs: work.activeMs + 1000, cpuMs: work.cpuMs + 250 };
      block(300);
      expect(idle.lagMs).toBeGreaterThan(200);
      expect(idle.lagMs).toBeLessThanOrEqual(250);
      await nextSample();
      expect(idle.lagMs).toBeGreaterThan(200);
    } finally {
      idle.stop();
    }
  });

  it('counts lag sustained over two samples, not one stall of its own', async () => {
    const m = new LoadMonitor(20, processWork);
    m.start();
    try {
      await sleep(60);
      burnCpu(300);
      // One stall (in progress, then sampled): over by the time it is seen.
      expect(m.lagMs).toBeLessThan(50);
      expect(m.lagOver(100)).toBeLessThanOrEqual(100);
      await nextSample();
      expect(m.lagMs).toBeLessThan(50);
      // A second one right after it: the loop is not keeping up.
      burnCpu(300);
      expect(m.lagOver(100)).toBeGreaterThan(200);
      expect(m.lagMs).toBeGreaterThan(200);
      await nextSample();
      expect(m.lagMs).toBeGreaterThan(200);
      // A sample on time ends it.
      await sleep(60);
      expect(m.lagMs).toBeLessThan(50);
    } finally {
      m.stop();
    }
  });
});
