/**
 * Whether a local data directory holds a binary session, looked at before
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
 */
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EVENTS_SUFFIX, SESSIONS } from '../../storage/layout.js';

/** Logs looked at, at most (one open and a one-byte read each: ~0.1 ms). */
const MAX_LOGS = 256;
const MAGIC0 = 0x53; // 'S' of SPF2

/** True when some log under `dataDir` begins as a binary log; null when not found (or not looked). */
export async function holdsBinaryLog(dataDir: string): Promise<true | null> {
  let names: string[];
  try {
    names = (await readdir(join(dataDir, SESSIONS))).filter((n) => n.endsWith(EVENTS_SUFFIX));
  } catch {
    return null;
  }
  if (names.length > MAX_LOGS) return null;
  const byte = Buffer.alloc(1);
  for (const name of names) {
    try {
      const fh = await open(join(dataDir, SESSIONS, name), 'r');
      try {
        const { bytesRead } = await fh.read(byte, 0, 1, 0);
        if (bytesRead === 1 && byte[0] === MAGIC0) return true;
      } finally {
        await fh.close();
      }
    } catch {
      // Gone or unreadable: the catalog will say.
    }
  }
  return null;
}
