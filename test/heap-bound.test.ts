/**
 * A page worker's heap stays bounded under sustained load (workers/heap-bound.ts): with
 * incremental marking off, as `serve` runs, nothing else collected a worker's old generation
 * below V8's limits of ~GBs, and each task left KBs in it (one worker 8 -> 167 MB over 26,000
 * tasks, the server's RSS +20 MB per 5 s overload run: issue 15). And the collections that bound
 * it keep the worker's optimized decode loop: a collection that discards it leaves the next pages
 * to run unoptimized while V8 compiles it again (a heap bound by resourceLimits did that).
 * A real piscina worker with its JIT warm-up, in a child process with the flag `serve` sets.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, '../dist');
const MB = 1024 * 1024;

interface Heap {
  oldUsed: number;
  collections: number;
  tiersAfterCollection: string[];
  tier: string | null;
}

describe("a page worker's heap under sustained load", () => {
  it('stays within tens of MB of its start over thousands of tasks, and its decode loop stays optimized across the collections', () => {
    expect(existsSync(`${dist}/workers/page-task.js`), 'dist/ is built by `npm test` (tsc) before the tests run').toBe(true);
    // 3,000 of the warm-up's tasks at least, on until the bound has collected (heap-bound-probe.mjs): the
    // page path's garbage a task has shrunk (numbers and record heads written as bytes: one collection
    // of the bound in 3,000-12,000 tasks, where it was two or three in 3,000), so one collection is asked.
    const out = execFileSync(process.execPath, ['--no-incremental-marking', resolve(here, 'helpers/heap-bound-probe.mjs'), dist, '3000'], { encoding: 'utf8' });
    const r = JSON.parse(out) as { start: Heap; end: Heap; highest: number };
    // Precondition: the warm-up optimized the loop.
    expect(r.start.tier).toBe('optimized');
    // 24 MB of growth starts a collection (checked every 16 tasks); the rest is margin for the young generation.
    expect((r.highest - r.start.oldUsed) / MB).toBeLessThan(32);
    expect(r.end.collections).toBeGreaterThanOrEqual(1);
    expect(r.end.tiersAfterCollection).toEqual(Array<string>(r.end.collections).fill('optimized'));
    expect(r.end.tier).toBe('optimized');
  }, 180_000);
});
