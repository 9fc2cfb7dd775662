// Run by test/heap-bound.test.ts with --no-incremental-marking (as `serve` runs: main/cli/serve-gc.ts).
// One page worker, JIT warm-up on, sent the warm-up's own tasks (as structured clones, as piscina
// delivers them), TASKS of them 8 at a time; its old space sampled every 100 tasks.
// Prints the worker's heap before and after, and the highest sample.
import { Piscina } from 'piscina';
import { fileURLToPath } from 'node:url';

const [dist, tasksArg] = process.argv.slice(2);
const TASKS = Number(tasksArg);
const { warmupWork } = await import(`${dist}/workers/jit-warmup.js`);
const work = warmupWork().flatMap((w) => w.tasks.map((t) => ({ ...t, bytes: w.bytes })));
const pool = new Piscina({
  filename: fileURLToPath(new URL('./heap-bound-task.mjs', import.meta.url)),
  minThreads: 1,
  maxThreads: 1,
  workerData: { dist, jitWarmUp: true },
  resourceLimits: { maxYoungGenerationSizeMb: 6 },
});
// Once the warm-up's compile of the loop has ended (heap-bound-task.mjs, settle()).
const start = await pool.run('settle');
let highest = start.oldUsed;
for (let i = 0; i < TASKS; i += 8) {
  await Promise.all(Array.from({ length: 8 }, (_, k) => pool.run(work[(i + k) % work.length])));
  if (i % 100 < 8) highest = Math.max(highest, (await pool.run('heap')).oldUsed);
}
const end = await pool.run('heap');
await pool.destroy();
process.stdout.write(JSON.stringify({ start, end, highest: Math.max(highest, end.oldUsed) }));
