/**
 * The store's warm-up, all of it in one place (docs/architecture.md, "Worker
 * pool"), configured by `StoreOptions.warmUp`:
 * 1. every pool thread starts and loads the page task; each runs its JIT
 *    warm-up as it starts (workers/jit-warmup.ts, on when `jit`, passed to
 *    the workers as the pool's workerData);
 * 2. meanwhile, when `pagePath`, the page-path session is loaded into an
 *    in-memory backend on this thread (without it, the planner warms up
 *    here: planner-warmup.ts);
 * 3. when `pagePath`: that session's pages are served through the whole
 *    page path, by a second store over that backend borrowing the pool
 *    (page-path-warmup.ts), then three once more from the build's
 *    read-only copy of the session through the local backend, and then the
 *    planner is warmed up.
 * All the while this thread's young generation is kept from growing
 * (young-generation.ts).
 */
import type { StorageBackend } from '../../storage/backend.js';
import { runSlice, type PagePool } from '../worker-pool.js';
import { sliceTask } from '../../workers/slice-protocol.js';
import { preparePagePath, warmUpInlineDecoder, warmUpLocalPages, warmUpPagePath, type InlineDecoder, type WarmupStore } from './page-path-warmup.js';
import { holdYoungGeneration, releaseYoungGeneration } from '../young-generation.js';
import { detachOnce, warmUpPlanner } from './planner-warmup.js';
import { collectGarbage } from '../../workers/full-gc.js';

export interface WarmUpPlan {
  pool: PagePool;
  threads: number;
  pagePath: boolean;
  /** A store over `storage` (the warm-up's in-memory one) that borrows `pool`. */
  openStore: (storage: StorageBackend) => Promise<WarmupStore>;
  /**
   * The main thread's decoder for small slices, warmed while this thread waits for the workers
   * (page-path-warmup.ts warmUpInlineDecoder): `open` gives a store over a backend that decodes
   * on this thread.
   */
  inline?: { open: (storage: StorageBackend) => Promise<WarmupStore>; decoder: InlineDecoder; progress: { pages: number; helpersAsked?: boolean } };
  /** End with a full collection of this thread's heap (StoreOptions.warmUp.collect says when). */
  collect: boolean;
  /** Run last, before the closing collection (the main thread's small-slice decoder is loaded here: its loading's garbage is collected too). */
  finish?: () => Promise<void>;
  /**
   * Page-body memory touched at the very end and kept for the first large page
   * (StoreOptions.warmUp.bodyBytes; store/body-pool.ts prepare): `prepare(bytes)`.
   */
  bodies?: { bytes: number; prepare: (bytes: number) => void };
}

export async function warmUpStore(plan: WarmUpPlan): Promise<void> {
  // Before anything here compiles on this thread, whatever loads or runs first (planner-warmup.ts detachOnce).
  detachOnce();
  holdYoungGeneration();
  try {
    await warmUp(plan);
    await plan.finish?.();
    // The first large page's body memory, faulted in here rather than in that page's assembly
    // (~1,150 faults, ~1.5 ms of this thread, for a 5M tail page). Last, so nothing of the warm-up
    // takes it, and before the closing collection, which then counts it as this heap's external
    // memory at rest instead of as new memory on the first pages.
    if (plan.bodies !== undefined && plan.bodies.bytes > 0) plan.bodies.prepare(plan.bodies.bytes);
    // What the warm-up built on this thread (the page-path session's store, its results'
    // buffers) is garbage now; with incremental marking off (cli/serve-gc.ts) nothing would
    // collect it before the old generation's limit, so it stayed resident while idle.
    // (Under the hold: a collection may grow the young generation too.) Under V8's own marking
    // it is left to V8 (options.ts WarmUpOptions.collect says why).
    if (plan.collect) collectGarbage();
  } finally {
    releaseYoungGeneration();
  }
}

async function warmUp(plan: WarmUpPlan): Promise<void> {
  const empty = sliceTask('', '', 0, 0, 0, 0, 0, 0);
  // While the workers start (each runs its JIT warm-up as it loads the page task), this
  // thread loads the page-path session: nothing here waits for a worker until its pages are asked.
  // (Both settle into values at once: a rejection waiting for its await would be unhandled.)
  const threads = Promise.all(Array.from({ length: plan.threads * 2 }, () => runSlice(plan.pool, empty))).then(
    () => null,
    (err: unknown) => ({ err }),
  );
  const prepared = plan.pagePath ? preparePagePath().then((storage) => ({ storage }), (err: unknown) => ({ err })) : null;
  // Without the page path, the planner's one pass now; with it, after its pages (below). (A
  // first pass here was thrown away: the page path's real entries discarded its code, and its
  // rounds, waiting for compiles queued behind the workers' on the helper threads, were
  // 80-300 ms of this thread on the path to ready; docs/benchmarks.md, "ready (tenth session)".)
  if (!plan.pagePath) await warmUpPlanner(30);
  // While the workers warm up and then serve the page-path pages, this thread's own decoder for
  // small slices (it mostly waits for them meanwhile; it stops at the page where they are done).
  let waiting = true;
  const inline =
    plan.pagePath && plan.inline !== undefined
      ? warmUpInlineDecoder(plan.inline.open, plan.inline.decoder, () => waiting, plan.inline.progress).catch((err: unknown) => {
          process.emitWarning(`inline decoder warm-up skipped: ${(err as Error).message}`, 'SessionPagerWarning');
          return false;
        })
      : null;
  // Workers that cannot start fail the warm-up (serve then stops and says why).
  const started = await threads;
  if (started !== null || prepared === null) {
    waiting = false;
    await inline;
    if (started !== null) throw started.err;
    return;
  }
  const session = await prepared;
  try {
    if ('err' in session) throw session.err;
    await warmUpPagePath(plan.openStore, session.storage);
    waiting = false;
    // And the local backend's code, read only from the build's copy of the session.
    await warmUpLocalPages(plan.openStore);
  } catch (err) {
    // Only an optimization: serve without it (first pages slower), but say so.
    process.emitWarning(`page-path warm-up skipped: ${(err as Error).message}`, 'SessionPagerWarning');
  } finally {
    waiting = false;
  }
  await inline;
  // After the real entries, which generalized some of the planner's object shapes (code
  // optimized before them was discarded): optimized now for every shape, before the first
  // real page. planPage only (planner-warmup.ts WATCHED_AGAIN).
  await warmUpPlanner(30, false, undefined, true);
}
