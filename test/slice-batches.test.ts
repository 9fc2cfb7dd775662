/**
 * Small slices queued behind busy workers go to the next free worker in one
 * message (main/slice-batches.ts): a slice goes alone while a worker is
 * free; queued ones go in shares of the queue, each answered with what the
 * same task answers alone; large slices and compress tasks never wait there;
 * the queue counts in queueSize and is bounded by maxQueue. And a real
 * pool's workers answer batches (workers/page-task.ts).
 */
import { describe, expect, it } from 'vitest';
import { parseSlice } from '../src/main/page-assembler.js';
import { BATCH_SLICE_BYTES, MAX_BATCH, SliceBatches, type BatchingPool } from '../src/main/slice-batches.js';
import { createPagePool, TASKS_PER_WORKER } from '../src/main/worker-pool.js';
import { runBatch, runPageTask } from '../src/workers/page-task.js';
import { sliceTask, type BatchResult, type SliceBatch, type SliceResult, type SliceTask } from '../src/workers/slice-protocol.js';

/** A pool of two "workers" whose calls wait until `finish`; records each call's task. */
function fakePool(maxQueue = 64, concurrentTasksPerWorker?: number) {
  const waiting: (() => void)[] = [];
  const calls: (SliceTask | SliceBatch | object)[] = [];
  const pool: BatchingPool = {
    options: concurrentTasksPerWorker === undefined ? { maxThreads: 2, maxQueue } : { maxThreads: 2, maxQueue, concurrentTasksPerWorker },
    queueSize: 0,
    utilization: 0,
    completed: 0,
    threads: [],
    run(task) {
      calls.push(task);
      return new Promise<SliceResult | BatchResult>((resolve, reject) =>
        waiting.push(() => {
          try {
            resolve('batch' in task ? runBatch(task) : runPageTask(task));
          } catch (err) {
            reject(err as Error);
          }
        }),
      );
    },
    close: async () => undefined,
  };
  /** Answer every call made so far (answers may make new calls). */
  const finish = async () => {
    waiting.splice(0).forEach((f) => f());
    await new Promise((r) => setImmediate(r));
  };
  return { pool, calls, finish };
}

/** A slice whose bytes come with the task: `n` bytes of blank lines (empty: no frames, a result; else a corrupt_range answer). */
function slice(n = 0): SliceTask {
  const t = sliceTask('', 'x', 0, n, 0, 0, 0, 0);
  t.bytes = Buffer.alloc(n, 0x0a);
  return t;
}

const view = (r: SliceResult) => {
  if (!(r instanceof ArrayBuffer)) return r;
  const { head, whole, body, tail, frames, bytesRead } = parseSlice(r as ArrayBuffer);
  return { head, whole, body: Buffer.from(body), tail, frames, bytesRead };
};

describe('small slices batched behind busy workers', () => {
  it('fill the places piscina gives each worker behind its running call at the end of the turn, with what the turn queued, so a worker finds its next task without waiting for this thread', async () => {
    const { pool, calls, finish } = fakePool(64, 2);
    const b = new SliceBatches(pool);
    const answers = Array.from({ length: 10 }, () => b.run(slice(), {}));
    // Two alone (one per worker), eight queued in this turn.
    expect(calls.length).toBe(2);
    expect(b.queueSize).toBe(8);
    // At the turn's end the two free places take the queue in shares (8 / 2, then 4 / 2): four calls on the two workers.
    await new Promise((r) => setImmediate(r));
    expect(calls.map((c) => ('batch' in c ? c.batch.length : 1))).toEqual([1, 1, 4, 2]);
    expect(b.queueSize).toBe(2);
    // The four answered: the last two go out.
    await finish();
    expect(calls.map((c) => ('batch' in c ? c.batch.length : 1))).toEqual([1, 1, 4, 2, 1, 1]);
    expect(b.queueSize).toBe(0);
    await finish();
    const results = await Promise.all(answers);
    expect(results.map(view)).toEqual(Array.from({ length: 10 }, () => view(runPageTask(slice()))));
  });

  it('go alone while a worker is free, and in shares of the queue once both are busy', async () => {
    const { pool, calls, finish } = fakePool();
    const b = new SliceBatches(pool);
    const answers = Array.from({ length: 10 }, () => b.run(slice(), {}));
    // Two alone (one per worker), eight queued.
    expect(calls.length).toBe(2);
    expect(calls.every((c) => !('batch' in c))).toBe(true);
    expect(b.queueSize).toBe(8);
    // Both answered: each worker, as it frees, takes the queue's share over the two workers (8 / 2, then 4 / 2).
    await finish();
    expect(calls.map((c) => ('batch' in c ? c.batch.length : 1))).toEqual([1, 1, 4, 2]);
    expect(b.queueSize).toBe(2);
    await finish();
    await finish();
    const results = await Promise.all(answers);
    expect(calls.length).toBe(6);
    expect(results.map(view)).toEqual(Array.from({ length: 10 }, () => view(runPageTask(slice()))));
    expect(b.batches).toBe(2);
    expect(b.batchedSlices).toBe(6);
  });

  it('bounds a batch by slices and bytes, and sends large slices and compress tasks at once', async () => {
    const { pool, calls, finish } = fakePool();
    const b = new SliceBatches(pool);
    const first = [b.run(slice(), {}), b.run(slice(), {})];
    // Workers busy: a large slice and a compress task still go to the pool (piscina queues them).
    const large = b.run(slice(BATCH_SLICE_BYTES + 1), {});
    const compress = b.run({ compress: new Uint8Array(10), coding: 1, level: 1 }, {});
    expect(calls.length).toBe(4);
    const queued = Array.from({ length: 3 * MAX_BATCH }, () => b.run(slice(200 * 1024), {}));
    expect(calls.length).toBe(4);
    await finish();
    // Four calls answered, so both workers are free: each takes at most MAX_BATCH slices and 1 MiB (five of 200 KiB).
    const sizes = calls.slice(4).map((c) => ('batch' in c ? c.batch.length : 1));
    expect(sizes).toEqual([5, 5]);
    while (b.queueSize > 0) await finish();
    await finish();
    await Promise.all([...first, large, compress, ...queued]);
  });

  it('answers each slice of a batch alone: a task that throws fails only its own page', async () => {
    const { pool, finish } = fakePool();
    const b = new SliceBatches(pool);
    const busy = [b.run(slice(), {}), b.run(slice(), {})];
    // No bytes and nowhere to read them from: the task throws before any decode.
    const bad = sliceTask('', 'x', 0, 4, 0, 0, 0, 0);
    const good = b.run(slice(), {});
    const failing = b.run(bad, {});
    const more = [b.run(slice(), {}), b.run(slice(), {})];
    const outcome = failing.then(() => 'resolved', (e: Error) => e.message);
    // The queue's first share, [good, bad], goes as one batch.
    await finish();
    expect(b.batches).toBe(1);
    await finish();
    await finish();
    await Promise.all([...busy, good, ...more]);
    expect(await outcome).toMatch(/no worker reader/);
    expect(view(await good)).toEqual(view(runPageTask(slice())));
  });

  it('counts its queue as the pool did and refuses past maxQueue', async () => {
    const { pool, finish } = fakePool(4);
    const b = new SliceBatches(pool);
    const runs = Array.from({ length: 6 }, () => b.run(slice(), {}));
    expect(b.queueSize).toBe(4);
    await expect(b.run(slice(), {})).rejects.toThrow(/queue is at limit/);
    while (b.queueSize > 0) await finish();
    await finish();
    await Promise.all(runs);
  });

  it('rejects what is still queued when closed', async () => {
    const { pool } = fakePool();
    const b = new SliceBatches(pool);
    b.run(slice(), {});
    b.run(slice(), {});
    const queued = b.run(slice(), {});
    await b.close();
    await expect(queued).rejects.toThrow(/closed/);
  });
});

describe('a real pool answers batches', () => {
  it('moves every result of a batch back, the same bytes as the tasks alone', async () => {
    const pool = createPagePool({ threads: 1, jitWarmUp: false });
    try {
      // Slices with and without frames to read (a blank line is no frame: a corrupt_range answer).
      const tasks = Array.from({ length: 6 }, (_, i) => slice(i % 2 === 0 ? 0 : 64));
      const results = await Promise.all(tasks.map((t) => pool.run(t, {})));
      expect(results.map(view)).toEqual(tasks.map((_, i) => view(runPageTask(slice(i % 2 === 0 ? 0 : 64)))));
      expect(results.filter((r) => r instanceof ArrayBuffer).length).toBe(3);
      expect((pool as unknown as SliceBatches).batches).toBeGreaterThan(0);
      // Tasks answered, not messages: the pool_tasks_completed counter keeps its meaning.
      expect(pool.completed).toBe(6);
      // The batches keep on the pool what piscina hands its workers at once (slice-batches.ts onWorkers).
      expect((pool.options as { concurrentTasksPerWorker?: number }).concurrentTasksPerWorker).toBe(TASKS_PER_WORKER);
    } finally {
      await pool.close();
    }
  });
});
