/**
 * A large slice's result (workers/page-task.ts): on a worker's first large
 * task it is the worker's new arena itself (moving it costs nothing); after
 * that, its sections are copied into a buffer of their size that the main
 * thread hands back to be used again, and the worker keeps its arena. The
 * main thread then takes in the result's bytes, not the arena's reserve
 * (~3.6x the slice's bytes), which V8 counted as external memory and which
 * paced the main thread's full collections (docs/benchmarks.md, issue 13).
 * Every form pages the same bytes.
 */
import { describe, expect, it } from 'vitest';
import { warmupWork } from '../src/workers/jit-warmup.js';
import { runPageTask } from '../src/workers/page-task.js';
import type { SliceTask } from '../src/workers/slice-protocol.js';
import { dropWorkerArena, largeSlice, sliceView as view } from './helpers/large-slices.js';

describe('large slice results', () => {
  it('are the new arena on a first large task, then copies sized to their sections in the buffer handed back', () => {
    const w = largeSlice();
    expect(w.bytes.length).toBeGreaterThan(1024 * 1024);
    const task = (arena?: ArrayBuffer): SliceTask => {
      const t = { ...w.task(), bytes: Buffer.from(w.bytes), inPlace: true };
      if (arena !== undefined) t.arena = arena;
      return t;
    };
    const first = runPageTask(task()) as ArrayBuffer;
    expect(first, JSON.stringify(first)).toBeInstanceOf(ArrayBuffer);
    // The arena itself: the slice's bytes and every sink's reserved region.
    expect(first.byteLength).toBeGreaterThan(3 * w.bytes.length);
    const page = view(first);
    // Handed back: the worker's arena again, and this result a copy sized to its sections (a quarter more room).
    const second = runPageTask(task(first)) as ArrayBuffer;
    expect(second.byteLength).toBeLessThan(2 * w.bytes.length);
    expect(view(second)).toBe(page);
    const secondPage = view(second);
    // Handed back in turn: the next result is written into that very buffer.
    const third = runPageTask(task(second)) as ArrayBuffer;
    expect(third).toBe(second);
    expect(view(third)).toBe(secondPage);
    // A buffer handed back that is too small for the result: a fresh one, the same page.
    const fourth = runPageTask(task(new ArrayBuffer(64))) as ArrayBuffer;
    expect(fourth.byteLength).toBeGreaterThanOrEqual(third.byteLength - 1024);
    expect(view(fourth)).toBe(page);
  });

  it("stay copies sized to their sections when the arena grows for a larger slice, and never take another worker's arena along", () => {
    // Moved in and out of the main thread each page, arenas (~3.6x a slice's bytes) are what V8
    // counts against the old generation's limit there: two 12 MB ones started marking beside
    // nearly every 5M tail page (docs/benchmarks.md, "same (twelfth session)").
    const small = largeSlice(60_000);
    const big = largeSlice(120_000);
    expect(big.bytes.length).toBeGreaterThan(1.5 * small.bytes.length);
    const task = (w: typeof small, arena?: ArrayBuffer): SliceTask => {
      const t = { ...w.task(), bytes: Buffer.from(w.bytes), inPlace: true };
      if (arena !== undefined) t.arena = arena;
      return t;
    };
    dropWorkerArena();
    const first = runPageTask(task(small)) as ArrayBuffer;
    expect(first.byteLength).toBeGreaterThan(3 * small.bytes.length);
    const smallPage = view(first);
    // The arena handed back is too small for the larger slice: it grows, and stays here.
    const grown = runPageTask(task(big, first)) as ArrayBuffer;
    expect(grown.byteLength).toBeLessThan(2 * big.bytes.length);
    const bigPage = view(grown);
    expect(view(runPageTask(task(big)) as ArrayBuffer)).toBe(bigPage);
    // Another worker's arena handed back (smaller than this one's, ~3.6x the slice): not used
    // for results, which stay the size of their sections.
    const other = new ArrayBuffer(3.6 * small.bytes.length);
    const next = runPageTask(task(small, other)) as ArrayBuffer;
    expect(next).not.toBe(other);
    expect(next.byteLength).toBeLessThan(2 * small.bytes.length);
    expect(view(next)).toBe(smallPage);
  });

  it('below a megabyte stay the arena itself, so a worker idle after small pages (the page-path warm-up) holds none', () => {
    // The JIT warm-up's synthetic log: ~200 KB of frames.
    const w = warmupWork()[0] as { bytes: Buffer; tasks: SliceTask[] };
    const task = (arena?: ArrayBuffer): SliceTask => {
      const t = { ...(w.tasks[0] as SliceTask), bytes: Buffer.from(w.bytes), inPlace: true };
      if (arena !== undefined) t.arena = arena;
      return t;
    };
    const first = runPageTask(task()) as ArrayBuffer;
    expect(first).toBeInstanceOf(ArrayBuffer);
    const second = runPageTask(task(first)) as ArrayBuffer;
    expect(second.byteLength).toBeGreaterThan(3 * w.bytes.length);
  });
});
