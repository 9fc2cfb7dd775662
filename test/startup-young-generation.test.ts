/**
 * A `serve` process's main thread keeps its young generation at its initial
 * size through start-up and warm-up (main/young-generation.ts). Each page
 * worker's new isolate resets V8's growth factor until the pool hears the
 * thread is online; `serve` starts its workers first and waits for that
 * before it loads the app, so the app's loading (the start-up's busiest
 * stretch of this thread) runs with the hold in force. Before, it did not:
 * the main thread's semi-spaces doubled twice in that gap and stayed so
 * (8 MB of young generation, ~6 MB more resident while idle).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { resolve } from 'node:path';
import { startServerProcess, type ServerProcess } from './helpers/serve-process.js';
import { rawRequest, until } from './server-helpers.js';

const PROBE = resolve(import.meta.dirname, 'helpers', 'young-generation-probe.mjs');
let server: ServerProcess | null = null;

afterAll(async () => {
  await server?.stop();
});

describe('serve start-up', () => {
  it("leaves the main thread's young generation at (about) its initial size once warmed up", async () => {
    server = await startServerProcess({ workers: 2, env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${PROBE}`.trim() } });
    const s = server;
    await until('ready', async () => (await rawRequest(`${s.url}/readyz`)).status === 200, 60_000, 50);
    s.child.kill('SIGUSR2');
    await until('probe line', async () => /young-generation initial=\d+ now=\d+/.test(s.output()), 10_000, 20);
    const [, initial, now] = /young-generation initial=(\d+) now=(\d+)/.exec(s.output())!;
    // One doubling may come before serve sets its hold (node's own start and the CLI's loading);
    // without the hold over the app's loading it was 8x (2 MB of capacity here, 8 MB before).
    expect(Number(now)).toBeLessThanOrEqual(2 * Number(initial));
  }, 90_000);
});
