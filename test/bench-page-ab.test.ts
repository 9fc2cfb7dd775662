/**
 * bench/page-ab.mjs's arguments: a figure asked no runs of (--typical-runs 0
 * to time the tail page alone, --runs 0 for the typical page alone) is left
 * out of the table, not a crash on the median of nothing after the whole
 * measurement; a count that is not a whole number is refused before any.
 * Both counts 0 here, so nothing is measured.
 */
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const run = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bench', 'page-ab.mjs'), '--a', ROOT, '--b', ROOT, ...args], { encoding: 'utf8' });

describe('bench/page-ab.mjs', () => {
  it('prints the table without the figures asked no runs of', () => {
    const r = run('--runs', '0', '--typical-runs', '0');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^A = .*; 0 alternating fresh processes per build for the tail page, 0 for typical pages;/);
    expect(r.stdout).toContain('| figure | A median ms | B median ms |');
    expect(r.stdout).not.toMatch(/tail page, cold|typical page p50|Cold runs/);
  });

  it('refuses a count that is not a whole number', () => {
    const r = run('--runs', '0', '--typical-runs', '1.5');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/--typical-runs must be a whole number >= 0, got 1\.5/);
  });
});

/**
 * bench/child.mjs measures the build its `dist` option names (page-ab runs
 * one child script for both builds, so A and B are measured by the same
 * code): a dist that does not exist fails by that path, not this checkout's.
 */
describe('bench/child.mjs', () => {
  it("measures the dist it is given, not its own checkout's", () => {
    const nowhere = join(ROOT, 'no-such-build', 'dist');
    const r = spawnSync(process.execPath, [join(ROOT, 'bench', 'child.mjs'), 'pager', join(tmpdir(), 'no-such-data'), 'x', '{}', JSON.stringify({ workers: 1, dist: nowhere })], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(join(nowhere, 'main', 'store.js'));
  });
});
