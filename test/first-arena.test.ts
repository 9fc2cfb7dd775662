/**
 * The first large slice's arena (workers/page-task.ts prepareFirstArena): the JIT warm-up leaves
 * each worker an arena whose read region it touched, so the first large page's slice is not read
 * into fresh memory a 4 KiB page fault at a time. It is taken by the first large slice that fits
 * (and goes out as that slice's result, as a worker's first arena does), by no small slice and no
 * slice too large for it, and the page is the same bytes either way. Its sinks are laid out for
 * the read bytes it was made for, where the warm-up touched their first parts, also for a shorter
 * slice.
 */
import { describe, expect, it } from 'vitest';
import { parseSlice } from '../src/main/page-assembler.js';
import { createPagePool } from '../src/main/worker-pool.js';
import { warmupWork } from '../src/workers/jit-warmup.js';
import { arenaBytes, prepareFirstArena, runPageTask } from '../src/workers/page-task.js';
import { type SliceResult, type SliceTask } from '../src/workers/slice-protocol.js';
import { dropWorkerArena, largeSlice as generatedSlice, sliceView as view } from './helpers/large-slices.js';

/** A generated session's large slice (helpers/large-slices.ts) as a task whose bytes are read in place. */
function largeSlice(events: number): { bytes: Buffer; task: () => SliceTask } {
  const s = generatedSlice(events);
  return { bytes: s.bytes, task: () => ({ ...s.task(), bytes: Buffer.from(s.bytes), inPlace: true }) };
}

describe('the first large slice arena', () => {
  it('is the first large slice that fits its arena, which goes out as the result with the same page', () => {
    const w = largeSlice(60_000);
    expect(w.bytes.length).toBeGreaterThan(1024 * 1024);
    dropWorkerArena();
    const fresh = runPageTask(w.task()) as ArrayBuffer;
    expect(fresh.byteLength).toBe(arenaBytes(w.bytes.length));
    const page = view(fresh);
    dropWorkerArena();
    const readBytes = 2 * w.bytes.length;
    prepareFirstArena(readBytes);
    const first = runPageTask(w.task()) as ArrayBuffer;
    expect(first.byteLength).toBe(arenaBytes(readBytes));
    expect(view(first)).toBe(page);
    // Given once: the next first large slice of a worker holding no arena gets one of its own size.
    dropWorkerArena();
    expect((runPageTask(w.task()) as ArrayBuffer).byteLength).toBe(arenaBytes(w.bytes.length));
  });

  it('is left by a small slice and by a slice larger than it, for the next large slice that fits', () => {
    const small = largeSlice(60_000);
    const big = largeSlice(120_000);
    expect(big.bytes.length).toBeGreaterThan(1.5 * small.bytes.length);
    dropWorkerArena();
    const readBytes = small.bytes.length + 4096;
    prepareFirstArena(readBytes);
    // The warm-up's synthetic log (~200 KB): its own small arena, which goes with its result.
    const tiny = warmupWork()[0] as { bytes: Buffer; tasks: SliceTask[] };
    const tinyResult = runPageTask({ ...(tiny.tasks[0] as SliceTask), bytes: Buffer.from(tiny.bytes), inPlace: true }) as ArrayBuffer;
    expect(tinyResult.byteLength).toBe(arenaBytes(tiny.bytes.length));
    const bigResult = runPageTask(big.task()) as ArrayBuffer;
    expect(bigResult.byteLength).toBe(arenaBytes(big.bytes.length));
    dropWorkerArena();
    expect((runPageTask(small.task()) as ArrayBuffer).byteLength).toBe(arenaBytes(readBytes));
  });

  it("has a shorter slice's sections written where the warm-up touched its sinks, laid out for its read bytes, with the same page", () => {
    const w = largeSlice(60_000);
    dropWorkerArena();
    const fresh = runPageTask(w.task()) as ArrayBuffer;
    // Any other arena's body sink starts right after the slice.
    expect(parseSlice(fresh).body.byteOffset).toBe(w.bytes.length);
    dropWorkerArena();
    const readBytes = 2 * w.bytes.length;
    prepareFirstArena(readBytes);
    const first = runPageTask(w.task()) as ArrayBuffer;
    expect(first.byteLength).toBe(arenaBytes(readBytes));
    // The first arena's body sink starts after its whole read region, where prepareFirstArena touched it.
    expect(parseSlice(first).body.byteOffset).toBe(readBytes);
    expect(view(first)).toBe(view(fresh));
  });

  it('is none for no bytes', () => {
    const w = largeSlice(60_000);
    dropWorkerArena();
    prepareFirstArena(0);
    expect((runPageTask(w.task()) as ArrayBuffer).byteLength).toBe(arenaBytes(w.bytes.length));
  });

  it("is left by a pool's worker at the end of its JIT warm-up for the size the pool was given, and not without one", async () => {
    const w = largeSlice(60_000);
    const readBytes = 2 * w.bytes.length;
    for (const [firstReadBytes, want] of [
      [readBytes, arenaBytes(readBytes)],
      [undefined, arenaBytes(w.bytes.length)],
    ] as const) {
      const pool = createPagePool({ threads: 1, jitWarmUp: true, jitBudgetMs: 100, binaryWarmUp: false, ...(firstReadBytes === undefined ? {} : { firstReadBytes }) });
      try {
        const t = w.task();
        const r = (await pool.run(t, { transferList: [t.bytes!.buffer as ArrayBuffer] })) as SliceResult;
        expect(r).toBeInstanceOf(ArrayBuffer);
        expect((r as ArrayBuffer).byteLength).toBe(want);
      } finally {
        await pool.close();
      }
    }
  }, 60_000);
});
