// Run by test/heap-bound.test.ts with --no-incremental-marking (as `serve` runs: main/cli/serve-gc.ts).
// One page worker, JIT warm-up on, sent the warm-up's own tasks (as structured clones, as piscina
// delivers them), TASKS of them (or more, below) 8 at a time; its old space sampled every 100 tasks.
// Prints the worker's heap before and after, and the highest sample.
import { Piscina } from 'piscina';
import { fileURLToPath } from 'node:url';

const [dist, tasksArg] = process.argv.slice(2);
const TASKS = Number(tasksArg);
const { warmupWork } = await import(`${dist}/workers/jit-warmup.js`);
// The pool's own young-generation bound, so the probe's worker collects as the pool's do.
const { WORKER_YOUNG_GENERATION_MB } = await import(`${dist}/main/worker-pool.js`);
const work = warmupWork().flatMap((w) => w.tasks.map((t) => ({ ...t, bytes: w.bytes })));
const pool = new Piscina({
  filename: fileURLToPath(new URL('./heap-bound-task.mjs', import.meta.url)),
  minThreads: 1,
  maxThreads: 1,
  workerData: { dist, jitWarmUp: true },
  resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
});
// Once the warm-up's compile of the loop has ended (heap-bound-task.mjs, settle()).
const start = await pool.run('settle');
let highest = start.oldUsed;
// TASKS at least, then on (to 4 x TASKS) until the bound has collected: a collection of V8's own
// during the load (seen once with every core busy) lowers the heap the bound measures growth from,
// and a task leaves little in the heap. Without the bound, more tasks only grow the heap further
// past the test's limit.
let collections = 0;
for (let i = 0; i < 4 * TASKS && (i < TASKS || collections < 1); i += 8) {
  await Promise.all(Array.from({ length: 8 }, (_, k) => pool.run(work[(i + k) % work.length])));
  if (i % 100 < 8) {
    const h = await pool.run('heap');
    highest = Math.max(highest, h.oldUsed);
    collections = h.collections;
  }
}
const end = await pool.run('heap');
await pool.destroy();
process.stdout.write(JSON.stringify({ start, end, highest: Math.max(highest, end.oldUsed) }));
