// The page worker (dist/workers/page-task.js) as piscina runs it, plus one question a test asks of
// it: 'heap' answers the worker's old space, its growth-triggered collections (workers/heap-bound.ts)
// and where V8 had the decode loop right after each of them (test/heap-bound.test.ts).
import { getHeapSpaceStatistics } from 'node:v8';
import { workerData } from 'piscina';

const { default: pageTask, decodeSlice } = await import(`${workerData.dist}/workers/page-task.js`);
const { tierOf } = await import(`${workerData.dist}/workers/optimization-status.js`);
// Absent before the bound existed: the test then sees no collection, and its heap bound decides.
const { heapCollections = () => 0 } = await import(`${workerData.dist}/workers/heap-bound.js`).catch(() => ({}));

const tiersAfterCollection = [];
let seen = heapCollections();

export default function task(t) {
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
