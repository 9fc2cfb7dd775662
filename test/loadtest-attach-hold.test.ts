/**
 * `session-pager loadtest`'s attach loop (src/loadtest/scenarios.ts) against a stand-in client:
 * each attach watches a duration of its own around --hold (holdFor: within +-50%), so followers
 * that one stall of the server held up together do not come back in step for the rest of the run.
 */
import { describe, expect, it } from 'vitest';
import { attachLoop, holdFor, type LoopContext } from '../src/loadtest/scenarios.js';
import { Recorder } from '../src/loadtest/recorder.js';

/** A follow that yields its snapshot at once and ends when closed; the time it stayed open is kept. */
function standInClient(held: number[]) {
  return {
    follow() {
      let close = () => undefined as void;
      const closed = new Promise<void>((resolve) => (close = resolve));
      const t0 = performance.now();
      return {
        stats: { reconnects: 0, gaps: 0 },
        close: () => {
          held.push(performance.now() - t0);
          close();
        },
        async *[Symbol.asyncIterator]() {
          yield { kind: 'snapshot' };
          await closed;
        },
      };
    },
  };
}

describe('loadtest attach holds', () => {
  it('holdFor draws within holdMs x (0.5, 1.5)', () => {
    expect(holdFor(1000, () => 0)).toBe(500);
    expect(holdFor(1000, () => 0.5)).toBe(1000);
    expect(holdFor(1000, () => 0.999)).toBeCloseTo(1499, 0);
  });

  it('each attach of the loop watches its own duration around --hold', async () => {
    const held: number[] = [];
    const stop = new AbortController();
    const c = { client: standInClient(held), rec: new Recorder(), stop: stop.signal, maxMessages: 5, rand: Math.random } as unknown as LoopContext;
    const loops = Array.from({ length: 4 }, () => attachLoop(c, [{ id: 's', last: 10 }] as never, 100));
    await new Promise((res) => setTimeout(res, 1500));
    stop.abort();
    await Promise.all(loops);
    expect(held.length).toBeGreaterThan(20);
    // One-sided: a starved test process can only lengthen a hold. With one hold for all, none is under 100 ms.
    for (const ms of held) expect(ms).toBeGreaterThanOrEqual(48);
    expect(Math.min(...held)).toBeLessThan(80);
  }, 20_000);
});
