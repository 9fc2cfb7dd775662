/**
 * Small slices on the calling thread (main/small-slice-pool.ts): none before
 * the decoder is prepared (the store's page-path warm-up does that, so the
 * decode is optimized here before a request's slice runs on the event loop),
 * then those within the size bound while no task is on the workers and the
 * page is alone (the store's answer); the others, all of them while the
 * workers are busy, and all of them while the page is not alone, go to the
 * pool.
 */
import { describe, expect, it } from 'vitest';
import { parseSlice } from '../src/main/page-assembler.js';
import { SmallSlicePool } from '../src/main/small-slice-pool.js';
import type { PagePool } from '../src/main/worker-pool.js';
import { runPageTask } from '../src/workers/page-task.js';
import { sliceTask, type SliceResult, type SliceTask } from '../src/workers/slice-protocol.js';

/** A pool whose tasks wait until `finish` is called; counts what it was given. */
function fakePool() {
  const waiting: (() => void)[] = [];
  const pool: PagePool & { ran: number } = {
    options: { maxThreads: 2, maxQueue: 64 },
    queueSize: 0,
    utilization: 0,
    completed: 0,
    threads: [],
    ran: 0,
    run(task) {
      pool.ran++;
      return new Promise<SliceResult>((resolve) => waiting.push(() => resolve(runPageTask(task))));
    },
    close: async () => undefined,
  };
  return { pool, finish: () => waiting.splice(0).forEach((f) => f()) };
}

/** An empty slice whose (no) bytes come with the task: what the page path hands over when workers cannot read the store. */
function small(): SliceTask {
  const t = sliceTask('', 'x', 0, 0, 0, 0, 0, 0);
  t.bytes = Buffer.alloc(0);
  return t;
}

/** One small slice through the pool, its pool task (if it went there) finished at once. */
async function runOne(p: SmallSlicePool, finish: () => void): Promise<void> {
  const r = p.run(small(), {});
  finish();
  await r;
}

describe('small slices on the calling thread', () => {
  it('go to the workers until the decoder is prepared, then inline while the workers are idle', async () => {
    const { pool, finish } = fakePool();
    const p = new SmallSlicePool(pool, 4096);
    // Not prepared: every slice goes to the pool, however long the process has had the decoder loaded.
    await runOne(p, finish);
    await import('../src/workers/page-task.js');
    await new Promise((r) => setTimeout(r, 10));
    await runOne(p, finish);
    expect(pool.ran).toBe(2);
    expect(p.inline).toBe(0);

    await p.prepare();
    const here = await p.run(small(), {});
    expect(p.inline).toBe(1);
    expect(pool.ran).toBe(2);
    // What a worker answers (the same task code), less the timings.
    const slice = (r: SliceResult) => {
      const { head, whole, body, tail, frames, bytesRead } = parseSlice(r as ArrayBuffer);
      return { head, whole, body: Buffer.from(body), tail, frames, bytesRead };
    };
    expect(slice(here)).toEqual(slice(runPageTask(small())));

    // A task on the workers: the next small slice waits its turn there too.
    const big = sliceTask('', 'x', 0, 8192, 0, 0, 0, 0);
    big.bytes = Buffer.alloc(8192);
    const onPool = p.run(big, {});
    const queued = p.run(small(), {});
    expect(pool.ran).toBe(4);
    finish();
    await Promise.all([onPool, queued]);
    expect(p.inline).toBe(1);
  });

  it('go to the workers while the page is not alone, whatever the workers are doing', async () => {
    const { pool, finish } = fakePool();
    let alone = false;
    const p = new SmallSlicePool(pool, 4096, () => alone);
    await p.prepare();
    // Idle workers, a prepared decoder, a small slice: still the pool's while others wait.
    const queued = p.run(small(), {});
    expect(pool.ran).toBe(1);
    finish();
    await queued;
    expect(p.inline).toBe(0);
    alone = true;
    await p.run(small(), {});
    expect(p.inline).toBe(1);
    expect(pool.ran).toBe(1);
  });
});

describe("small slices while the calling thread's decoder warms up", () => {
  it('go to the workers until V8 says the decoder is optimized (at most 32 of them), then stay here', async () => {
    let tier: 'optimized' | 'compiling' | 'not-optimized' = 'not-optimized';
    const { pool, finish } = fakePool();
    const p = new SmallSlicePool(pool, 4096, () => true, () => tier);
    await p.prepare();
    p.awaitWarmDecoder();
    for (let k = 0; k < 3; k++) await runOne(p, finish);
    expect([pool.ran, p.inline]).toEqual([3, 0]);
    tier = 'optimized';
    await p.run(small(), {});
    expect([pool.ran, p.inline]).toEqual([3, 1]);
    // Deoptimized by a real page later: V8 compiles it again from the pages decoded here.
    tier = 'not-optimized';
    await p.run(small(), {});
    expect([pool.ran, p.inline]).toEqual([3, 2]);
  });

  it('come here after 32 sent to the workers without the decoder optimized (a client that never pauses)', async () => {
    const { pool, finish } = fakePool();
    const p = new SmallSlicePool(pool, 4096, () => true, () => 'not-optimized');
    await p.prepare();
    p.awaitWarmDecoder();
    for (let k = 0; k < 40; k++) await runOne(p, finish);
    expect([pool.ran, p.inline]).toEqual([32, 8]);
  });

  it('come here at once when the store does not warm the decoder up', async () => {
    const { pool } = fakePool();
    const p = new SmallSlicePool(pool, 4096, () => true, () => 'not-optimized');
    await p.prepare();
    await p.run(small(), {});
    expect([pool.ran, p.inline]).toEqual([0, 1]);
  });
});
