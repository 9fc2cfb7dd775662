/**
 * Shed answers held longer, per connection, for a client that keeps being
 * shed (issue 16 item 8, overload.ts ShedPacer): the first shed in a row on
 * a connection is held the base delay, each next one twice as long up to
 * the cap, and an admitted request starts the streak again; a request that
 * comes before the last shed's Retry-After is over is held the rest of it as
 * well. Other connections are not affected. Then over real keep-alive sockets: a
 * client that ignores Retry-After is answered its 503s further and further
 * apart while the page slot stays taken.
 */
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/main/server/index.js';
import { ShedPacer } from '../src/main/server/overload.js';
import { gatedPages, seedSession, tempStore, until, type TempStore } from './server-helpers.js';

describe('ShedPacer', () => {
  it('doubles the hold for each shed in a row on one connection, up to the cap; admission starts over', () => {
    const p = new ShedPacer(500, 4000);
    const a = {};
    const b = {};
    expect([p.shed(a), p.shed(a), p.shed(a), p.shed(a), p.shed(a)]).toEqual([500, 1000, 2000, 4000, 4000]);
    expect(p.shed(b)).toBe(500);
    p.admitted(a);
    expect(p.shed(a)).toBe(500);
    // No connection object (an injected request): the base delay, nothing remembered.
    expect(p.shed(undefined)).toBe(500);
    expect(p.shed(undefined)).toBe(500);
  });

  it('holds a request that came before its Retry-After was over the rest of it too, so ignoring it gains nothing', () => {
    let now = 0;
    const p = new ShedPacer(500, 4000, 1000, () => now);
    const ignoring = {};
    const honouring = {};
    // Both shed at 0, answered at 500.
    expect(p.shed(ignoring)).toBe(500);
    expect(p.shed(honouring)).toBe(500);
    // The ignoring client asks again as its answer arrives (500): held the 1,000 ms it was asked to
    // wait, then the next hold of its streak, so it is answered at 2,500, as the honouring one is,
    // which asks at 1,500 (500 + Retry-After) and is held its streak's 1,000 ms.
    now = 500;
    expect(p.shed(ignoring)).toBe(2000);
    now = 1500;
    expect(p.shed(honouring)).toBe(1000);
    // Again at 2,500: both next answered at 2,500 + 1,000 + 2,000.
    now = 2500;
    expect(p.shed(ignoring)).toBe(3000);
    now = 3500;
    expect(p.shed(honouring)).toBe(2000);
    // Part of the wait kept: asked 400 ms after its answer (5,500), 600 ms of it are left.
    now = 5900;
    expect(p.shed(ignoring)).toBe(600 + 4000);
    // Admitted: the next shed starts over, with nothing owed.
    p.admitted(ignoring);
    now = 6000;
    expect(p.shed(ignoring)).toBe(500);
  });
});

describe('shed answers on one keep-alive connection (real sockets)', () => {
  const TOKEN = 'pacer-token-1234567';
  let ts: TempStore;
  let app: FastifyInstance;
  let base: string;
  let open!: () => void;
  let entered: () => number = () => 0;

  beforeAll(async () => {
    ts = await tempStore(1);
    await seedSession(ts.store, 'a', 100, 100);
    const gate = new Promise<void>((r) => (open = r));
    const slow = gatedPages(ts.store, () => gate);
    entered = slow.entered;
    app = buildServer(slow.store, { token: TOKEN, maxEventLoopLagMs: 0, admission: { maxInFlight: 1, minQueueMs: 20, maxQueueMs: 20 }, shedDelayMs: 100, maxShedDelayMs: 1600 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    open();
    await app.close();
    await ts.cleanup();
  });

  it('holds each next 503 on the connection twice as long, up to the cap', async () => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    // The one slot, taken until the end of the test.
    const held = fetch(`${base}/v1/sessions/a/page?maxMessages=3`, { headers });
    await until('the page in the store', () => entered() === 1);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const ask = (via: Agent = agent): Promise<{ status: number; ms: number; sent: number; at: number; retryAfter: string | undefined }> =>
      new Promise((resolve, reject) => {
        const t0 = performance.now();
        const req = request(`${base}/v1/sessions/a/page?maxMessages=4`, { agent: via, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, sent: t0, at: performance.now(), retryAfter: res.headers['retry-after'] as string | undefined }));
        });
        req.on('error', reject);
        req.end();
      });
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await ask());
    expect(answers.map((x) => x.status)).toEqual([503, 503, 503, 503, 503]);
    expect(answers.every((x) => x.retryAfter === '1')).toBe(true);
    // This client asks again the moment it is answered, ignoring Retry-After: 1. The first answer
    // is held 100 ms; each next one leaves the second it was asked to wait after the one before
    // left, plus 200, 400, 800, 1600 ms. So answer i comes at least (hold of i - 1) + 1,000 ms +
    // (hold of i) after request i - 1 was sent (the server is in this process: one clock; a
    // loaded machine only adds). Without the kept Retry-After it came after the two holds alone.
    expect(answers[0]!.ms).toBeGreaterThanOrEqual(95);
    const holds = [100, 200, 400, 800, 1600];
    for (let i = 1; i < answers.length; i++) {
      expect(answers[i]!.at - answers[i - 1]!.sent, `answer ${i}`).toBeGreaterThanOrEqual(holds[i - 1]! + 1000 + holds[i]! - 2);
    }
    // Another connection starts at the base delay, while this one is still at the cap.
    const other = new Agent({ keepAlive: true, maxSockets: 1 });
    const [fresh, again] = await Promise.all([ask(other), ask()]);
    other.destroy();
    agent.destroy();
    expect(fresh.status).toBe(503);
    // Counted from the last request's send, as above: the server starts the cap's hold when its
    // answer left, and a loaded machine can be late to read that answer and ask again, so the
    // time from this request's own send may be shorter than a whole second and a hold.
    expect(again.at - answers[4]!.sent).toBeGreaterThanOrEqual(1600 + 1000 + 1600 - 2);
    expect(fresh.ms).toBeLessThan(again.ms - 400);
    open();
    expect((await held).status).toBe(200);
  });
});
