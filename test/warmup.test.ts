/**
 * The store's warm-up serves a generated session's pages through the real
 * page path before the first request, and leaves nothing behind: not in the
 * store's data directory, not in the temporary directory.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../src/main/store.js';

describe('store warm-up', () => {
  it('runs pages through the shared pool, writes nothing to the data dir and removes its session', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-data-'));
    const leftovers = () => readdirSync(tmpdir()).filter((f) => f.startsWith('session-pager-warmup-'));
    const before = new Set(leftovers());
    const store = await openStore({ dataDir, workers: 1 });
    try {
      await store.warmUp();
      // Empty slices for the pool start, then the warm-up pages' slices on the same pool.
      expect(store.stats().pool.completed).toBeGreaterThan(10);
      expect(store.stats().pagesServed).toBe(0);
      expect(await store.list()).toEqual([]);
      expect(leftovers().filter((f) => !before.has(f))).toEqual([]);
    } finally {
      await store.close();
    }
  }, 30_000);
});
