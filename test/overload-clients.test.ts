/**
 * The overload suite's attach clients (loadtest/overload-clients.mjs) against a stand-in follow
 * endpoint: each attach holds its stream a duration of its own within --hold x (1 +- jitter), so a
 * batch of attaches that one stall of the server held up together does not come back together a
 * hold later for the rest of the run; with jitter 0 every hold is the same, as until 12-02.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClients } from '../loadtest/overload-clients.mjs';

let server: Server;
let base = '';
/** How long each stream stayed open, ms (the server's request to the socket's close), and when it closed. */
const held: { ms: number; at: number }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const t0 = performance.now();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('id: 10\nevent: snapshot\ndata: {"cursor":10,"page":{}}\n\n');
    req.socket.on('close', () => held.push({ ms: performance.now() - t0, at: performance.now() }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function holds(holdJitter: number): Promise<number[]> {
  held.length = 0;
  const path = { scenario: 'attach', targets: [{ id: 's', last: 10 }], maxMessages: 5 };
  const start = performance.now();
  const r = (await runClients({ base, headers: {}, path, conns: 4, mode: 'ignore', seconds: 2, holdMs: 200, holdJitter, burst: true })) as { counts: { ok: number } };
  expect(r.counts.ok).toBeGreaterThan(8);
  await new Promise((res) => setTimeout(res, 100));
  // The attaches cut by the run's end (2 s) are not holds.
  return held.filter((h) => h.at < start + 1950).map((h) => h.ms);
}

describe('overload attach clients: holds', () => {
  // One-sided bounds: a starved test process can only lengthen what the server sees.
  it('jitter 0.5: holds drawn from 100-300 ms around the 200 ms asked, some well under it', async () => {
    const xs = await holds(0.5);
    expect(xs.length).toBeGreaterThan(8);
    for (const x of xs) expect(x).toBeGreaterThanOrEqual(95);
    expect(Math.min(...xs)).toBeLessThan(170);
  }, 30_000);

  it('jitter 0: every hold the 200 ms asked', async () => {
    const xs = await holds(0);
    expect(xs.length).toBeGreaterThan(8);
    for (const x of xs) expect(x).toBeGreaterThanOrEqual(195);
  }, 30_000);
});
