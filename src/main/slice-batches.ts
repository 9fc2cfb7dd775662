/**
 * Small slices queued behind busy workers go to the next free worker
 * together, as one message (workers/slice-protocol.ts SliceBatch). A slice
 * handed to a worker costs the process more than its decode: the task's
 * clone and post, the worker's wake-up, piscina's bookkeeping on both
 * sides, the result's post and receive, ~0.6 ms of CPU a small page against
 * its 0.3-0.4 ms decode (docs/benchmarks.md, issue 15). With many pages in
 * flight both cores are busy and pages/s is CPU per page, so the fixed part
 * is paid once per batch instead of once per slice.
 *
 * A slice goes out at once, alone, while a worker is free (a lone page waits
 * for nothing); behind busy workers it queues here, and when a worker's call
 * returns it takes its share of the queue (the queue over the workers, so
 * the other worker finds work too, at most `maxBatch` slices and
 * `maxBatchBytes` stored bytes). piscina gives each worker more than one call
 * at once (worker-pool.ts TASKS_PER_WORKER), so a worker finds its next task
 * in its port: while every worker has a call but not all their places are
 * taken, the queue is sent in shares at the end of the event loop's turn
 * (setImmediate), so the slices of the requests read in one turn go as one
 * message. Large slices and compress tasks go to the
 * pool as before (piscina queues them). The queue here counts in
 * `queueSize` and is bounded by the pool's `maxQueue`, as piscina's own
 * queue was: shedding and overload answers see the same figures.
 */
import type { BatchResult, CompressTask, SliceBatch, SliceResult, SliceTask } from '../workers/slice-protocol.js';
import type { PagePool } from './page-pool.js';

/** The piscina pool of page workers (worker-pool.ts's PagePool), which also takes batches. */
export interface BatchingPool extends Omit<PagePool, 'run' | 'options'> {
  /** piscina's: concurrentTasksPerWorker is how many calls each worker is given at once (default 1). */
  readonly options: PagePool['options'] & { readonly concurrentTasksPerWorker?: number };
  run(task: SliceTask | CompressTask | SliceBatch, opts: { transferList?: ArrayBuffer[] }): Promise<SliceResult | BatchResult>;
}

/** Stored bytes of a slice that may wait here to join a batch; larger ones go to the pool alone. */
export const BATCH_SLICE_BYTES = 256 * 1024;
/** At most this many slices, and this many stored bytes, in one batch. */
export const MAX_BATCH = 8;
export const MAX_BATCH_BYTES = 1024 * 1024;

interface Waiting {
  task: SliceTask;
  transferList: ArrayBuffer[];
  resolve: (r: SliceResult) => void;
  reject: (err: Error) => void;
}

export class SliceBatches {
  private readonly queue: Waiting[] = [];
  /** Calls on the pool not yet answered (batches count once). */
  private busy = 0;
  /** Batches sent, and the slices in them (tests, the bench). */
  batches = 0;
  batchedSlices = 0;
  /** Slices answered in batches beyond one per batch: `completed` counts tasks, as piscina's did. */
  private extraCompleted = 0;

  constructor(private readonly pool: BatchingPool) {}

  /** Calls kept on the pool at once: piscina's tasks per worker over its workers. */
  private get onWorkers(): number {
    return this.pool.options.maxThreads * (this.pool.options.concurrentTasksPerWorker ?? 1);
  }

  get options(): BatchingPool['options'] {
    return this.pool.options;
  }
  get queueSize(): number {
    return this.pool.queueSize + this.queue.length;
  }
  get utilization(): number {
    return this.pool.utilization;
  }
  get completed(): number {
    return this.pool.completed + this.extraCompleted;
  }
  get threads(): BatchingPool['threads'] {
    return this.pool.threads;
  }

  private onPool<T>(p: Promise<T>): Promise<T> {
    this.busy++;
    const done = () => {
      this.busy--;
      this.dispatch();
    };
    p.then(done, done);
    return p;
  }

  run(task: SliceTask | CompressTask, opts: { transferList?: ArrayBuffer[] }): Promise<SliceResult> {
    if ('compress' in task || task.end - task.start > BATCH_SLICE_BYTES || (this.busy < this.pool.options.maxThreads && this.queue.length === 0)) {
      return this.onPool(this.pool.run(task, opts) as Promise<SliceResult>);
    }
    if (this.queueSize >= this.pool.options.maxQueue) return Promise.reject(new Error('Task queue is at limit'));
    // Every worker has a call: a free place behind them is filled once this turn of the event
    // loop is over, with what the turn's other requests queued too (one message, not one each).
    if (this.busy < this.onWorkers) this.flushSoon();
    return new Promise<SliceResult>((resolve, reject) => {
      this.queue.push({ task, transferList: opts.transferList ?? [], resolve, reject });
    });
  }

  private flushing = false;

  private flushSoon(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      this.dispatch();
    });
  }

  /** A worker's call returned (or a free place was left behind busy workers): while there are places, send the queue in shares. */
  private dispatch(): void {
    while (this.queue.length > 0 && this.busy < this.onWorkers) {
      // Its share: the queue over all the workers, so one that frees up next finds work too.
      const share = Math.min(MAX_BATCH, Math.ceil(this.queue.length / this.pool.options.maxThreads));
      const taken: Waiting[] = [];
      let bytes = 0;
      while (taken.length < share && this.queue.length > 0) {
        const next = this.queue[0] as Waiting;
        const n = next.task.end - next.task.start;
        if (taken.length > 0 && bytes + n > MAX_BATCH_BYTES) break;
        bytes += n;
        taken.push(this.queue.shift() as Waiting);
      }
      this.send(taken);
    }
  }

  private send(taken: Waiting[]): void {
    if (taken.length === 1) {
      const w = taken[0] as Waiting;
      this.onPool(this.pool.run(w.task, w.transferList.length === 0 ? {} : { transferList: w.transferList }) as Promise<SliceResult>).then(w.resolve, w.reject);
      return;
    }
    this.batches++;
    this.batchedSlices += taken.length;
    const transferList = taken.flatMap((w) => w.transferList);
    const answer = this.pool.run({ batch: taken.map((w) => w.task) }, transferList.length === 0 ? {} : { transferList }) as Promise<BatchResult>;
    this.onPool(answer).then(
      ({ results }) => {
        this.extraCompleted += taken.length - 1;
        taken.forEach((w, i) => {
          const r = results[i];
          if (typeof r === 'string') w.reject(new Error(r));
          else if (r === undefined) w.reject(new Error('a batch answered fewer slices than it was given'));
          else w.resolve(r);
        });
      },
      (err: unknown) => taken.forEach((w) => w.reject(err as Error)),
    );
  }

  close(): Promise<void> {
    for (const w of this.queue.splice(0)) w.reject(new Error('page pool is closed'));
    return this.pool.close();
  }
}
