/**
 * Whether V8 runs a function as optimized code yet, asked of V8 itself, so
 * a worker's JIT warm-up can stop when its decode loop is optimized instead
 * of after a fixed number of rounds that sometimes ended just before.
 *
 * Why a fixed count was not enough: V8 marks the decode loop (a large
 * function: ~17 profiler ticks of stable feedback) late in the warm-up or
 * not at all when the worker's CPU is shared, then compiles it on a helper
 * thread that starts at the next call. The warm-up's rounds (bounded by 1 s
 * of wall) often ended before that compile did: the worker's first real
 * page then ran the loop unoptimized while it compiled beside it
 * (docs/benchmarks.md, "The first page of a session").
 *
 * The answer is V8's %GetOptimizationStatus, which only code parsed while
 * `--allow-natives-syntax` is set may call: the flag is set for the one
 * function made here and cleared again (as full-gc.ts does for `gc`). The
 * flag is process-wide and workers start at once: another thread may clear
 * it between this one's setting it and parsing, so a parse that fails is
 * tried again; after a few tries the status is unknown (null) and the
 * warm-up falls back to its fixed rounds. A process started with the flag
 * keeps it.
 */
import { setFlagsFromString } from 'node:v8';

/** Bits of %GetOptimizationStatus (V8's OptimizationStatus, src/runtime/runtime-test.cc). */
const OPTIMIZED = 1 << 4;
const MARKED_FOR_DEOPTIMIZATION = 1 << 14;
const OPTIMIZING_CONCURRENTLY = 1 << 10;

export type Tier = 'optimized' | 'compiling' | 'not-optimized';

const TRIES = 8;

/**
 * Whether the process was started with --allow-natives-syntax (node refuses it
 * in NODE_OPTIONS, so on its command line; a worker's execArgv is its parent's
 * unless told otherwise): then the flag is someone else's (tests and probes that
 * make their own `%` calls), and it is left set instead of cleared under them.
 */
const STARTED_WITH_NATIVES = process.execArgv.some((a) => /^--allow[-_]natives[-_]syntax$/.test(a));

let status: ((f: unknown) => number) | null | undefined;
let optimizer: ((f: unknown) => unknown) | null | undefined;
let concurrentOptimizer: ((f: unknown) => unknown) | null | undefined;

/** A function whose body is `body` (a `%` call on its argument `f`), parsed with the flag set; null when it cannot be. */
function nativeFunction(body: string, probe: (fn: (f: unknown) => unknown) => void): ((f: unknown) => unknown) | null {
  for (let i = 0; i < TRIES; i++) {
    setFlagsFromString('--allow-natives-syntax');
    try {
      const fn = new Function('f', body) as (f: unknown) => unknown;
      // Called once now, while the flag is set: a function body is compiled at its first call.
      probe(fn);
      return fn;
    } catch {
      // Parsed while another thread had the flag cleared: try again.
    } finally {
      if (!STARTED_WITH_NATIVES) setFlagsFromString('--no-allow-natives-syntax');
    }
  }
  return null;
}

function statusFunction(): ((f: unknown) => number) | null {
  return nativeFunction('return %GetOptimizationStatus(f);', (fn) => fn(fn)) as ((f: unknown) => number) | null;
}

/**
 * Ask V8 to optimize `f` at its next call (%OptimizeFunctionOnNextCall), on
 * the calling thread, from the feedback its calls so far gathered; false
 * when this V8 cannot be asked. For a warm-up that has already run `f` over
 * every shape it will meet: V8's own marking waits for a number of profiler
 * ticks that a large loop called once per task reaches after anything from
 * 2 to 16 rounds of the same work (or compiles only its loop for on-stack
 * replacement, which leaves the function itself unoptimized), and a start
 * waited for those rounds (docs/benchmarks.md, "ready (eleventh session)").
 * The feedback is the same either way: the rounds repeat one log.
 * `concurrent`: compiled on a V8 helper thread, set off by the next call (for
 * the main thread, which has requests to serve meanwhile), not on this one.
 */
export function optimizeOnNextCall(f: (...args: never[]) => unknown, concurrent = false): boolean {
  let fn = concurrent ? concurrentOptimizer : optimizer;
  if (fn === undefined) {
    // Probed on a throwaway function of its own (called once, so it has feedback to optimize from).
    fn = nativeFunction(`%OptimizeFunctionOnNextCall(f${concurrent ? ', "concurrent"' : ''});`, (made) => {
      const probe = (x: number) => x + 1;
      probe(1);
      made(probe);
    });
    if (concurrent) concurrentOptimizer = fn;
    else optimizer = fn;
  }
  if (fn === null) return false;
  try {
    fn(f);
    return true;
  } catch {
    if (concurrent) concurrentOptimizer = null;
    else optimizer = null;
    return false;
  }
}

let neverOptimizer: ((f: unknown) => unknown) | null | undefined;

/**
 * Ask V8 never to optimize `f` (%NeverOptimizeFunction), on-stack replacement included; false when
 * this V8 cannot be asked. For warm-up-only code with a long loop: V8 compiled the planner warm-up's
 * sidecar builder on a helper thread while its loop ran, 16-43 ms of TurboFan in every traced start
 * that nothing used (aborted in 23 of 24, the loop done before it in the last), on the two cores the
 * workers warm up on, once finishing inside the first real page (docs/benchmarks.md, "same
 * (thirteenth session)").
 */
export function neverOptimize(f: (...args: never[]) => unknown): boolean {
  if (neverOptimizer === undefined) {
    // Probed on a throwaway function of its own.
    neverOptimizer = nativeFunction('%NeverOptimizeFunction(f);', (made) => made((x: number) => x + 1));
  }
  if (neverOptimizer === null) return false;
  try {
    neverOptimizer(f);
    return true;
  } catch {
    neverOptimizer = null;
    return false;
  }
}

/** Where `f` is in V8's tiers; null when this V8 cannot say. */
export function tierOf(f: (...args: never[]) => unknown): Tier | null {
  if (status === undefined) status = statusFunction();
  if (status === null) return null;
  let s: number;
  try {
    s = status(f);
  } catch {
    // Its bytecode was flushed (V8 does so for functions long unused) and compiled again without the flag.
    status = null;
    return null;
  }
  if ((s & OPTIMIZED) !== 0 && (s & MARKED_FOR_DEOPTIMIZATION) === 0) return 'optimized';
  return (s & OPTIMIZING_CONCURRENTLY) !== 0 ? 'compiling' : 'not-optimized';
}
