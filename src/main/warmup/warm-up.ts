/**
 * The store's warm-up, all of it in one place (docs/architecture.md, "Worker
 * pool"), configured by `StoreOptions.warmUp`:
 * 1. every pool thread starts and loads the page task; each runs its JIT
 *    warm-up as it starts (workers/jit-warmup.ts, on when `jit`, passed to
 *    the workers as the pool's workerData);
 * 2. meanwhile the planner warms up on this thread (planner-warmup.ts);
 * 3. when `pagePath`: a generated session's pages are served through the
 *    whole page path, by a second store over an in-memory backend borrowing
 *    the pool (page-path-warmup.ts), and the planner is warmed once more.
 */
import type { StorageBackend } from '../../storage/backend.js';
import { runSlice, type PagePool } from '../worker-pool.js';
import { sliceTask } from '../../workers/slice-protocol.js';
import { warmUpPagePath, type WarmupStore } from './page-path-warmup.js';
import { warmUpPlanner } from './planner-warmup.js';

export interface WarmUpPlan {
  pool: PagePool;
  threads: number;
  pagePath: boolean;
  /** A store over `storage` (the warm-up's in-memory one) that borrows `pool`. */
  openStore: (storage: StorageBackend) => Promise<WarmupStore>;
}

export async function warmUpStore(plan: WarmUpPlan): Promise<void> {
  const empty = sliceTask('', '', 0, 0, 0, 0, 0, 0);
  // The planner warms up on this thread while the workers start (see planner-warmup.ts).
  await Promise.all([warmUpPlanner(30, plan.pagePath), ...Array.from({ length: plan.threads * 2 }, () => runSlice(plan.pool, empty))]);
  if (!plan.pagePath) return;
  try {
    await warmUpPagePath(plan.openStore);
  } catch (err) {
    // Only an optimization: serve without it (first pages slower), but say so.
    process.emitWarning(`page-path warm-up skipped: ${(err as Error).message}`, 'SessionPagerWarning');
  }
  // Real entries generalized some of the planner's object shapes, which discarded its
  // optimized code: optimize it again, now for every shape, before the first real page.
  await warmUpPlanner();
}
