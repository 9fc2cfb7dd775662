/**
 * A page pool without threads: slices are decoded on the calling thread,
 * one after the other, by the same task code the workers run
 * (workers/page-task.ts). For one-shot commands (`session-pager page`): a
 * process that builds one page and exits pays a worker's start (its own
 * isolate, Node's bootstrap, the decoder's modules loaded again) for every
 * thread, which costs more than the parallel decode saves
 * (docs/benchmarks.md, "Start-up"). A serving process keeps its workers.
 *
 * The decoder's modules are loaded on the first task, so a process that
 * opens a store and asks no page does not load them.
 */
import type { CompressTask, SliceResult, SliceTask } from '../workers/slice-protocol.js';
import type { PagePool } from './page-pool.js';

type RunTask = (task: SliceTask | CompressTask) => SliceResult;

export class InlinePool implements PagePool {
  /** One "thread": a page is cut into one slice (slices are cut per thread). */
  readonly options = { maxThreads: 1, maxQueue: Number.MAX_SAFE_INTEGER };
  readonly queueSize = 0;
  readonly threads: readonly { readonly threadId: number }[] = [];
  completed = 0;
  private busyMs = 0;
  private readonly since = performance.now();
  private task: Promise<RunTask> | null = null;
  private closed = false;

  get utilization(): number {
    return this.busyMs / Math.max(1, performance.now() - this.since);
  }

  async run(task: SliceTask | CompressTask): Promise<SliceResult> {
    if (this.closed) throw new Error('page pool is closed');
    this.task ??= import('../workers/page-task.js').then((m) => m.runPageTask);
    const run = await this.task;
    const t0 = performance.now();
    try {
      return run(task);
    } finally {
      this.busyMs += performance.now() - t0;
      this.completed++;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
