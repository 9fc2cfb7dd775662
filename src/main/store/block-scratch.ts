/**
 * Buffers for the frame index's record blocks (streams/frame-index-file.ts
 * BlockScratch), used again from plan to plan: a 5M tail page walks 8-10
 * blocks of 64 KiB, and each read into fresh memory was ~16 page faults
 * and a buffer left for the collector, every page (docs/benchmarks.md,
 * "ready, second round (fourteenth session)").
 *
 * Lifetime: a buffer is taken by one open index file, read into, walked by
 * that file's plan, and given back when the file is closed (after the plan
 * is made: the plan holds copies of the lines it keeps, never the block).
 * A buffer is in one file's hands at a time. At most `max` are kept free.
 */
import type { BlockScratch } from '../../streams/frame-index-file.js';

export class ScratchBlocks implements BlockScratch {
  private readonly free: Uint8Array[] = [];

  constructor(
    /** Bytes of each buffer: the largest block asked for. */
    readonly blockBytes: number,
    private readonly max = 32,
  ) {}

  take(bytes: number): Uint8Array | null {
    if (bytes > this.blockBytes) return null;
    // Memory of its own, aligned at 0 (the typed views over index records need 8-byte alignment).
    return this.free.pop() ?? new Uint8Array(this.blockBytes);
  }

  give(b: Uint8Array): void {
    if (b.byteLength === this.blockBytes && b.byteOffset === 0 && this.free.length < this.max && !this.free.includes(b)) this.free.push(b);
  }

  /** Buffers kept free now. */
  get size(): number {
    return this.free.length;
  }
}
