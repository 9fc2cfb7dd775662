// Run by test/worker-loop-turn.test.ts in a process of its own (its RSS is the measure): one page
// worker (the pool serve runs, atomics and all) sent TASKS compress tasks of 1 MiB of random bytes
// in zstd, two at a time, as the page path sends them. Prints the process's RSS (VmRSS, MB) after
// the first WARM tasks and after all of them.
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

const [dist, tasksArg] = process.argv.slice(2);
const TASKS = Number(tasksArg);
const WARM = 8;
const { createPagePool, runCompress } = await import(`${dist}/main/worker-pool.js`);
const { CODING_ZSTD } = await import(`${dist}/workers/slice-protocol.js`);
const rssMB = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
const pool = createPagePool({ threads: 1, jitWarmUp: false, binaryWarmUp: false });
// Incompressible: each piece's coded form is as large as its input.
const bytes = randomBytes(1 << 20);
let coded = 0;
const run = async () => {
  const r = await runCompress(pool, bytes, CODING_ZSTD, 3);
  coded += r.bytes.length;
};
for (let i = 0; i < WARM; i += 2) await Promise.all([run(), run()]);
const warm = rssMB();
for (let i = 0; i < TASKS; i += 2) await Promise.all([run(), run()]);
const end = rssMB();
await pool.close();
process.stdout.write(JSON.stringify({ warm, end, codedMB: coded / (1 << 20) }));
process.exit(0);
