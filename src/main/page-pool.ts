/**
 * The pool seam between the store and whoever decodes its slices; its own
 * file so the pool's parts (slice-batches.ts, inline-pool.ts) name it
 * without importing worker-pool.ts, which imports them.
 */
import type { CompressTask, SliceResult, SliceTask } from '../workers/slice-protocol.js';

/**
 * What the store needs of a pool: a piscina pool of page workers, or the
 * in-thread one of a one-shot command (inline-pool.ts), which decodes on
 * the calling thread because starting a worker costs more than it saves
 * on one page.
 */
export interface PagePool {
  readonly options: { readonly maxThreads: number; readonly maxQueue: number };
  readonly queueSize: number;
  readonly utilization: number;
  readonly completed: number;
  readonly threads: readonly { readonly threadId: number }[];
  run(task: SliceTask | CompressTask, opts: { transferList?: ArrayBuffer[] }): Promise<SliceResult>;
  close(): Promise<void>;
}
