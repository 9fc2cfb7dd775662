/**
 * One full garbage collection of the calling thread's heap, for the end of a
 * warm-up: what the warm-up built (synthetic logs, their tasks, the decode's
 * garbage) is dead by then, but with incremental marking off (main/cli/serve-gc.ts)
 * nothing collects the old generation until it reaches its limit, so its
 * pages stayed resident in every idle process (~2.5 MB a worker).
 *
 * V8 gives a script `gc` only in a context made while `--expose-gc` is set:
 * the flag is set for the one context made here and cleared again, so no
 * other code sees a `gc` global. The flag is process-wide and the workers
 * warm up at once: another thread may clear it between this one's setting
 * it and making its context, so a context without `gc` is tried again, and
 * after a few tries the collection is skipped (it is only an optimization;
 * it must never fail a worker's start). Costs ~10-15 ms on a warmed-up worker.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const TRIES = 8;
const ROUNDS = 2;
const SPARSE_BYTES = 2 * 1024 * 1024;

/** Bytes of the old space that are resident but hold no object. */
function sparseOldSpaceBytes(): number {
  const old = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
  return old === undefined ? 0 : old.physical_space_size - old.space_used_size;
}

/** Whether a collection ran. */
export function collectGarbage(): boolean {
  for (let i = 0; i < TRIES; i++) {
    setFlagsFromString('--expose-gc');
    let gc: unknown;
    try {
      gc = runInNewContext('typeof gc === "function" ? gc : null');
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
    if (typeof gc === 'function') {
      // Twice: the first collection's sweep finds the pages the warm-up left sparse, and
      // the second (V8 compacts pages it knows are fragmented) moves their few live
      // objects out and releases them: a worker's old space 10.3 -> ~7 MB resident.
      // On a loaded machine the second at times compacts nothing (about 1 in 12 with both
      // cores busy), so the pair runs again while the old space still holds more than
      // SPARSE_BYTES it does not use: once more at most (a warmed-up worker keeps ~1.5-3 MB of
      // such space that no further collection releases, so more rounds would only cost time).
      for (let round = 0; round < ROUNDS && (round === 0 || sparseOldSpaceBytes() > SPARSE_BYTES); round++) {
        (gc as () => void)();
        (gc as () => void)();
      }
      return true;
    }
  }
  return false;
}
