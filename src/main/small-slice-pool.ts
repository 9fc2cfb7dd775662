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
import { copyRecordsInto, type CompressTask, type SliceResult, type SliceTask } from '../workers/slice-protocol.js';
import type { PagePool } from './page-pool.js';
import type { Tier } from '../workers/optimization-status.js';

type RunTask = (task: SliceTask | CompressTask) => SliceResult;

/** Small slices sent to the workers while this thread's decoder is not yet optimized, at most (decodeHere). */
const MAX_DEFERRED = 32;

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
    /** V8's answer for this thread's decode loop (tests give their own; default: page-task.ts decoderTier, once prepared). */
    private readonly tierOf: (() => Tier | null) | null = null,
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
    if (!('compress' in task)) opts = ownRecords(task, opts);
    this.outstanding++;
    const done = () => void this.outstanding--;
    const p = this.pool.run(task, opts);
    p.then(done, done);
    return p;
  }

  /** V8's answer for this thread's decode loop (page-task.ts decoderTier), once loaded. */
  private tier: () => Tier | null = () => null;

  /** Load the decoder on this thread: small slices are decoded here from now on (see above), once it runs optimized. */
  async prepare(): Promise<void> {
    const m = await import('../workers/page-task.js');
    this.task ??= m.runPageTask;
    this.tier = this.tierOf ?? m.decoderTier;
  }

  /**
   * Whether this thread's decode loop runs optimized code (or V8 cannot say). Until it does, a
   * small slice goes to the workers, whose loop the warm-up optimized: decoded here cold, the
   * typical pages asked right at ready took ~3x a settled one's time (docs/benchmarks.md, "ready,
   * second round (tenth session)"); on a worker, ~1.5-2x. The store's warm-up warms this one up
   * (warmup/page-path-warmup.ts warmUpInlineDecoder), before ready and after it while idle.
   */
  get decoderWarm(): boolean {
    const t = this.tier();
    return t === null || t === 'optimized';
  }

  /** Whether small slices may be decoded here: see `decoderWarm`, and MAX_DEFERRED; from the start unless `awaitWarmDecoder` is called. */
  private warmed = true;
  private deferred = 0;

  /**
   * Once optimized, small slices stay here even if the loop deoptimizes on a real page (V8 then
   * compiles it again from the real pages, with their feedback added, as it did before this
   * gate). And after MAX_DEFERRED slices sent to the workers without the warm-up having found the
   * idle time to optimize it (a client asking page after page from ready on), they come here
   * anyway: a settled page decoded here is ~1 ms faster than on a worker.
   */
  /** The store warms this thread's decoder up (store.ts warmUp): until it is optimized, small slices go to the workers (decodeHere). */
  awaitWarmDecoder(): void {
    this.warmed = false;
  }

  private decodeHere(): boolean {
    if (this.warmed) return true;
    if (this.decoderWarm || ++this.deferred > MAX_DEFERRED) this.warmed = true;
    return this.warmed;
  }

  /** When a slice was last asked for (performance.now()). */
  private lastRun = 0;

  /** How long no slice has been asked for or been on the workers, ms (0 while one is). */
  idleMs(): number {
    return this.outstanding > 0 ? 0 : performance.now() - this.lastRun;
  }

  run(task: SliceTask | CompressTask, opts: { transferList?: ArrayBuffer[]; wholePage?: boolean }): Promise<SliceResult> {
    this.lastRun = performance.now();
    // A page's only slice may be as large as the slices of a lone page cut for the workers would be
    // together: those would all be decoded here too, one after the other (inlineBytes).
    const max = opts.wholePage === true ? this.wholePageBytes : this.maxInlineBytes;
    const poolOpts = opts.transferList === undefined ? {} : { transferList: opts.transferList };
    // Only while the workers are idle: under concurrent load the main thread is what limits
    // throughput, and a decode here would take its time from the other requests.
    if (this.task === null || this.outstanding > 0 || 'compress' in task || task.end - task.start > max || !(task.bytes !== undefined || task.source.startsWith('file:')) || !this.alone()) return this.onPool(task, poolOpts);
    if (!this.decodeHere()) return this.onPool(task, poolOpts);
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
    // Not while the decoder here is still cold (decodeHere): such a page goes to the workers, cut.
    return this.task !== null && this.outstanding === 0 && source.startsWith('file:') && this.alone() && (this.warmed || this.decoderWarm) ? this.wholePageBytes : 0;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** Whether `r` is the whole of its buffer (what a task may move). */
function whole(r: Uint8Array): boolean {
  return r.byteOffset === 0 && r.byteLength === r.buffer.byteLength;
}

/**
 * A task whose records are views of a larger buffer (a lone page's, read where the kept readers
 * hold the files: page-service.ts heldRecords) that goes to a worker after all: its records are
 * copied into one buffer of their own, moved with it, as page-service.ts withChecksums makes
 * them (the checksums, then the metadata, 8-byte aligned). Posted as views, each would be cloned
 * with the whole held file behind it.
 */
function ownRecords(task: SliceTask, opts: { transferList?: ArrayBuffer[] }): { transferList?: ArrayBuffer[] } {
  const { crcs, meta } = task;
  // Already its own: one whole buffer, or the checksums and the metadata filling one (runSlice moves those).
  const paired = meta !== undefined && meta.buffer === crcs?.buffer && crcs.byteOffset === 0 && meta.byteOffset === crcs.byteLength && meta.byteOffset + meta.byteLength === meta.buffer.byteLength;
  // Views of shared memory go as they are (page-service.ts heldRecords); the meta view is of the same kind then.
  if (crcs === undefined || whole(crcs) || paired || (crcs.buffer instanceof SharedArrayBuffer && (meta === undefined || meta.buffer instanceof SharedArrayBuffer))) return opts;
  const both = copyRecordsInto(task, crcs, meta);
  return { ...opts, transferList: [...(opts.transferList ?? []), both] };
}
