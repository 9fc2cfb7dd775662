/**
 * The store's warm-up serves a generated session's pages through the real
 * page path before the first request, and leaves nothing behind: not in the
 * store's data directory, not in the temporary directory.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
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
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  it('a warm-up that cannot run is a warning, not a failure to start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'warmup-data-'));
    const store = await openStore({ dataDir, workers: 1 });
    const saved = process.env.TMPDIR;
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    // No temporary directory to write the warm-up session in.
    process.env.TMPDIR = join(dataDir, 'missing', 'dir');
    try {
      await store.warmUp();
      await new Promise((r) => setImmediate(r));
      expect(warnings.some((m) => m.startsWith('page-path warm-up skipped: ') && m.includes('ENOENT'))).toBe(true);
      // And the store serves as usual.
      expect(await store.list()).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      process.off('warning', onWarning);
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});
