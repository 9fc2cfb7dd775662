/**
 * Bounds a page worker's heap under sustained load: once the heap has grown
 * SLACK bytes past what the last full collection left, the worker runs one
 * (the warm-up's collectGarbage, full-gc.ts) from its task path.
 *
 * Why the worker must do it itself: with incremental marking off in `serve`
 * (main/cli/serve-gc.ts) V8 starts a worker's full collection only at
 * allocation limits derived from the process's heap limit (~4 GB), and a
 * worker allocates too little outside its heap (its arena is reused) for
 * external memory to start one. Each task leaves a few KB in the old
 * generation: one worker grew 8 -> 167 MB over 26,000 tasks, never
 * collected, and the server's RSS ~20 MB per 5 s overload run (issue 15).
 * A heap bound (resourceLimits) is not the way: at 64-128 MB V8 flushes the
 * workers' optimized decode code in its collections (docs/decisions.md).
 * A full collection here keeps that code (test/heap-bound.test.ts).
 *
 * The check: v8.getHeapStatistics() costs ~0.7 us (it allocates its answer;
 * process.memoryUsage() ~12 us, it reads the RSS from /proc), against tens of
 * us to ms a task; asked every CHECK_EVERY tasks it costs nothing measurable,
 * and at ~5-15 KB a task the heap overshoots SLACK by well under 1 MB.
 * The collection itself (~10-30 ms) lands in the task that finds the growth:
 * a piscina worker waits for tasks in Atomics.wait, so nothing scheduled for
 * later would run between tasks.
 */
import { getHeapStatistics } from 'node:v8';
import { collectGarbage } from './full-gc.js';

/**
 * Growth past the last collection's heap that starts the next one: tens of MB, so a worker
 * collects every few thousand tasks (~10-30 ms each), while its heap stays within ~30 MB of
 * its live size instead of growing without end.
 */
const SLACK = 24 * 1024 * 1024;
const CHECK_EVERY = 16;

let tasks = 0;
/** The heap's used bytes after the last collection (the warm-up's, or this module's). */
let base = -1;
/** Collections this module ran (a test reads it). */
let collections = 0;

/** What the heap holds now is its live size: the next check measures growth from here (call after a full collection). */
export function heapCollected(): void {
  base = getHeapStatistics().used_heap_size;
}

/** Called once a task: collect when the heap has grown SLACK past the last collection. Whether it collected. */
export function collectWhenGrown(): boolean {
  if (++tasks % CHECK_EVERY !== 0) return false;
  const used = getHeapStatistics().used_heap_size;
  if (base < 0) {
    base = used;
    return false;
  }
  if (used - base < SLACK) return false;
  if (collectGarbage()) collections++;
  heapCollected();
  return true;
}

/** Collections run so far. */
export function heapCollections(): number {
  return collections;
}
