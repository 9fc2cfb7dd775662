/**
 * A page worker gives back the memory of the pieces it compressed in zstd (workers/loop-turn.ts).
 * The binding's output is freed by a finalizer that Node runs on the worker's event loop, and a
 * piscina worker never turned its loop between tasks: every coded piece stayed allocated, and a
 * server's RSS grew with every browser (zstd) page it served. A real pool in a child process (its
 * RSS is the measure), 320 compress tasks of 1 MiB of incompressible bytes: 328 MiB of output.
 * Measured: the process grew 113 MB with the turns (what the two threads' collectors had not yet
 * reached), 493 MB without them.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, '../dist');

describe("a page worker's zstd output", () => {
  it('is given back as the worker goes on: the process grows by less than the output, not by more', () => {
    expect(existsSync(`${dist}/workers/loop-turn.js`), 'dist/ is built by `npm test` (tsc) before the tests run').toBe(true);
    const out = execFileSync(process.execPath, [resolve(here, 'helpers/loop-turn-probe.mjs'), dist, '320'], { encoding: 'utf8' });
    const r = JSON.parse(out) as { warm: number; end: number; codedMB: number };
    // Precondition: the output was as large as asked (incompressible bytes).
    expect(r.codedMB).toBeGreaterThan(320);
    // Without the turns every piece stayed resident (1.5x the output: the binding's buffers grow
    // by doubling); with them what is held is what awaits a collection or a turn.
    expect(r.end - r.warm).toBeLessThan(0.75 * r.codedMB);
  }, 120_000);
});
