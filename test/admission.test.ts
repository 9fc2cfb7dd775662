/**
 * Admission of page requests (issue 16 item 8): a concurrency limit and a
 * FIFO queue bounded in time; shed requests get 503 `overloaded` with
 * Retry-After in the SPEC's error shape; a follow's snapshot is admitted
 * like a page, its open stream holds no slot. The figures under load are
 * loadtest/overload.mjs's and test/overload.test.ts's.
 */
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Admission } from '../src/main/server/admission.js';
import { buildServer, type ServerOptions } from '../src/main/server/index.js';
import { IN_FLIGHT_PER_THREAD } from '../src/main/server/options.js';
import { gatedPages, metricSample, openSse, seedSession, sleep, tempStore, until, type TempStore } from './server-helpers.js';

const TOKEN = 'admission-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

function admission(over: Partial<ConstructorParameters<typeof Admission>[0]> = {}): Admission {
  return new Admission({ maxInFlight: 2, queueFactor: 1, minQueueMs: 50, maxQueueMs: 1000, maxQueue: 100, retryAfterSeconds: 2, ...over });
}

describe('Admission', () => {
  it('integrates over time the slots held and the time with a slot free and nobody waiting (the gate dry)', async () => {
    const a = admission({ minQueueMs: 5000, maxQueueMs: 5000 });
    const s0 = a.slotSeconds;
    const d0 = a.drySeconds;
    const r1 = await a.acquire();
    await sleep(100);
    // One slot of two held, nobody waiting: dry all along.
    expect(a.slotSeconds - s0).toBeGreaterThanOrEqual(0.09);
    expect(a.drySeconds - d0).toBeGreaterThanOrEqual(0.09);
    const r2 = await a.acquire();
    const w3 = a.acquire();
    const [s1, d1] = [a.slotSeconds, a.drySeconds];
    await sleep(100);
    // Both held and one waiting: two slot-seconds a second, not dry.
    expect(a.slotSeconds - s1).toBeGreaterThanOrEqual(0.18);
    expect(a.drySeconds - d1).toBeLessThan(0.01);
    r1();
    (await w3)();
    r2();
    expect(a.running).toBe(0);
  });

  it('admits up to the limit at once, then in arrival order as slots free', async () => {
    const a = admission({ minQueueMs: 5000, maxQueueMs: 5000 });
    const r1 = await a.acquire();
    const r2 = await a.acquire();
    expect(a.running).toBe(2);
    const order: number[] = [];
    const w3 = a.acquire().then((r) => (order.push(3), r));
    const w4 = a.acquire().then((r) => (order.push(4), r));
    await sleep(10);
    expect(a.queued).toBe(2);
    expect(order).toEqual([]);
    r1();
    r1(); // a second release is ignored
    const r3 = await w3;
    expect(order).toEqual([3]);
    expect(a.running).toBe(2);
    r2();
    (await w4)();
    r3();
    expect(a.running).toBe(0);
    expect(a.queued).toBe(0);
    expect(a.admitted).toBe(4);
  });

  it("follows have a gate of their own: pages are admitted while its slots are full, and follows past them queue and are shed as pages are", async () => {
    const a = admission({ maxInFlight: 2, maxFollowsInFlight: 1, followQueueFactor: 1, minQueueMs: 5000, maxQueueMs: 5000, maxQueue: 1 });
    const f1 = await a.follows.acquire();
    expect(a.follows.running).toBe(1);
    // The page slots are untouched: two pages at once.
    const p1 = a.tryAcquire();
    const p2 = a.tryAcquire();
    expect(p1).not.toBeNull();
    expect(p2).not.toBeNull();
    expect(a.running).toBe(2);
    // A second follow queues for the follow slot; a third finds the queue full and is shed.
    const f2 = a.follows.acquire();
    await sleep(5);
    expect(a.follows.queued).toBe(1);
    expect(a.follows.shedsAtOnce()).toBe(true);
    await expect(a.follows.acquire()).rejects.toMatchObject({ code: 'overloaded', statusCode: 503, details: { retryAfter: 2 } });
    expect(a.follows.shed).toBe(1);
    expect(a.shed).toBe(0);
    // Freeing a page slot admits no follow; freeing the follow slot does.
    p1?.();
    expect(a.follows.queued).toBe(1);
    f1();
    (await f2)();
    p2?.();
    expect(a.running).toBe(0);
    expect(a.follows.running).toBe(0);
    // Without a limit of their own, follows share the page slots.
    expect(admission().follows).toBeInstanceOf(Admission);
    const shared = admission();
    expect(shared.follows).toBe(shared);
  });

  it('sheds a request that waited the bound, with overloaded and Retry-After', async () => {
    const a = admission({ maxInFlight: 1, minQueueMs: 40, maxQueueMs: 40 });
    const r1 = await a.acquire();
    const t0 = performance.now();
    const err = await a.acquire().then(
      () => null,
      (e: unknown) => e,
    );
    expect(performance.now() - t0).toBeGreaterThanOrEqual(35);
    expect(err).toMatchObject({ code: 'overloaded', statusCode: 503, details: { retryAfter: 2 } });
    expect(a.queued).toBe(0);
    expect(a.shed).toBe(1);
    // Counted apart from those shed at once (the overload suite tells the two causes apart by it).
    expect(a.shedWaited).toBe(1);
    r1();
    // The slot is free again for the next one.
    (await a.acquire())();
  });

  it('judges a queued request by the bound as it stands when its time is up: pages in flight longer than the estimate extend it', async () => {
    const a = admission({ maxInFlight: 1, queueFactor: 2, minQueueMs: 10, maxQueueMs: 5000 });
    // Pages took ~0 ms so far: the bound is the floor, 10 ms.
    for (let i = 0; i < 3; i++) (await a.acquire())();
    expect(a.boundMs).toBe(10);
    // Now one takes 80 ms (a burst after a quiet spell): the one queued behind it waits for it.
    const slow = await a.acquire();
    const t0 = performance.now();
    const queued = a.acquire();
    await sleep(80);
    expect(a.queued).toBe(1);
    expect(a.shed).toBe(0);
    slow();
    (await queued)();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(75);
    // Nothing in flight and the estimate low again: a wait past the bound is still shed
    // (the floor is the time so far of what is in flight, and it is released at once).
    const b = admission({ maxInFlight: 1, queueFactor: 2, minQueueMs: 30, maxQueueMs: 30 });
    const held = await b.acquire();
    await expect(b.acquire()).rejects.toMatchObject({ code: 'overloaded' });
    held();
  });

  it('sheds at once when the wait it would face is past the bound, or the queue is full', async () => {
    const a = admission({ maxInFlight: 1, queueFactor: 3, minQueueMs: 1, maxQueueMs: 10_000, maxQueue: 100 });
    // Teach it that a page takes ~20 ms: the bound becomes ~3 x the smoothed time, and a request
    // is queued only while the wait it would face is within half of it (1.5 pages).
    for (let i = 0; i < 10; i++) {
      const r = await a.acquire();
      const t = performance.now();
      while (performance.now() - t < 20) {
        // a page being built
      }
      r();
    }
    expect(a.serviceMs).toBeGreaterThan(8);
    expect(a.boundMs).toBeCloseTo(3 * a.serviceMs, 5);
    const hold = await a.acquire();
    // The first waiter would wait ~1 page: within the bound.
    const first = a.acquire();
    first.catch(() => undefined);
    expect(a.queued).toBe(1);
    // The second would wait ~2 pages, past 1.5: shed at once (in the same tick, never queued), not after waiting.
    const shedBefore = a.shed;
    const second = a.acquire();
    expect(a.shed).toBe(shedBefore + 1);
    expect(a.shedWaited).toBe(0);
    expect(a.queued).toBe(1);
    await expect(second).rejects.toMatchObject({ code: 'overloaded', details: { retryAfter: 2 } });
    hold();
    (await first)();

    const b = admission({ maxInFlight: 1, minQueueMs: 10_000, maxQueueMs: 10_000, maxQueue: 2 });
    const h = await b.acquire();
    const q = [b.acquire(), b.acquire()];
    await expect(b.acquire()).rejects.toMatchObject({ code: 'overloaded' });
    h();
    for (const p of q) (await p)();
  });

  it('a request whose client leaves while queued leaves the queue at once, unshed, and its place goes to the next', async () => {
    const a = admission({ maxInFlight: 1, minQueueMs: 10_000, maxQueueMs: 10_000, maxQueue: 2 });
    const held = await a.acquire();
    const gone = [new AbortController(), new AbortController()];
    const waits = gone.map((c) => a.acquire(c.signal));
    expect(a.queued).toBe(2);
    // The queue is full: a live request is shed while the two are there.
    await expect(a.acquire()).rejects.toMatchObject({ code: 'overloaded' });
    const shed = a.shed;
    for (const c of gone) c.abort();
    for (const w of waits) await expect(w).rejects.toMatchObject({ name: 'AbortError' });
    // Gone from the queue before the slot frees, and not counted as shed.
    expect(a.queued).toBe(0);
    expect(a.shed).toBe(shed);
    const live = a.acquire(new AbortController().signal);
    expect(a.queued).toBe(1);
    held();
    (await live)();
    expect(a.running).toBe(0);
    // An abort after admission is the caller's to handle: the waiter is done, nothing changes.
    const late = new AbortController();
    const r = await a.acquire(late.signal);
    late.abort();
    expect(a.running).toBe(1);
    r();
    // Already aborted: refused at once, never admitted.
    await expect(a.acquire(AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
    expect(a.running).toBe(0);
    expect(a.admitted).toBe(3);
  });

  it('a slot given back unused is no sample of the in-flight time', async () => {
    const a = admission({ maxInFlight: 1, queueFactor: 2, minQueueMs: 1, maxQueueMs: 10_000 });
    const r = await a.acquire();
    await sleep(60);
    r();
    const learned = a.serviceMs;
    expect(learned).toBeGreaterThanOrEqual(50);
    for (let i = 0; i < 20; i++) (await a.acquire())(true);
    expect(a.serviceMs).toBe(learned);
    expect(a.boundMs).toBeCloseTo(2 * learned, 5);
    // A slot used for even ~0 ms is a sample.
    (await a.acquire())();
    expect(a.serviceMs).toBeLessThan(learned);
  });
});

describe('page route admission', () => {
  let ts: TempStore;
  let app: FastifyInstance;
  let gate: Promise<void> = Promise.resolve();
  let entered: () => number = () => 0;

  beforeAll(async () => {
    ts = await tempStore(1);
    await seedSession(ts.store, 'a', 300, 300);
    // Workers started and the page path warm: the first page below is quick.
    for (const m of [3, 5, 6]) await ts.store.pageBuffer('a', { maxMessages: m });
    const slow = gatedPages(ts.store, () => gate);
    entered = slow.entered;
    app = buildServer(slow.store, { token: TOKEN, maxEventLoopLagMs: 0, admission: { maxInFlight: 1, minQueueMs: 600, maxQueueMs: 600 }, retryAfterSeconds: 3 });
    await app.ready();
  });

  afterAll(async () => {
    await app.close();
    await ts.cleanup();
  });

  it('holds one page in flight, queues the next within the bound, sheds past it in the SPEC shape', async () => {
    let open!: () => void;
    gate = new Promise((r) => (open = r));
    const first = app.inject({ url: '/v1/sessions/a/page?maxMessages=3', headers: AUTH });
    await until('the first page in the store', () => entered() === 1);
    // Waits its 600 ms, never admitted while the first holds the slot: shed.
    const second = await app.inject({ url: '/v1/sessions/a/page?maxMessages=4', headers: AUTH });
    expect(second.statusCode).toBe(503);
    expect(second.headers['retry-after']).toBe('3');
    expect(JSON.parse(second.body)).toMatchObject({ error: { code: 'overloaded', message: expect.stringMatching(/overloaded/) } });
    expect(entered()).toBe(1);
    // One that arrives now waits, and is admitted when the first is answered.
    const third = app.inject({ url: '/v1/sessions/a/page?maxMessages=5', headers: AUTH });
    await sleep(50);
    expect(entered()).toBe(1);
    open();
    expect((await first).statusCode).toBe(200);
    expect((await third).statusCode).toBe(200);
    expect(entered()).toBe(2);
    expect(app.pagerState.admission?.running).toBe(0);
    const m = (await app.inject({ url: '/metrics', headers: AUTH })).body;
    expect(m).toMatch(/^session_pager_admission_shed_total 1$/m);
    expect(m).toMatch(/^session_pager_admission_shed_waited_total 1$/m);
    expect(m).toMatch(/^session_pager_admission_in_flight 0$/m);
  });

  it('other routes are not admitted through it', async () => {
    let open!: () => void;
    gate = new Promise((r) => (open = r));
    const page = app.inject({ url: '/v1/sessions/a/page?maxMessages=6', headers: AUTH });
    await until('the page in the store', () => app.pagerState.admission?.running === 1);
    expect((await app.inject({ url: '/v1/sessions/a', headers: AUTH })).statusCode).toBe(200);
    expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200);
    open();
    expect((await page).statusCode).toBe(200);
  });
});

describe('the default gate on two workers', () => {
  it('admits IN_FLIGHT_PER_THREAD pages a worker at once, none queued; the next waits its turn and is served', async () => {
    const slots = 2 * IN_FLIGHT_PER_THREAD;
    const ts = await tempStore(2);
    await seedSession(ts.store, 'd', 300, 300);
    await ts.store.pageBuffer('d', { maxMessages: 3 });
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const slow = gatedPages(ts.store, () => gate);
    const app = buildServer(slow.store, { token: TOKEN, maxEventLoopLagMs: 0 });
    await app.ready();
    try {
      // The slots come from the store's worker threads (index.ts), not a fixed number.
      const pages = Array.from({ length: slots }, (_, i) => app.inject({ url: `/v1/sessions/d/page?maxMessages=${i + 2}`, headers: AUTH }));
      await until("every slot's page in the store", () => slow.entered() === slots);
      expect(app.pagerState.admission?.running).toBe(slots);
      expect(app.pagerState.admission?.queued).toBe(0);
      const more = app.inject({ url: '/v1/sessions/d/page?maxMessages=40', headers: AUTH });
      await until('the next one queued', () => app.pagerState.admission?.queued === 1);
      expect(slow.entered()).toBe(slots);
      open();
      for (const r of await Promise.all([...pages, more])) expect(r.statusCode).toBe(200);
      expect(slow.entered()).toBe(slots + 1);
      await until('the slots given back', () => app.pagerState.admission?.running === 0);
    } finally {
      open();
      await app.close();
      await ts.cleanup();
    }
  });
});

/**
 * A listening server with one page slot and a queue bound of `queueMs`, over a store whose pages
 * wait at a gate: `hold()` closes it and returns the function that opens it again.
 */
async function gatedServer(
  id: string,
  queueMs: number,
  over: ServerOptions = {},
): Promise<{ app: FastifyInstance; port: number; base: string; entered: () => number; framework: () => number; hold: () => () => void; close: () => Promise<void> }> {
  const ts = await tempStore(1);
  await seedSession(ts.store, id, 200, 200);
  let gate: Promise<void> = Promise.resolve();
  const slow = gatedPages(ts.store, () => gate);
  const app = buildServer(slow.store, { token: TOKEN, maxEventLoopLagMs: 0, followShedFromMs: 0, admission: { maxInFlight: 1, minQueueMs: queueMs, maxQueueMs: queueMs }, retryAfterSeconds: 2, ...over });
  // Page and follow requests that reached the framework (its first hook).
  let framework = 0;
  app.addHook('onRequest', async (request) => {
    if (/\/(page|follow)\?/.test(request.url)) framework++;
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const hold = () => {
    let open!: () => void;
    gate = new Promise((r) => (open = r));
    return open;
  };
  const close = async () => {
    await app.close();
    await ts.cleanup();
  };
  return { app, port, base: `http://127.0.0.1:${port}`, entered: slow.entered, framework: () => framework, hold, close };
}

/** gatedServer for the tests of one describe block: listening from its beforeAll, closed in its afterAll. */
function useGatedServer(id: string, queueMs: number, over: ServerOptions = {}): Awaited<ReturnType<typeof gatedServer>> {
  const srv = {} as Awaited<ReturnType<typeof gatedServer>>;
  beforeAll(async () => {
    Object.assign(srv, await gatedServer(id, queueMs, over));
  });
  afterAll(async () => srv.close());
  return srv;
}

describe('follow admission (real sockets)', () => {
  // One page slot and one follow slot: follows have a gate of their own beside the page slots.
  const srv = useGatedServer('f', 300, { admission: { maxInFlight: 1, maxFollowsInFlight: 1, minQueueMs: 300, maxQueueMs: 300 } });

  it("a follow's snapshot takes a slot of the follows' own gate, not a page slot: pages are admitted while it is full, follows past it are shed like pages, and the slot is given back once the snapshot is written", async () => {
    const { app, base, entered } = srv;
    const open = srv.hold();
    // A follow holds the one follow slot (its snapshot held in the store).
    const opening = openSse(`${base}/v1/sessions/f/follow?maxMessages=2`, AUTH);
    await until('the snapshot in the store', () => entered() === 1);
    expect(app.pagerState.admission?.follows.running).toBe(1);
    expect(app.pagerState.admission?.running).toBe(0);
    // A page is admitted at once all the same.
    const page = fetch(`${base}/v1/sessions/f/page?maxMessages=3`, { headers: AUTH });
    await until('the page in the store', () => entered() === 2);
    // A second follow waits its 300 ms bound for the follow slot, then is shed like a page.
    const shed = await openSse(`${base}/v1/sessions/f/follow?maxMessages=2`, AUTH);
    await shed.ended;
    expect(shed.status).toBe(503);
    expect(shed.res.headers['retry-after']).toBe('2');
    expect(entered()).toBe(2);
    open();
    expect((await page).status).toBe(200);
    // The snapshot written, the open stream holds no slot.
    const first = await opening;
    expect(first.status).toBe(200);
    await first.waitFor('the snapshot', (ev) => ev.some((e) => e.event === 'snapshot'));
    await until('the follow slot given back', () => app.pagerState.admission?.follows.running === 0);
    const f = await openSse(`${base}/v1/sessions/f/follow?maxMessages=2`, AUTH);
    expect(f.status).toBe(200);
    await f.waitFor('the snapshot', (ev) => ev.some((e) => e.event === 'snapshot'));
    expect(first.isEnded()).toBe(false);
    first.close();
    f.close();
  });
});

describe("the follow gate's metrics (real sockets)", () => {
  // One follow slot and room for one follow to wait (3 s); the loop-streak shed off, so only the gate sheds.
  const srv = useGatedServer('g', 3000, { admission: { maxInFlight: 2, maxFollowsInFlight: 1, maxQueue: 1, minQueueMs: 3000, maxQueueMs: 3000 }, shedDelayMs: 0, followShedFromMs: 0 });

  it('show its size, what is in flight and queued, and count its sheds, at once and after waiting, apart from the page gate\'s', async () => {
    const { app, base, entered } = srv;
    const metrics = async () => (await fetch(`${base}/metrics`, { headers: AUTH })).text();
    const open = srv.hold();
    const first = openSse(`${base}/v1/sessions/g/follow?maxMessages=2`, AUTH);
    await until('its snapshot in the store', () => entered() === 1);
    const queued = openSse(`${base}/v1/sessions/g/follow?maxMessages=2`, AUTH);
    await until('the second follow queued', () => app.pagerState.admission?.follows.queued === 1);
    // The queue is full: the third is shed at once.
    const atOnce = await openSse(`${base}/v1/sessions/g/follow?maxMessages=2`, AUTH);
    await atOnce.ended;
    expect(atOnce.status).toBe(503);
    let m = await metrics();
    expect(metricSample(m, 'session_pager_follow_admission_max_in_flight')).toBe(1);
    expect(metricSample(m, 'session_pager_follow_admission_in_flight')).toBe(1);
    expect(metricSample(m, 'session_pager_follow_admission_queued')).toBe(1);
    // No snapshot timed yet: the bound is the upper one.
    expect(metricSample(m, 'session_pager_follow_admission_queue_bound_seconds')).toBe(3);
    expect(metricSample(m, 'session_pager_follow_shed_total')).toBe(1);
    expect(metricSample(m, 'session_pager_follow_shed_waited_total')).toBe(0);
    // The page gate: its own size, nothing of the follows'.
    expect(metricSample(m, 'session_pager_admission_max_in_flight')).toBe(2);
    expect(metricSample(m, 'session_pager_admission_in_flight')).toBe(0);
    expect(metricSample(m, 'session_pager_admission_shed_total')).toBe(0);
    // The queued one waits out its bound without a slot: shed after waiting.
    const late = await queued;
    await late.ended;
    expect(late.status).toBe(503);
    m = await metrics();
    expect(metricSample(m, 'session_pager_follow_admission_queued')).toBe(0);
    expect(metricSample(m, 'session_pager_follow_shed_total')).toBe(2);
    expect(metricSample(m, 'session_pager_follow_shed_waited_total')).toBe(1);
    expect(metricSample(m, 'session_pager_admission_shed_total')).toBe(0);
    // Every overloaded answer is a shed of one gate or the other.
    expect(metricSample(m, 'session_pager_errors_total{code="overloaded"}')).toBe(2);
    open();
    const f = await first;
    expect(f.status).toBe(200);
    await f.waitFor('the snapshot', (ev) => ev.some((e) => e.event === 'snapshot'));
    await until('the follow slot given back', () => app.pagerState.admission?.follows.running === 0);
    expect(metricSample(await metrics(), 'session_pager_follow_admission_in_flight')).toBe(0);
    f.close();
  });
});

describe('requests shed at once (real sockets)', () => {
  // One slot and no room to wait: while a page holds the slot, the next is shed at once.
  // Follows' own gate has no slot: a follow is shed at once too.
  const srv = useGatedServer('s', 1000, { admission: { maxInFlight: 1, maxQueue: 0, maxFollowsInFlight: 0 }, shedDelayMs: 150 });

  it('are answered before the framework: 503 overloaded in the SPEC shape, Retry-After, a request id, held the shed delay, counted; the rest as before', async () => {
    const { base, entered, framework } = srv;
    const open = srv.hold();
    const page = fetch(`${base}/v1/sessions/s/page?maxMessages=3`, { headers: AUTH });
    await until('the page in the store', () => entered() === 1);
    // An admitted page is answered without the framework too (fast-page.ts).
    expect(framework()).toBe(0);
    const t0 = performance.now();
    const shed = await fetch(`${base}/v1/sessions/s/page?maxMessages=4`, { headers: { ...AUTH, 'x-request-id': 'shed-1' } });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('2');
    expect(shed.headers.get('x-request-id')).toBe('shed-1');
    expect(shed.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await shed.json()).toMatchObject({ error: { code: 'overloaded', message: expect.stringMatching(/overloaded/) } });
    const follow = await openSse(`${base}/v1/sessions/s/follow?maxMessages=2`, AUTH);
    await follow.ended;
    expect(follow.status).toBe(503);
    // Neither reached the framework (no request object, no hooks), nor the store.
    expect(framework()).toBe(0);
    expect(entered()).toBe(1);
    // A client without the token is still told so, and other routes are served.
    expect((await fetch(`${base}/v1/sessions/s/page?maxMessages=4`)).status).toBe(401);
    expect((await fetch(`${base}/v1/sessions/s`, { headers: AUTH })).status).toBe(200);
    open();
    expect((await page).status).toBe(200);
    expect((await fetch(`${base}/v1/sessions/s/page?maxMessages=5`, { headers: AUTH })).status).toBe(200);
    const m = await (await fetch(`${base}/metrics`, { headers: AUTH })).text();
    // The page gate's sheds (the follow's was its own gate's, not in this metric).
    expect(m).toMatch(/^session_pager_admission_shed_total 1$/m);
    expect(m).toMatch(/^session_pager_errors_total\{code="overloaded"\} 2$/m);
  });
});

/** session_pager_http_aborted_total of the page route, from /metrics text. */
function abortedPages(metrics: string): number {
  const m = /^session_pager_http_aborted_total\{route="\/v1\/sessions\/:id\/page"\} (\d+)$/m.exec(metrics);
  return m === null ? 0 : Number(m[1]);
}

describe('page route admission: clients that leave while queued (real sockets)', () => {
  const srv = useGatedServer('c', 5000);

  it('leave the queue the moment they close their connection: never built, neither shed nor an error, and the next request is served at once', async () => {
    const { app, port, base, entered } = srv;
    const open = srv.hold();
    const first = fetch(`${base}/v1/sessions/c/page?maxMessages=3`, { headers: AUTH });
    await until('the first page in the store', () => entered() === 1);
    // Three clients queue behind it, then hang up (a load generator stopping, a tab closed).
    const sockets = [0, 1, 2].map(() => connect(port, '127.0.0.1'));
    for (const s of sockets) s.write(`GET /v1/sessions/c/page?maxMessages=4 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
    await until('three requests queued', () => app.pagerState.admission?.queued === 3);
    for (const s of sockets) s.destroy();
    // Gone while the slot is still held: they no longer count against the queue's bound.
    await until('the queue empty', () => app.pagerState.admission?.queued === 0);
    expect(app.pagerState.admission?.running).toBe(1);
    open();
    expect((await first).status).toBe(200);
    expect((await fetch(`${base}/v1/sessions/c/page?maxMessages=5`, { headers: AUTH })).status).toBe(200);
    // The three never reached the store.
    expect(entered()).toBe(2);
    const m = await (await fetch(`${base}/metrics`, { headers: AUTH })).text();
    expect(m).toMatch(/^session_pager_admission_shed_total 0$/m);
    expect(m).not.toMatch(/^session_pager_errors_total\{code="internal"\}/m);
  });
  it('a client that leaves while its page is being built frees the slot and is no server error', async () => {
    const { app, port, base, entered } = srv;
    const open = srv.hold();
    const before = entered();
    const abortedBefore = abortedPages(await (await fetch(`${base}/metrics`, { headers: AUTH })).text());
    const s = connect(port, '127.0.0.1');
    s.write(`GET /v1/sessions/c/page?maxMessages=6 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
    await until('the page in the store', () => entered() === before + 1);
    s.destroy();
    await until('the slot given back', () => app.pagerState.admission?.running === 0);
    open();
    await sleep(50);
    expect((await fetch(`${base}/v1/sessions/c/page?maxMessages=7`, { headers: AUTH })).status).toBe(200);
    const m = await (await fetch(`${base}/metrics`, { headers: AUTH })).text();
    expect(m).not.toMatch(/^session_pager_errors_total\{code="internal"\}/m);
    expect(abortedPages(m)).toBe(abortedBefore + 1);
  });
});
