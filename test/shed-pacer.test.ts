/**
 * Shed answers held longer, per connection, for a client that keeps being
 * shed (issue 16 item 8, overload.ts ShedPacer): the first shed in a row on
 * a connection is held the base delay, each next one twice as long up to
 * the cap, and an admitted request starts the streak again. Other
 * connections are not affected. Then over real keep-alive sockets: a
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
    const ask = (via: Agent = agent): Promise<{ status: number; ms: number; retryAfter: string | undefined }> =>
      new Promise((resolve, reject) => {
        const t0 = performance.now();
        const req = request(`${base}/v1/sessions/a/page?maxMessages=4`, { agent: via, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, retryAfter: res.headers['retry-after'] as string | undefined }));
        });
        req.on('error', reject);
        req.end();
      });
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await ask());
    expect(answers.map((x) => x.status)).toEqual([503, 503, 503, 503, 503, 503]);
    expect(answers.every((x) => x.retryAfter === '1')).toBe(true);
    // Held 100, 200, 400, 800, 1600, 1600 ms (at least; a loaded machine adds to each).
    const mins = [100, 200, 400, 800, 1600, 1600];
    answers.forEach((x, i) => expect(x.ms, `answer ${i}`).toBeGreaterThanOrEqual(mins[i]! - 5));
    // Another connection starts at the base delay, while this one is still at the cap.
    const other = new Agent({ keepAlive: true, maxSockets: 1 });
    const [fresh, again] = await Promise.all([ask(other), ask()]);
    other.destroy();
    agent.destroy();
    expect(fresh.status).toBe(503);
    expect(again.ms).toBeGreaterThanOrEqual(1595);
    expect(fresh.ms).toBeLessThan(again.ms - 400);
    open();
    expect((await held).status).toBe(200);
  });
});
