/**
 * New follows queued in the server and started a few each loop iteration
 * (issue 15: attach past capacity; server/follow-queue.ts).
 *
 * Unit: FollowQueue on an injected clock and scheduler: at most `batch`
 * started a drain, oldest first, the rest left for the next drain (scheduled
 * again); a follow that waited longer than `maxWaitMs` shed instead of
 * started, whatever the batch; a follow whose client left neither; 0 never
 * sheds for the wait.
 *
 * Real server process (loadtest/overload.mjs, attach, 16/256 windows
 * alternating, each follower holding ~100 ms) with the busy-streak shed off
 * (SESSION_PAGER_FOLLOW_SHED_MS=0), so that follows are shed only for their
 * wait in this queue: some shed in the 256 windows, with Retry-After and the
 * JSON error, the 16 windows right after them shed far less, nothing but 200
 * and 503. Before the queue, with the streak off, nothing was shed at 256
 * (the 256 windows 1452/0 and 1709/0: docs/benchmarks.md, rel sixteenth
 * session); FOLLOW_QUEUE_TEST_OFF=1 runs the server without the queue
 * (SESSION_PAGER_FOLLOW_QUEUE_MS=0): that run must fail.
 */
import { describe, expect, it } from 'vitest';
import { FollowQueue } from '../src/main/server/follow-queue.js';
import { runOverload } from './helpers/overload-run.js';

function fakeQueue(batch: number, maxWaitMs: number) {
  let t = 0;
  const drains: (() => void)[] = [];
  const q = new FollowQueue(batch, maxWaitMs, () => t, (f) => void drains.push(f));
  const log: string[] = [];
  const push = (name: string, gone = false) => q.push(() => log.push(`start ${name}`), () => log.push(`shed ${name}`), () => gone);
  const drain = () => {
    const f = drains.shift();
    if (f === undefined) throw new Error('no drain scheduled');
    f();
  };
  return { q, log, push, drain, drains, pass: (ms: number) => (t += ms) };
}

describe('FollowQueue', () => {
  it('starts at most batch follows a drain, oldest first, and schedules the rest for the next', () => {
    const f = fakeQueue(2, 0);
    for (const n of ['a', 'b', 'c', 'd', 'e']) f.push(n);
    expect(f.drains.length).toBe(1);
    f.drain();
    expect(f.log).toEqual(['start a', 'start b']);
    expect(f.q.length).toBe(3);
    expect(f.drains.length).toBe(1);
    f.drain();
    f.drain();
    expect(f.log).toEqual(['start a', 'start b', 'start c', 'start d', 'start e']);
    expect(f.q.length).toBe(0);
    expect(f.drains.length).toBe(0);
    // Empty again: the next push schedules a drain of its own.
    f.push('f');
    expect(f.drains.length).toBe(1);
  });

  it('sheds a follow that waited longer than maxWaitMs instead of starting it, whatever the batch', () => {
    const f = fakeQueue(1, 10);
    f.push('old1');
    f.push('old2');
    f.pass(5);
    f.push('young');
    f.pass(6); // old1 and old2 waited 11 ms, young 6
    f.drain();
    expect(f.log).toEqual(['shed old1', 'shed old2', 'start young']);
    expect(f.q.length).toBe(0);
  });

  it('skips a follow whose client left; 0 never sheds for the wait', () => {
    const f = fakeQueue(4, 0);
    f.push('gone', true);
    f.push('here');
    f.pass(1_000);
    f.drain();
    expect(f.log).toEqual(['start here']);
  });
});

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

describe('follows past capacity, shed for their wait in the queue (real server process)', () => {
  const env: Record<string, string> = { SESSION_PAGER_FOLLOW_SHED_MS: '0', ...(process.env.FOLLOW_QUEUE_TEST_OFF === '1' ? { SESSION_PAGER_FOLLOW_QUEUE_MS: '0' } : {}) };
  it('256 followers re-attaching every ~100 ms, the busy-streak shed off: some shed (503, Retry-After, the JSON error), few at 16 right after, nothing but 200 and 503', async () => {
    const windows = await attachRun(env);
    const sum = (ws: Window[], k: keyof Window) => ws.reduce((a, w) => a + Number(w[k]), 0);
    const high = windows.filter((w) => w.conns === 256);
    const low = windows.filter((w) => w.conns === 16);
    expect(high.length).toBe(2);
    expect(low.length).toBe(3);
    for (const k of ['errors', 'other', 'shedBare', 'shedNotJson'] as const) expect(sum(windows, k)).toBe(0);
    expect(sum(high, 'ok')).toBeGreaterThan(0);
    expect(sum(high, 'shed'), JSON.stringify(windows)).toBeGreaterThan(0);
    expect(sum(low, 'ok')).toBeGreaterThan(0);
    const shedShare = (ws: Window[]) => sum(ws, 'shed') / (sum(ws, 'shed') + sum(ws, 'ok'));
    expect(shedShare(low), JSON.stringify(windows)).toBeLessThan(shedShare(high) / 4);
  }, 180_000);
});
