/**
 * One full garbage collection of the calling thread's heap, for the end of a
 * warm-up: what the warm-up built (synthetic logs, their tasks, the decode's
 * garbage) is dead by then, but with incremental marking off (main/cli/serve-gc.ts)
 * nothing collects the old generation until it reaches its limit, so its
 * pages stayed resident in every idle process (~2.5 MB a worker).
 *
 * V8 gives a script `gc` only in a context made while `--expose-gc` is set:
 * the flag is set for the one context made here and cleared again, so no
 * other code sees a `gc` global. Costs ~10-15 ms on a warmed-up worker.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  let gc: () => void;
  try {
    gc = runInNewContext('gc') as () => void;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  gc();
}
