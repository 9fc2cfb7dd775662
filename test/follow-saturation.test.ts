/**
 * New follows shed in the event loop's busy streaks (issue 15: attach past
 * capacity; server/saturation.ts, fast-shed.ts).
 *
 * Unit: LoopStreak's decision on an injected clock (the loop's idle time, the
 * time, the random draw): nothing shed under `fromMs`, everything from `toMs`,
 * nothing before a few requests are seen in the streak or while the loop was
 * mostly idle (unless the streak has seen a long queue: a wave after a quiet
 * spell), and the first requests after the loop blocked are never shed
 * (recovery at once).
 *
 * Real server process (loadtest/overload.mjs, attach, 16/256 windows
 * alternating, each follower holding its stream ~100 ms and attaching again:
 * 160 attaches/s at 16, 2,560/s at 256, past what the server's one event loop
 * serves, ~2,000-2,400/s on two cores): every answer a 200
 * or a 503 with Retry-After and the JSON `overloaded` error; some follows
 * shed in the 256 windows; the 16 windows, which come right after them, served,
 * with a share of their answers shed under a quarter of the 256 windows'. With
 * FOLLOW_SATURATION_TEST_OFF=1 the server runs with the streak off
 * (SESSION_PAGER_FOLLOW_SHED_MS=0, as main before it): that run must fail.
 *
 * Not "none shed at 16": on a loaded machine (the CI's, load ~20 on two cores)
 * the streak is wall time and a server descheduled inside its callbacks makes
 * streaks of tens of ms at 16 followers; 12 follows of a 16 window were shed
 * so, and runs beside two busy loops shed 1-6 in 5 of 6 runs, against 53-78%
 * of the 256 windows' answers (docs/decisions.md).
 */
import { describe, expect, it } from 'vitest';
import { LoopStreak } from '../src/main/server/saturation.js';
import { runOverload } from './helpers/overload-run.js';


/** A loop whose busy and idle time the test spends by hand. */
function fakeLoop(): { streak: (fromMs: number, toMs: number, minUtilization?: number, draw?: number) => LoopStreak; busy: (ms: number) => void; idle: (ms: number) => void } {
  let t = 1000;
  let idle = 0;
  return {
    streak: (fromMs, toMs, minUtilization = 0, draw = 0.5) =>
      new LoopStreak(
        fromMs,
        toMs,
        minUtilization,
        () => ({ idle }),
        () => t,
        () => draw,
      ),
    busy: (ms) => (t += ms),
    idle: (ms) => ((t += ms), (idle += ms)),
  };
}

describe('LoopStreak', () => {
  it('sheds nothing under fromMs, everything from toMs, by the draw in between', () => {
    const l = fakeLoop();
    const s = l.streak(2, 6, 0, 0.5);
    s.start();
    l.idle(5);
    const looks: boolean[] = [];
    for (let i = 0; i < 10; i++) {
      looks.push(s.shed());
      l.busy(1);
    }
    // Streaks 0..9 ms: under 2 never (and the first three looks are too few), 2-3 ms p < 0.5, 4 ms p = 0.5, from 6 always.
    expect(looks).toEqual([false, false, false, false, false, true, true, true, true, true]);
  });

  it('the first looks after the loop blocked are never shed, however long the streak before', () => {
    const l = fakeLoop();
    const s = l.streak(2, 6);
    s.start();
    l.idle(1);
    for (let i = 0; i < 20; i++) {
      s.shed();
      l.busy(2);
    }
    expect(s.shed()).toBe(true);
    l.idle(0.5); // the load stopped: the loop waited for I/O once
    expect([s.shed(), s.shed(), s.shed()]).toEqual([false, false, false]);
  });

  it('one request behind a long busy spell is not a queue: not shed', () => {
    const l = fakeLoop();
    const s = l.streak(2, 6);
    s.start();
    l.idle(1);
    s.streak();
    l.busy(50);
    // The second look in this streak, 50 ms in: fewer than the requests a queue needs.
    expect(s.shed()).toBe(false);
  });

  it('a long streak at low utilization (one stall) sheds nothing', () => {
    const l = fakeLoop();
    const s = l.streak(2, 6, 0.8);
    s.start();
    for (let i = 0; i < 20; i++) {
      l.idle(9);
      s.streak();
      l.busy(1);
    }
    s.streak();
    l.busy(30); // a collection
    const after = [s.shed(), s.shed(), s.shed(), s.shed(), s.shed()];
    expect(after).toEqual([false, false, false, false, false]);
  });

  it('a long queue at low utilization (a wave after a quiet spell) is shed past its 192nd request', () => {
    const l = fakeLoop();
    const s = l.streak(2, 6, 0.8);
    s.start();
    for (let i = 0; i < 20; i++) {
      l.idle(9);
      s.streak();
      l.busy(1);
    }
    // A wave: 250 requests in one streak, 0.12 ms each (30 ms: the loop's busy share stays far under 0.8).
    l.idle(1);
    const looks: boolean[] = [];
    for (let i = 0; i < 250; i++) {
      looks.push(s.shed());
      l.busy(0.12);
    }
    // Held back by the utilization guard while the queue is short, however long the streak; shed from the 192nd.
    expect(looks.slice(0, 191).some(Boolean)).toBe(false);
    expect(looks.slice(191).every(Boolean)).toBe(true);
  });

  it('fromMs 0 never sheds; nothing is shed before start()', () => {
    const l = fakeLoop();
    const off = l.streak(0, 6);
    off.start();
    const before = l.streak(2, 6);
    for (let i = 0; i < 10; i++) {
      l.busy(5);
      expect(off.shed()).toBe(false);
      expect(before.shed()).toBe(false);
    }
  });
});

/** Answers counted over the windows (loadtest/interleave.mjs). */
interface Window {
  conns: number;
  lead?: boolean;
  ok: number;
  shed: number;
  shedBare: number;
  shedNotJson: number;
  other: number;
  errors: number;
}

async function attachRun(env: Record<string, string>): Promise<Window[]> {
  const args = ['--scenario', 'attach', '--hold', '100', '--workers', '2', '--connections', '16,256', '--modes', 'ignore', '--interleave', '2', '--window', '2', '--window-settle', '0.5', '--warmup', '2'];
  const run = await runOverload<{ interleave: { windows: Window[] } }>(args, env);
  return run.interleave.windows.filter((w) => w.lead !== true);
}

describe('follows past capacity (real server process)', () => {
  const env: Record<string, string> = process.env.FOLLOW_SATURATION_TEST_OFF === '1' ? { SESSION_PAGER_FOLLOW_SHED_MS: '0' } : {};
  it('256 followers re-attaching every ~100 ms: some shed (503, Retry-After, the JSON error), few at 16 right after, nothing but 200 and 503', async () => {
    const windows = await attachRun(env);
    const sum = (ws: Window[], k: keyof Window) => ws.reduce((a, w) => a + Number(w[k]), 0);
    const high = windows.filter((w) => w.conns === 256);
    const low = windows.filter((w) => w.conns === 16);
    expect(high.length).toBe(2);
    expect(low.length).toBe(3);
    for (const k of ['errors', 'other', 'shedBare', 'shedNotJson'] as const) expect(sum(windows, k)).toBe(0);
    expect(sum(high, 'ok')).toBeGreaterThan(0);
    expect(sum(high, 'shed')).toBeGreaterThan(0);
    // The 16 windows after the 256 ones: served, and shed far less (a loaded machine's stalls
    // shed a few there; a shed that did not stop when the load fell would shed as at 256).
    expect(sum(low, 'ok')).toBeGreaterThan(0);
    const shedShare = (ws: Window[]) => sum(ws, 'shed') / (sum(ws, 'shed') + sum(ws, 'ok'));
    expect(shedShare(low), JSON.stringify(windows)).toBeLessThan(shedShare(high) / 4);
  }, 180_000);
});
