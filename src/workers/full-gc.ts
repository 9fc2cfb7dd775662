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
 * The `gc` found is kept for the thread's later collections: a Node vm
 * context is two V8 native contexts, ~140 KB of functions, maps and
 * descriptors, and one made per call was garbage as soon as the call
 * returned, the one thing a collection left behind (the 0.14-0.15 MB that
 * test/warmup.test.ts found collectable after the warm-up, up to 390 KB with
 * V8's accounting noise under load). Kept, it is made once a thread: the same
 * ~140 KB stay resident (the garbage one did too, until the old generation's
 * limit), and heap-bound.ts's collections no longer each make one.
 *
 * Freeing the garbage is not enough: its pages stay resident until their few
 * live objects are moved out (compaction). Which pages V8 compacts in an
 * ordinary full collection it decides from its measured compaction speed, a
 * wall-clock figure: a page qualifies when its free share exceeds
 * 100 - 50 / (1 + page area / speed) percent (V8 11.3's
 * MarkCompactCollector::ComputeEvacuationHeuristics). At the ~640 KB/ms a
 * free core measures, pages two thirds free just qualify (64%); on a starved
 * core a collection measured ~47 KB/ms, the bar rose to ~92% and no page
 * qualified, in every later collection too (the speed is an average of past
 * ones): the flaky 7 MB of test/full-gc.test.ts. So the second collection runs
 * with --compact-on-every-full-gc, V8's own flag (in release builds) that
 * makes a full collection compact every page it may move, whatever the speed
 * reads: it moves a warmed-up worker's whole old generation (~6.5 MB live),
 * which costs about what the speed-chosen compaction did and leaves its old
 * space ~1.5 MB smaller (docs/benchmarks.md, rel ninth session).
 * That flag is process-wide too and read when a collection starts: a
 * collection another thread runs meanwhile also compacts (correct, a few ms
 * dearer), and another thread may clear it before this one's second
 * collection starts, so the pair runs again when the old space still holds
 * more than SPARSE_BYTES it does not use.
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

/** This thread's `gc`, once found (see the comment at the top: kept, not made again each call). */
let threadGc: (() => void) | null = null;

function findGc(): (() => void) | null {
  if (threadGc !== null) return threadGc;
  for (let i = 0; i < TRIES; i++) {
    setFlagsFromString('--expose-gc');
    let gc: unknown;
    try {
      gc = runInNewContext('typeof gc === "function" ? gc : null');
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
    if (typeof gc === 'function') {
      threadGc = gc as () => void;
      return threadGc;
    }
  }
  return null;
}

/** Whether a collection ran. */
export function collectGarbage(): boolean {
  const gc = findGc();
  if (gc === null) return false;
  // Twice: the first collection frees the garbage and its sweep finds the pages it left
  // sparse (V8 picks the pages to compact when a collection starts, from what the last
  // sweep left); the second compacts: moves their live objects out and releases them.
  for (let round = 0; round < ROUNDS && (round === 0 || sparseOldSpaceBytes() > SPARSE_BYTES); round++) {
    gc();
    setFlagsFromString('--compact-on-every-full-gc');
    try {
      gc();
    } finally {
      setFlagsFromString('--no-compact-on-every-full-gc');
    }
  }
  return true;
}
