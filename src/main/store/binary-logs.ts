/**
 * Whether a store holds a binary session, looked at before
 * the page workers start (`serve`), so their JIT warm-up can decode the
 * binary logs in its rounds from the first (workers/jit-warmup.ts): told
 * only by the store's catalog, which `serve` lists after loading the app,
 * the answer came mid-way through the workers' rounds and a store with
 * binary sessions got ready ~150 ms later than when every worker warmed
 * both formats (docs/benchmarks.md, "start (ninth session)").
 *
 * A binary log begins with its header frame's magic (`SPF2`), a JSONL one
 * with `{`: the first byte of each log says it. Only a yes is an answer: a
 * log that switched to binary frames after a JSONL header is found by the
 * catalog later (store.ts decideWarmUp), and a directory with more logs
 * than MAX_LOGS, or one that cannot be read, is left to the catalog too.
 * Read through the storage seam like every other read (a ranged read of one
 * byte a log); `serve` asks it only of a local directory, where it is cheap.
 */
import type { StorageBackend } from '../../storage/backend.js';
import { EVENTS_SUFFIX, SESSIONS } from '../../storage/layout.js';

/** Logs looked at, at most (one one-byte ranged read each: ~0.1 ms locally). */
const MAX_LOGS = 256;
const MAGIC0 = 0x53; // 'S' of SPF2

/** True when some log in `storage` begins as a binary log; null when not found (or not looked). */
export async function holdsBinaryLog(storage: StorageBackend): Promise<true | null> {
  let names: string[];
  try {
    names = (await storage.list(SESSIONS)).filter((n) => n.endsWith(EVENTS_SUFFIX));
  } catch {
    return null;
  }
  if (names.length > MAX_LOGS) return null;
  for (const name of names) {
    try {
      const first = await storage.read(`${SESSIONS}/${name}`, 0, 1);
      if (first !== null && first.length === 1 && first[0] === MAGIC0) return true;
    } catch {
      // Unreadable: the catalog will say.
    }
  }
  return null;
}
