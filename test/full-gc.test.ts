/**
 * The warm-up's full collection (workers/full-gc.ts): it collects, and no
 * other code is left with a `gc` global (contexts made afterwards have none).
 */
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../src/workers/full-gc.js';

describe('collectGarbage', () => {
  it('frees what is no longer referenced, and leaves no gc function to later contexts', async () => {
    let held: object | null = { big: new Array(100_000).fill(1) };
    const ref = new WeakRef(held);
    held = null;
    // A WeakRef's target survives until the current job ends.
    await new Promise((r) => setImmediate(r));
    collectGarbage();
    expect(ref.deref()).toBeUndefined();
    expect(runInNewContext('typeof gc')).toBe('undefined');
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe(process.execArgv.includes('--expose-gc') ? 'function' : 'undefined');
  });
});
