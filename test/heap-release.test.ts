/**
 * The serving process's heap release (src/main/heap-release.ts) against a
 * recording heap: memory given back once ready and once after each quiet
 * spell that followed requests, never while requests keep coming, never twice
 * for one spell; the serving thresholds set only where the launcher set the
 * start's, and a refused setting reported, not counted.
 */
import { describe, expect, it } from 'vitest';
import { M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, type GlibcHeap } from '../src/main/glibc-heap.js';
import { HeapRelease, SERVING_THRESHOLD, heapStats } from '../src/main/heap-release.js';

function recordingHeap(refuse: (param: number) => boolean = () => false): GlibcHeap & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    trim: () => (calls.push('trim'), true),
    mallopt: (param, value) => (calls.push(`mallopt ${param} ${value}`), !refuse(param)),
  };
}

describe('HeapRelease', () => {
  it('ready: gives the warm-up memory back first, then raises both thresholds (launcher set them)', () => {
    const heap = recordingHeap();
    const trims = heapStats.trims;
    new HeapRelease({ raiseThresholds: true }).ready(heap);
    expect(heap.calls).toEqual(['trim', `mallopt ${M_TRIM_THRESHOLD} ${SERVING_THRESHOLD}`, `mallopt ${M_MMAP_THRESHOLD} ${SERVING_THRESHOLD}`]);
    expect(heapStats.trims).toBe(trims + 1);
    expect(heapStats.mmapThreshold).toBe(SERVING_THRESHOLD);
  });

  it('ready without the launcher: trims, sets no threshold', () => {
    const heap = recordingHeap();
    new HeapRelease({ raiseThresholds: false }).ready(heap);
    expect(heap.calls).toEqual(['trim']);
  });

  it('a refused setting is reported once and the threshold not claimed', () => {
    heapStats.mmapThreshold = 0;
    const refused: string[] = [];
    const heap = recordingHeap((p) => p === M_MMAP_THRESHOLD);
    new HeapRelease({ raiseThresholds: true, onRefused: (w) => refused.push(w) }).ready(heap);
    expect(refused).toEqual([`glibc refused the serving thresholds (${SERVING_THRESHOLD} bytes)`]);
    expect(heapStats.mmapThreshold).toBe(0);
  });

  it('ticks: a quiet tick after requests trims once; busy ticks and further quiet ticks do not', () => {
    const heap = recordingHeap();
    const r = new HeapRelease({ raiseThresholds: false });
    r.ready(heap);
    heap.calls.length = 0;
    r.tick(); // quiet, nothing since ready's trim
    expect(heap.calls).toEqual([]);
    r.request();
    r.tick(); // requests in this tick
    r.request();
    r.tick(); // and in this one
    expect(heap.calls).toEqual([]);
    r.tick(); // the first quiet tick after them
    expect(heap.calls).toEqual(['trim']);
    r.tick();
    r.tick();
    expect(heap.calls).toEqual(['trim']);
    r.request();
    r.tick();
    r.tick();
    expect(heap.calls).toEqual(['trim', 'trim']);
  });

  it('before ready nothing is called, whatever the ticks', () => {
    const r = new HeapRelease({ raiseThresholds: true });
    const trims = heapStats.trims;
    r.request();
    r.tick();
    r.tick();
    expect(heapStats.trims).toBe(trims);
  });
});
