// Run by test/optimized-code.test.ts: a store's whole warm-up (page workers started as the pool
// starts them, their JIT warm-up and its closing collection, the page-path warm-up), with V8
// tracing what it optimizes and what it throws away. The flags are V8's and process-wide (set here:
// a worker refuses them as execArgv); every thread's trace lines go to this process's stdout.
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--trace-opt');
setFlagsFromString('--trace-deopt');
const [dist, dataDir] = process.argv.slice(2);
const { openStore } = await import(`${dist}/main/store.js`);
// A bound no loaded machine reaches: what is asserted is where the warm-up ends, not how fast.
const store = await openStore({ dataDir, workers: 2, warmUp: { jitBudgetMs: 120_000 } });
await store.warmUp();
await store.close();
