/**
 * A slice's checksum and row-metadata records go to its worker as one copy
 * of their own (page-service.ts withChecksums), moved, not cloned
 * (worker-pool.ts runSlice): the checksums first, the metadata after them,
 * 8-byte aligned as the worker's float64 view of it needs (an unaligned
 * metadata view is refused by the worker, which then decodes without it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type PagerStore } from '../src/main/store.js';
import { createPagePool, runSlice } from '../src/main/worker-pool.js';
import { sliceTask, type SliceTask } from '../src/workers/slice-protocol.js';
import { withoutSliceRecords } from './helpers/slice-records.js';
import { seedSession, tempStore, type TempStore } from './server-helpers.js';

describe("a slice's records", () => {
  let ts: TempStore;
  let store: PagerStore;
  beforeAll(async () => {
    ts = await tempStore(1);
    await seedSession(ts.store, 's', 3000, 100);
    await ts.store.close();
    store = await openStore({ dataDir: ts.dir, workers: 2, pageCacheBytes: 0, splitCost: 4096 });
  });
  afterAll(async () => {
    await store?.close();
    await ts?.cleanup();
  });

  it('are one buffer a slice, checksums then aligned metadata, detached once sent, and the pages are unchanged', async () => {
    const pages = (store as unknown as { pages: { onPool: (v: unknown, tasks: SliceTask[]) => Promise<unknown> } }).pages;
    const sent: { task: SliceTask; crcs: number; meta: number; buffer: number }[] = [];
    const onPool = pages.onPool.bind(pages);
    pages.onPool = (v, tasks) => {
      for (const t of tasks) sent.push({ task: t, crcs: t.crcs?.byteLength ?? -1, meta: t.meta?.byteLength ?? -1, buffer: t.crcs?.buffer.byteLength ?? -1 });
      for (const t of tasks) {
        if (t.crcs === undefined || t.meta === undefined) continue;
        expect(t.meta.buffer).toBe(t.crcs.buffer);
        expect(t.crcs.byteOffset).toBe(0);
        expect(t.meta.byteOffset).toBe(t.crcs.byteLength);
        expect(t.meta.byteOffset % 8).toBe(0);
      }
      return onPool(v, tasks);
    };
    const params = [{ maxMessages: 200 }, { throughSeq: 2999, beforeSeq: 1700, maxMessages: 400 }, { throughSeq: 1500, maxMessages: 40 }];
    const bodies = [];
    for (const p of params) bodies.push((await store.pageBuffer('s', p)).body.toString());
    pages.onPool = onPool;
    const withMeta = sent.filter((s) => s.meta > 0);
    expect(withMeta.length).toBeGreaterThan(params.length); // pages of more than one slice too
    for (const s of withMeta) {
      expect(s.buffer).toBe(s.crcs + s.meta);
      // Moved to the worker: the main thread's views are detached.
      expect(s.task.crcs?.byteLength).toBe(0);
      expect(s.task.meta?.byteLength).toBe(0);
    }
    // The same pages from a store whose slices carry no records at all (nothing to trust, nothing skipped).
    const plain = await openStore({ dataDir: ts.dir, workers: 2, pageCacheBytes: 0, splitCost: 4096 });
    try {
      withoutSliceRecords(plain);
      for (const [i, p] of params.entries()) expect((await plain.pageBuffer('s', p)).body.toString()).toBe(bodies[i]);
    } finally {
      await plain.close();
    }
  });

  it('are moved only when they are a buffer of their own: views on a larger buffer are cloned', async () => {
    const pool = createPagePool({ threads: 1, jitWarmUp: false });
    try {
      const own = new Uint8Array(16 + 40);
      const paired = sliceTask('', '', 0, 0, 0, 0, 0, 0);
      paired.crcs = own.subarray(0, 16);
      paired.meta = own.subarray(16);
      await runSlice(pool, paired);
      expect(own.buffer.byteLength).toBe(0);
      // A view on part of a buffer (a projection file's read, say): moving it would take the whole buffer.
      const shared = new Uint8Array(4096);
      const viewed = sliceTask('', '', 0, 0, 0, 0, 0, 0);
      viewed.crcs = shared.subarray(16, 32);
      viewed.meta = shared.subarray(32, 72);
      await runSlice(pool, viewed);
      expect(shared.byteLength).toBe(4096);
    } finally {
      await pool.close();
    }
  });
});
