/**
 * Young generations that do not grow while a process starts and warms up.
 *
 * Loading the modules, building the app and the warm-ups keep many objects
 * alive across scavenges, and V8 doubled the main thread's semi-spaces up to
 * their limit (16 MB each: 32 MB of empty, resident young generation once
 * idle) and never shrank them: this V8 shrinks a young generation only in a
 * memory-reducing collection, which no JS API asks for (a full `gc()` does
 * not; measured in docs/benchmarks.md, issue 12 "Idle memory"). So the
 * growth factor is 1 while `hold` is in force, V8's default again after
 * `release`, and under load the young generation grows as before.
 *
 * The flag is process-wide and read when V8 decides to grow a semi-space;
 * every new isolate (a worker thread starting) sets a factor below 2 back
 * to 2, so the pool tells `isolateStarted` when each of its threads is
 * online and a hold in force is asserted again. The workers' own young
 * generations are bounded by their resource limits (main/worker-pool.ts).
 */
import { setFlagsFromString } from 'node:v8';

/** V8's default (`--semi-space-growth-factor`), which a new isolate also restores. */
const DEFAULT_GROWTH = 2;

let held = false;

export function holdYoungGeneration(): void {
  held = true;
  setFlagsFromString('--semi-space-growth-factor=1');
}

export function releaseYoungGeneration(): void {
  held = false;
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH}`);
}

/** A new isolate reset the factor to V8's default: hold again if a hold is in force. */
export function isolateStarted(): void {
  if (held) setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * Page workers' young generations at their full size from the start
 * (`semiSpaceMb`: the semi-space their resource limit allows), so the
 * growth factor in force while they warm up does not matter to them.
 *
 * Why: with the hold above in force while the workers ran their JIT
 * warm-up (it is, from `serve`'s start to the end of the warm-up), the
 * full collection that ends each worker's start discarded the worker's
 * optimized decode loop ("marking dependent code ... reason: weak
 * objects"), so the first real page ran it unoptimized and compiled it
 * again beside the decode; with the workers' semi-spaces at full size
 * from the start it was kept (in 12 of 12 workers against 2 of 12, traced
 * in docs/benchmarks.md, "The first page's decode loop"). V8 reads this
 * flag when it sets up an isolate's heap: the main thread's, set up
 * already, keeps its own; every worker started afterwards takes it.
 */
export function startWorkersAtFullSize(semiSpaceMb: number): void {
  setFlagsFromString(`--min-semi-space-size=${semiSpaceMb}`);
}
