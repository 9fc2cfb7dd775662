/**
 * The overload suite's side-by-side measure (loadtest/overload.mjs --interleave): the schedule of
 * alternating low and high windows, the ratios of neighbouring windows, and the clients
 * (loadtest/overload-clients.mjs runSchedule) against a stand-in server that sheds like the real
 * one (a 503 with Retry-After, held) once more requests are in flight than it serves at once.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { interleavedPairs, interleaveSchedule, sweepLevels, sweepSchedule } from '../loadtest/interleave.mjs';
import { runSchedule } from '../loadtest/overload-clients.mjs';

describe('interleaved windows: schedule and ratios', () => {
  it('alternates low and high windows, each client kind in turn, and ends on a low window', () => {
    const s = interleaveSchedule({ low: 16, high: 256, modes: ['ignore', 'honour'], pairs: 2, seconds: 2, settle: 0.5, quiet: 0.2 });
    expect(s.map((w) => `${w.conns}${w.mode[0]}`)).toEqual(['16i', '256i', '16h', '256h', '16h', '256h', '16i', '256i', '16i']);
    for (const w of s) expect([w.seconds, w.settle, w.quiet]).toEqual([2, 0.5, 0.2]);
    // Lead windows first, marked, then the same schedule.
    const led = interleaveSchedule({ low: 16, high: 256, modes: ['ignore', 'honour'], pairs: 2, seconds: 2, settle: 0.5, quiet: 0.2, lead: 2 });
    expect(led.map((w) => `${w.conns}${w.mode[0]}${w.lead ? ' lead' : ''}`)).toEqual(['16i lead', '256i lead', ...s.map((w) => `${w.conns}${w.mode[0]}`)]);
  });

  it('takes each high window against the low window before and after it: median, worst, both neighbours, per CPU-second, p99', () => {
    const w = (conns: number, mode: string, ok: number, cpuSeconds: number, lat: number[]) => ({ conns, mode, measuredSeconds: 1, ok, cpuSeconds, lat });
    const windows = [w(16, 'ignore', 100, 1, [10]), w(256, 'ignore', 90, 1, [20]), w(16, 'honour', 120, 1, [10]), w(256, 'honour', 60, 0.5, [30]), w(16, 'honour', 100, 1, [10])];
    const r = interleavedPairs(windows, { low: 16, high: 256, modes: ['ignore', 'honour'] }) as Record<string, any>;
    // ignore: 90/100, 90/120; honour: 60/120, 60/100.
    expect(r.ignore.pairs).toBe(2);
    expect(r.ignore.goodput.worst).toBe(0.75);
    expect(r.ignore.goodput.median).toBe(0.825);
    expect(r.ignore.againstBothNeighbours.median).toBe(round3(90 / 110));
    expect(r.honour.goodput.worst).toBe(0.5);
    expect(r.honour.goodput.under90).toBe(2);
    // Per CPU-second the honour window served 120/s: 120/120 and 120/100.
    expect(r.honour.perCpuSecond.worst).toBe(1);
    expect(r.honour.perCpuSecond.median).toBe(1.1);
    expect(r.unloadedP99).toBe(10);
    expect(r.ignore.p99.ratio).toBe(2);
    expect(r.honour.p99.ratio).toBe(3);
    // The noise floor: low windows against each other, both ways: 100/120, 120/100, 120/100, 100/120.
    expect(r.lowControl).toEqual({ pairs: 4, median: 1.017, worst: 0.833, under90: 2 });
    // Lead windows count nowhere, not even as a neighbour.
    const led = interleavedPairs([{ ...w(16, 'ignore', 10, 1, [99]), lead: true }, { ...w(256, 'ignore', 10, 1, [99]), lead: true }, ...windows], { low: 16, high: 256, modes: ['ignore', 'honour'] });
    expect(led).toEqual(r);
  });
});

describe('capacity sweep: schedule and knee', () => {
  it('runs every level each cycle, up then down, each client kind in turn, after the lead windows', () => {
    const s = sweepSchedule({ levels: [16, 64, 256], modes: ['ignore', 'honour'], cycles: 2, seconds: 2, settle: 0.5, lead: 2 });
    expect(s.map((w) => `${w.conns}${w.mode[0]}${w.lead ? ' lead' : ''}`)).toEqual(['16i lead', '64i lead', '16i', '64i', '256i', '16h', '64h', '256h', '256h', '64h', '16h', '256i', '64i', '16i']);
  });

  it('finds the knee where goodput stops rising and gives each p99 against the knee\'s and the lowest level\'s', () => {
    const w = (conns: number, ok: number, lat: number[], lead = false) => ({ conns, mode: 'ignore', measuredSeconds: 1, ok, shed: conns === 512 ? 50 : 0, lat, ...(lead ? { lead: true } : {}) });
    const windows = [w(16, 999, [999], true), w(16, 100, [5]), w(64, 400, [10]), w(256, 950, [20]), w(512, 1000, [50]), w(16, 100, [5]), w(64, 400, [10]), w(256, 950, [20]), w(512, 1000, [50])];
    const r = sweepLevels(windows, { levels: [16, 64, 256, 512], modes: ['ignore'] }) as Record<string, any>;
    // 256's 950 is 0.95 of the best (512's 1000): the lowest level at capacity.
    expect(r.ignore.knee).toBe(256);
    expect(r.ignore.kneeP99).toBe(20);
    const by = Object.fromEntries(r.ignore.rows.map((x: any) => [x.conns, x]));
    expect(by[512].p99OverKnee).toBe(2.5);
    expect(by[512].p99OverLowest).toBe(10);
    expect(by[512].shedPerSecond).toBe(50);
    expect(by[64].shareOfBest).toBe(0.4);
    expect(by[16].windows).toBe(2);
  });
});

const round3 = (x: number) => Math.round(x * 1000) / 1000;

// A stand-in server: serves SLOTS requests at once (each 5 ms); past that it sheds, holding the
// 503 (with Retry-After: 1) HOLD_MS, as the real server's pacer does.
const SLOTS = 4;
const HOLD_MS = 300;
let server: Server;
let base = '';
let inFlight = 0;
beforeAll(async () => {
  server = createServer((_req, res) => {
    if (inFlight >= SLOTS) {
      setTimeout(() => res.writeHead(503, { 'retry-after': '1', 'content-length': 0 }).end(), HOLD_MS);
      return;
    }
    inFlight++;
    setTimeout(() => {
      inFlight--;
      res.writeHead(200, { 'content-length': 2 }).end('ok');
    }, 5);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('interleaved windows: clients', () => {
  /**
   * The low level's clients are not the high level's: a high window ends with most of its clients
   * waiting for a held 503 and then (honouring) for Retry-After, and with one set of loops the low
   * window after it had those clients (found on the real server: low windows after a high one
   * served 0.3-0.9 of the others). Apart, and starting a quiet moment into their window (the high
   * clients' last requests done), the low window after a high one is served like the one before
   * it, and answers the high clients get in it are not counted in it.
   */
  it("a low window after a high one is not held up by the high window's shed clients, honouring or not", async () => {
    const path = { scenario: 'tail', targets: [], last: 0, maxMessages: 1 };
    for (const mode of ['ignore', 'honour']) {
      const schedule = [
        { conns: 2, mode, seconds: 1, settle: 0.3, quiet: 0.2 },
        { conns: 32, mode, seconds: 1, settle: 0.3, quiet: 0.2 },
        { conns: 2, mode, seconds: 1, settle: 0.3, quiet: 0.2 },
      ];
      const ws = (await runSchedule({ base, headers: {}, path, schedule })) as { conns: number; ok: number; shed: number; shedBare: number; other: number; errors: number }[];
      expect(ws.map((w) => w.conns)).toEqual([2, 32, 2]);
      const [before, high, after] = ws;
      // Two clients never meet the four slots: no 503 is theirs (the high clients' held 503s that
      // arrive in the low window are not counted there).
      expect(before.shed, mode).toBe(0);
      expect(after.shed, mode).toBe(0);
      expect(high.shed, mode).toBeGreaterThan(0);
      expect(high.shedBare, mode).toBe(0);
      // Served (not a timing: how many depends on the CPU the test gets; before the fixes the low
      // window after a high one served none, its two clients shed and waiting out Retry-After).
      expect(before.ok, mode).toBeGreaterThan(0);
      expect(after.ok, mode).toBeGreaterThan(0);
      for (const w of ws) expect([w.other, w.errors], mode).toEqual([0, 0]);
    }
  }, 30_000);
});

describe('interleaved windows: attach', () => {
  // A stand-in follow endpoint: the snapshot event at once, then the stream stays open until the
  // client closes it; the most streams it ever had open at once.
  let follow: Server;
  let followBase = '';
  let open = 0;
  let mostOpen = 0;
  let attaches = 0;
  beforeAll(async () => {
    follow = createServer((req, res) => {
      attaches++;
      open++;
      mostOpen = Math.max(mostOpen, open);
      req.socket.once('close', () => open--);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // The SPEC's snapshot (the load generator checks one now and then: loadtest/snapshot-end.mjs).
      res.write('id: 10\nevent: snapshot\ndata: {"cursor":10,"page":{"sessionId":"s","throughSeq":10,"fromSeq":10,"toSeq":11,"hasMore":true,"records":[]}}\n\n');
    });
    await new Promise<void>((resolve) => follow.listen(0, '127.0.0.1', resolve));
    followBase = `http://127.0.0.1:${(follow.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => { follow.closeAllConnections(); follow.close(() => resolve()); }));

  /**
   * Each level's followers attach, hold and attach again within their own windows, and every hold
   * ends with its window: with holds (2 s) longer than a window (1 s), a stream of the 8-connection
   * window held into the 2-connection window after it would have the server hold up to 10 at once,
   * and each connection attaches once a window (a hold cut at the window's very end had the loop
   * attach again at once when its timer fired a fraction of a ms early).
   */
  it("counts each window's snapshots and closes every stream by its window's end", async () => {
    const path = { scenario: 'attach', targets: [{ id: 's', last: 10 }], last: 0, maxMessages: 5 };
    const schedule = [
      { conns: 2, mode: 'ignore', seconds: 1, settle: 0.2, quiet: 0.2 },
      { conns: 8, mode: 'ignore', seconds: 1, settle: 0.2, quiet: 0.2 },
      { conns: 2, mode: 'ignore', seconds: 1, settle: 0.2, quiet: 0.2 },
    ];
    const ws = (await runSchedule({ base: followBase, headers: {}, path, schedule, holdMs: 2000, holdJitter: 0 })) as { conns: number; ok: number; shed: number; other: number; errors: number; lat: number[] }[];
    expect(ws.map((w) => w.conns)).toEqual([2, 8, 2]);
    // One attach a connection a window (its hold outlasts the window), each counted in its window
    // with its latency (its clients start after the settle part), the last window's too.
    for (const w of ws) {
      expect(w.ok).toBeGreaterThan(0);
      expect(w.ok).toBeLessThanOrEqual(w.conns);
      expect(w.lat.length).toBe(w.ok);
      expect([w.shed, w.other, w.errors]).toEqual([0, 0, 0]);
    }
    expect(mostOpen).toBeLessThanOrEqual(8);
    expect(attaches).toBeLessThanOrEqual(12);
  }, 30_000);
});
