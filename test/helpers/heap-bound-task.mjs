// The page worker (dist/workers/page-task.js) as piscina runs it, plus one question a test asks of
// it: 'heap' answers the worker's old space, its growth-triggered collections (workers/heap-bound.ts)
// and where V8 had the decode loop right after each of them (test/heap-bound.test.ts); 'settle'
// answers the same once the loop is optimized (see settle()).
import { getHeapSpaceStatistics } from 'node:v8';
import { workerData } from 'piscina';

const { default: pageTask, decodeSlice, decodeInArena } = await import(`${workerData.dist}/workers/page-task.js`);
const { warmupWork } = await import(`${workerData.dist}/workers/jit-warmup.js`);
const { tierOf } = await import(`${workerData.dist}/workers/optimization-status.js`);
// Absent before the bound existed: the test then sees no collection, and its heap bound decides.
const { heapCollections = () => 0 } = await import(`${workerData.dist}/workers/heap-bound.js`).catch(() => ({}));

const tiersAfterCollection = [];
let seen = heapCollections();

/**
 * The test's precondition, the loop optimized before the load begins, made to hold on a starved
 * machine: the worker's warm-up is bounded in wall time (3 s) and returns with the loop's compile
 * under way, so with every core busy the first question found it 'compiling' (or, its rounds cut
 * by the bound, not yet marked): the test failed on a correct build. Here the compile is waited
 * for, and a loop not yet optimized gets more of the warm-up's rounds, for up to 60 s, through
 * decodeInArena (not the task path, so no collection of heap-bound.ts runs before the start).
 * What the test checks, the tier after each collection under load, is untouched.
 */
async function settle() {
  const work = warmupWork();
  // Where the warm-up left the loop, and how long it took to settle: what the test would have read before.
  const settledFrom = tierOf(decodeSlice);
  const t0 = Date.now();
  for (; Date.now() - t0 < 60_000; ) {
    const tier = tierOf(decodeSlice);
    if (tier === 'optimized' || tier === null) break;
    if (tier === 'compiling') await new Promise((r) => setTimeout(r, 5));
    else for (const w of work) for (const t of w.tasks) decodeInArena(t, w.bytes);
  }
  return { ...task('heap'), settledFrom, settleMs: Date.now() - t0 };
}

export default function task(t) {
  if (t === 'settle') return settle();
  if (t === 'heap') {
    const old = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
    return { oldUsed: old.space_used_size, collections: heapCollections(), tiersAfterCollection, tier: tierOf(decodeSlice) };
  }
  const result = pageTask(t);
  // The task whose start collected has decoded since: its loop ran the code the collection left.
  if (heapCollections() !== seen) {
    seen = heapCollections();
    tiersAfterCollection.push(tierOf(decodeSlice));
  }
  return result;
}
