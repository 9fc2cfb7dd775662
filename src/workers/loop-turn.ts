/**
 * Memory a page worker can only give back from its event loop, and the
 * turns of that loop that give it back.
 *
 * The zstd binding (@toondepauw/node-zstd) hands each compressed piece over
 * as an external buffer: its bytes are the binding's own allocation, and
 * when V8 collects the buffer Node does not free them there but queues the
 * binding's finalizer on the thread's event loop (a native immediate). A
 * piscina worker runs its tasks without ever turning that loop: between
 * tasks it waits in Atomics.wait and reads the next task synchronously. So
 * no finalizer ran, and every piece a worker ever compressed in zstd stayed
 * allocated in its malloc arena, idle or not: the server's RSS grew with
 * every browser page served, without bound (docs/benchmarks.md, "rss19").
 *
 * So the worker counts the bytes of such output, and once they pass
 * TURN_AFTER_BYTES it answers its next task only after one turn of its loop
 * (a task that returns a promise: piscina awaits it on the running loop),
 * in which the finalizers queued since run. A turn is one setImmediate,
 * every ~100 typical zstd pages a worker.
 */

/** Output bytes awaiting their finalizers that start a turn of the loop at the next answer. */
export const TURN_AFTER_BYTES = 4 * 1024 * 1024;

let pending = 0;
let turns = 0;

/**
 * `bytes` of output just made whose memory only a finalizer on this thread's loop frees. (On the
 * main thread, which codes pieces too, nothing reads the count: its loop turns between requests.)
 */
export function freedOnLoop(bytes: number): void {
  pending += bytes;
}

/** `answer` as it is, or, past TURN_AFTER_BYTES, once the thread's event loop has turned. */
export function afterLoopTurn<T>(answer: T): T | Promise<T> {
  if (pending < TURN_AFTER_BYTES) return answer;
  pending = 0;
  turns++;
  // setImmediate's callbacks run after the loop's poll phase, where the queued finalizers run.
  return new Promise((resolve) => setImmediate(() => resolve(answer)));
}

/** Turns asked so far on this thread (a test reads it). */
export function loopTurns(): number {
  return turns;
}
