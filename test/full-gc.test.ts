/**
 * The warm-up's full collection (workers/full-gc.ts): it collects, leaves no
 * `gc` global to contexts made afterwards, and never throws when threads
 * run it at once (the flag it sets is process-wide: every page worker runs
 * it at the end of its JIT warm-up, at about the same time).
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../src/workers/full-gc.js';

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../dist');

describe('collectGarbage', () => {
  it('frees what is no longer referenced, and leaves no gc function to later contexts', async () => {
    let held: object | null = { big: new Array(100_000).fill(1) };
    const ref = new WeakRef(held);
    held = null;
    // A WeakRef's target survives until the current job ends.
    await new Promise((r) => setImmediate(r));
    expect(collectGarbage()).toBe(true);
    expect(ref.deref()).toBeUndefined();
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });

  it('never throws when several threads collect at once', async () => {
    expect(existsSync(`${dist}/workers/full-gc.js`), 'dist/ is built by `npm test` (tsc) before the tests run').toBe(true);
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData).then(({ collectGarbage }) => {
        let ran = 0;
        for (let i = 0; i < 40; i++) if (collectGarbage()) ran++;
        parentPort.postMessage(ran);
      }, (err) => parentPort.postMessage(String(err)));`;
    const runs = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<unknown>((res, rej) => {
            const w = new Worker(code, { eval: true, workerData: `${dist}/workers/full-gc.js` });
            w.once('message', (m) => {
              res(m);
              void w.terminate();
            });
            w.once('error', rej);
          }),
      ),
    );
    for (const ran of runs) expect(typeof ran).toBe('number');
    expect(runInNewContext('typeof gc')).toBe('undefined');
  }, 60_000);
});
