/**
 * A page pool that decodes small slices on the calling thread and hands
 * the others to the worker pool it wraps. Handing a slice to a worker costs
 * the main thread a post, a wake-up and a receive (piscina, ~0.3 ms of its
 * time per task on this 2-core machine, plus the worker's scheduling delay),
 * which for a slice of tens of KB is more than decoding it here. Only slices
 * whose bytes the calling thread reads from local files (or that came with
 * the task), only while no task is on the workers, and only while the page
 * is alone (`alone`: the store's answer, no other page in flight and at most
 * one client connected) go inline: under concurrent load the main thread is
 * the busiest thread, and the workers are what keeps the decodes off it.
 * "No task on the workers" alone did not see that load: at 256 connections
 * every page decoded inline found the workers idle, so the server ran on one
 * thread and the backlog built up on the event loop, where admission never
 * saw a queue (docs/benchmarks.md, docs/decisions.md). Compress tasks stay
 * on the workers. The same task code runs either way
 * (workers/page-task.ts), so the bytes are the same.
 *
 * Nothing goes inline until `prepare` has loaded the decoder, which the
 * store's warm-up does after the page path's (store.ts warmUp), before the
 * server listens: no request pays for loading it on the event loop, where a
 * stall is every request's. With the option on, the corruption suite (its
 * warm-ups off, the decoder loaded on a request and run cold, a loaded
 * machine) once saw event-loop-lag 503s (docs/benchmarks.md). A store whose
 * page path is not warmed up keeps every slice on the workers. The first
 * few slices here run unoptimized: 2-14 ms a page, as the workers' first
 * ones without the page-path warm-up.
 */
import type { CompressTask, SliceResult, SliceTask } from '../workers/slice-protocol.js';
import type { PagePool } from './page-pool.js';

type RunTask = (task: SliceTask | CompressTask) => SliceResult;

export class SmallSlicePool implements PagePool {
  /** The decoder, once `prepare` loaded it: slices go inline from then on. */
  private task: RunTask | null = null;
  /** Slices decoded on this thread. */
  inline = 0;

  constructor(
    private readonly pool: PagePool,
    /** Slices of at most this many stored bytes are decoded here. */
    private readonly maxInlineBytes: number,
    /** Whether the page asking is the only work in sight (see above); asked per slice. */
    private readonly alone: () => boolean = () => true,
  ) {}

  get options(): PagePool['options'] {
    return this.pool.options;
  }
  get queueSize(): number {
    return this.pool.queueSize;
  }
  get utilization(): number {
    return this.pool.utilization;
  }
  get completed(): number {
    return this.pool.completed;
  }
  get threads(): PagePool['threads'] {
    return this.pool.threads;
  }

  /** Tasks handed to the workers and not yet answered. */
  private outstanding = 0;

  private onPool(task: SliceTask | CompressTask, opts: { transferList?: ArrayBuffer[] }): Promise<SliceResult> {
    this.outstanding++;
    const done = () => void this.outstanding--;
    const p = this.pool.run(task, opts);
    p.then(done, done);
    return p;
  }

  /** Load the decoder on this thread: small slices are decoded here from now on (see above). */
  async prepare(): Promise<void> {
    this.task ??= (await import('../workers/page-task.js')).runPageTask;
  }

  run(task: SliceTask | CompressTask, opts: { transferList?: ArrayBuffer[]; wholePage?: boolean }): Promise<SliceResult> {
    // A page's only slice may be as large as the slices of a lone page cut for the workers would be
    // together: those would all be decoded here too, one after the other (inlineBytes).
    const max = opts.wholePage === true ? this.wholePageBytes : this.maxInlineBytes;
    const poolOpts = opts.transferList === undefined ? {} : { transferList: opts.transferList };
    // Only while the workers are idle: under concurrent load the main thread is what limits
    // throughput, and a decode here would take its time from the other requests.
    if (this.task === null || this.outstanding > 0 || 'compress' in task || task.end - task.start > max || !(task.bytes !== undefined || task.source.startsWith('file:')) || !this.alone()) return this.onPool(task, poolOpts);
    try {
      const r = this.task(task);
      this.inline++;
      return Promise.resolve(r);
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  /** What a lone page's slices cut for the workers (one per thread, each under maxInlineBytes) would put on this thread at most. */
  private get wholePageBytes(): number {
    return this.maxInlineBytes * this.pool.options.maxThreads;
  }

  /** The largest page run() would now take inline as one slice read from `source` (PagePool.inlineBytes). */
  inlineBytes(source: string): number {
    return this.task !== null && this.outstanding === 0 && source.startsWith('file:') && this.alone() ? this.wholePageBytes : 0;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
