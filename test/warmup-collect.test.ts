/**
 * The warm-up's closing collection of the calling thread (warmup/warm-up.ts)
 * runs only when asked (StoreOptions.warmUp.collect: `serve`, which runs V8
 * without incremental marking). Under V8's own marking a forced one left the
 * old generation's limit so low that marking ran beside nearly every large
 * page (docs/benchmarks.md, "same (twelfth session)").
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { openStore } from '../src/main/store.js';

/** Full collections of this thread asked for through the API (`gc()`), during `run`. */
async function forcedCollections(run: () => Promise<void>): Promise<number> {
  const seen: PerformanceEntry[] = [];
  const obs = new PerformanceObserver((list) => seen.push(...list.getEntries()));
  obs.observe({ entryTypes: ['gc'] });
  try {
    await run();
    // Entries are delivered after the collection, on a later turn.
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    obs.disconnect();
  }
  return seen.filter((e) => {
    const d = (e as PerformanceEntry & { detail?: { kind: number; flags: number } }).detail;
    return d !== undefined && d.kind === constants.NODE_PERFORMANCE_GC_MAJOR && (d.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0;
  }).length;
}

describe('the warm-up ends with a collection of its thread', () => {
  for (const collect of [undefined, false, true]) {
    it(`${collect === true ? 'when asked' : `not unless asked (collect: ${String(collect)})`}`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'warmup-collect-'));
      const store = await openStore({ dataDir, workers: 1, warmUp: { jit: false, pagePath: false, ...(collect === undefined ? {} : { collect }) } });
      try {
        const n = await forcedCollections(() => store.warmUp());
        if (collect === true) expect(n).toBeGreaterThanOrEqual(1);
        else expect(n).toBe(0);
      } finally {
        await store.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    }, 60_000);
  }
});
