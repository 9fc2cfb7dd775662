/**
 * V8's garbage collector as `serve` runs it.
 *
 * 1. Without incremental marking. The server's heap is small (~20 MB:
 *    fastify, its schemas, the store's views) and a page request leaves
 *    ~130 KB of short-lived objects and ~100 KB of ArrayBuffers (the page
 *    body, the workers' results). With incremental marking V8 started a
 *    marking cycle about every 40 requests (the soft-limit task, far below
 *    the old generation's limit), and every cycle cost the main thread
 *    15-30 ms (13 ms of it sweeping ArrayBuffers at its start): about 40% of
 *    the main thread's time per page over HTTP, the thread every request
 *    goes through. Without it, full collections come at the old
 *    generation's limit only, a few per thousand pages, each a pause of
 *    ~10 ms on a heap this size. Measured side by side in
 *    docs/benchmarks.md (issue 15); docs/decisions.md says why.
 *    SESSION_PAGER_INCREMENTAL_MARKING=1 keeps V8's default.
 *
 * 2. The main thread's young generation held at its initial size while
 *    the process starts (main/young-generation.ts): the store's warm-up
 *    releases it when done.
 *
 * Flags are process-wide (the page workers get them too) and read when V8
 * acts on them (starting a marking cycle, growing a semi-space), so setting
 * them before the store opens is enough.
 */
import { setFlagsFromString } from 'node:v8';
import { holdYoungGeneration } from '../young-generation.js';
import { envNumber, envSwitch } from './env-values.js';

/** Whether `serve` runs V8 without incremental marking (1. above): its store's warm-up then ends with a full collection (StoreOptions.warmUp.collect). */
export function markingOff(env: NodeJS.ProcessEnv): boolean {
  return envSwitch(env, 'SESSION_PAGER_INCREMENTAL_MARKING') !== true;
}

/** SESSION_PAGER_HEAP_GROWING_PERCENT (3. below): an integer, 0 (or unset) for V8's own growth. */
function heapGrowingPercent(env: NodeJS.ProcessEnv): number {
  return envNumber(env, 'SESSION_PAGER_HEAP_GROWING_PERCENT', { integer: true, min: 0, max: 10_000 }) ?? 0;
}

/** The collector's variables checked (`serve`'s parsing: a bad one refuses before anything starts). */
export function checkGcEnv(env: NodeJS.ProcessEnv): void {
  markingOff(env);
  heapGrowingPercent(env);
}

export function tuneServeGc(env: NodeJS.ProcessEnv): void {
  holdYoungGeneration();
  // 3. SESSION_PAGER_HEAP_GROWING_PERCENT=N lets the old generation grow to (1 + N/100)x what a full
  //    collection left, where V8's own limit is ~1.4x. At 300, full collections under load came
  //    7 → 1 per 5 s and p99 fell, but pages/s moved within the noise and peak RSS rose 15-85 MB,
  //    so V8's own growth is the default (docs/decisions.md, issue 15).
  const growing = heapGrowingPercent(env);
  if (growing > 0) setFlagsFromString(`--heap-growing-percent=${growing}`);
  if (markingOff(env)) setFlagsFromString('--no-incremental-marking');
}
