/**
 * When the serving process gives its freed memory back to the system, and
 * how much freed memory its malloc may keep while it serves (glibc only:
 * main/glibc-heap.ts).
 *
 * The two pulled against each other. `serve`'s launcher (bin/session-pager.js)
 * fixes glibc's mmap threshold at 256 KiB, so the warm-up's and V8's compiler
 * threads' freed buffers are not kept in the heaps of an idle server (issue
 * 12's idle bound). But a fixed threshold also keeps every larger buffer out
 * of the heaps while serving: the zstd binding builds a fresh context of a few
 * MB for every page it compresses, and each was mapped, faulted in and
 * unmapped again, page after page (a typical page asked as a browser asks
 * cost ~0.55 ms more CPU than it needed). No threshold fixed at start keeps
 * both (docs/benchmarks.md, "Lead (twentieth session)").
 *
 * So the process changes the setting when it changes what it does:
 *   - ready (the warm-up done): malloc_trim gives back what the warm-up
 *     freed, then the thresholds rise to SERVING_THRESHOLD, so a page's large
 *     buffers, the zstd context among them, are reused from the heap;
 *   - quiet (a tick of `quietMs` with no new request after one with some):
 *     malloc_trim gives back what serving freed, once, and again only after
 *     the next request.
 * The thresholds rise only where the launcher set them (a threshold the user
 * set, or glibc's own dynamic one, is left as it is); the trims happen either way.
 */
import type { GlibcHeap } from './glibc-heap.js';
import { M_MMAP_THRESHOLD, M_TRIM_THRESHOLD } from './glibc-heap.js';

/** The mmap and trim thresholds while serving: above a zstd level-3 context (~3.3 MB), the largest buffer a typical page makes. */
export const SERVING_THRESHOLD = 4 * 1024 * 1024;

/** A spell without a new request this long (at least, at most twice this) gives memory back. */
export const QUIET_MS = 1000;

/** What the process did with its heap, for /metrics (process-wide: the heap is). */
export const heapStats = {
  /** malloc_trim calls (after the warm-up and after each quiet spell). */
  trims: 0,
  /** The mmap threshold this process set, bytes; 0 when it set none (glibc's own, or the launcher's for the start). */
  mmapThreshold: 0,
};

export interface HeapReleaseOptions {
  /** Raise the thresholds once ready (the launcher fixed them for the start). */
  raiseThresholds: boolean;
  /** Told once when a setting is refused (the server runs on with what it has). */
  onRefused?: (what: string) => void;
}

export class HeapRelease {
  private heap: GlibcHeap | null = null;
  private requested = false;
  private unreleased = false;

  constructor(private readonly o: HeapReleaseOptions) {}

  /** A request came (every request, from the server's 'request' event: a flag set, nothing more). */
  request(): void {
    this.requested = true;
  }

  /** The warm-up is done: what it freed goes back, then serving's thresholds (when raised) apply. */
  ready(heap: GlibcHeap): void {
    this.heap = heap;
    this.release();
    if (!this.o.raiseThresholds) return;
    if (heap.mallopt(M_TRIM_THRESHOLD, SERVING_THRESHOLD) && heap.mallopt(M_MMAP_THRESHOLD, SERVING_THRESHOLD)) heapStats.mmapThreshold = SERVING_THRESHOLD;
    else this.o.onRefused?.(`glibc refused the serving thresholds (${SERVING_THRESHOLD} bytes)`);
  }

  /** Every QUIET_MS: a tick without a new request after one with some gives memory back, once. */
  tick(): void {
    if (this.requested) {
      this.requested = false;
      this.unreleased = true;
      return;
    }
    if (this.unreleased) {
      this.unreleased = false;
      this.release();
    }
  }

  private release(): void {
    if (this.heap === null) return;
    this.heap.trim();
    heapStats.trims++;
  }
}
