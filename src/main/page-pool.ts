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
  /** `wholePage`: the task is its page's only slice (small-slice-pool.ts takes such a slice inline up to inlineBytes()). */
  run(task: SliceTask | CompressTask, opts: { transferList?: ArrayBuffer[]; wholePage?: boolean }): Promise<SliceResult>;
  /**
   * The stored bytes up to which a page whose slices are read from `source`, asked now, would be
   * decoded on the calling thread as one slice (small-slice-pool.ts); 0 or absent: none. A page
   * that fits is not cut: cut, its slices would run one after the other on this thread (each is
   * under the per-slice bound), and cutting costs their assembly and a copy.
   */
  inlineBytes?(source: string): number;
  close(): Promise<void>;
}
