/**
 * The process's one piscina pool of page workers: fixed size (min = max
 * threads), a long idle timeout so threads are never torn down between
 * pages, and a bounded queue so overload is refused instead of queued.
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { PagerError } from '../core/errors.js';
import { isolateStarted, startWorkersAtFullSize } from './young-generation.js';
import { refusedFlags, workerExecArgv } from './worker-exec-argv.js';
import type { BatchResult, CompressTask, SliceBatch, SliceResult, SliceTask } from '../workers/slice-protocol.js';
import { SliceBatches } from './slice-batches.js';
import { WARMUP_LOG_FILES } from '../workers/warmup-logs.js';
import type { PagePool } from './page-pool.js';

export type { PagePool } from './page-pool.js';

/** The built worker (from src/main/ under the tests as from dist/main/: dist/ is built first), and the build's files beside it. */
const WORKER_FILE_URL = new URL('../../dist/workers/page-task.js', import.meta.url);
export const WORKER_FILE = fileURLToPath(WORKER_FILE_URL);

/**
 * Tasks piscina hands each worker at once (slice-batches.ts keeps this many per worker on the
 * pool). With one, a worker that finished a task slept until this thread took its answer and
 * posted the next (piscina's Atomics.wait, then a futex wake): under load the main thread is
 * busy with other requests when an answer comes, so each worker idled in every such gap and
 * both sides paid a wake-up a task. With two, the next task is already in the worker's port when
 * it finishes one (a worker runs one task at a time: the second waits its turn; slice-batches.ts
 * fills that place at the end of the event loop's turn, with what the turn queued). In process at
 * 16 pages in flight, typical pages: +9-12% pages/s, CPU a page in all threads 1.10 -> 1.05 ms;
 * many pages even (docs/benchmarks.md, "proof (twelfth session)").
 */
export const TASKS_PER_WORKER = 2;

/**
 * A worker's young generation bound, MB (resourceLimits): semi-spaces of 1 MB (a third;
 * startWorkersAtFullSize). Both semi-spaces stay resident once a worker's warm-up has used them,
 * so each MB of semi-space is 2 MB of a worker's idle memory; a decode's bulk is external memory
 * (arena, slice bytes), not young objects, and 6 (2 MB semi-spaces) measured no faster on the
 * warm tail and typical pages (docs/benchmarks.md, "tailcpu (eighteenth session)"). What it gives
 * back (~4 MB with 2 workers) pays for the first arena's touched sinks (workers/page-task.ts).
 */
export const WORKER_YOUNG_GENERATION_MB = 3;

export interface PoolOptions {
  threads?: number;
  maxQueue?: number;
  /** Workers optimize their decode path as they start (default true; workers/jit-warmup.ts). */
  jitWarmUp?: boolean;
  /** Wall-time bound of each worker's JIT warm-up, ms (default: jit-warmup.ts's). */
  jitBudgetMs?: number;
  /** Sections shorter than this are left to the main thread to compress (workers/slice-compress.ts). */
  minCodedSection?: number;
  /**
   * Whether the JIT warm-up also warms the binary path (jit-warmup.ts). Unset: each worker,
   * its JSONL warm-up done, waits for decideBinaryWarmUp (the store answers from its catalog).
   */
  binaryWarmUp?: boolean;
  /** Bytes of each worker's arena its JIT warm-up touches and keeps for the first large slice (workers/page-task.ts prepareFirstArena; default none). */
  firstReadBytes?: number;
}

/** What every worker is started with (piscina's workerData). */
export interface PageWorkerData {
  jitWarmUp: boolean;
  jitBudgetMs?: number;
  minCodedSection?: number;
  firstReadBytes?: number;
  /** Shared with the pool: 0 not decided yet, 1 JSONL only, 2 binary too (decideBinaryWarmUp). */
  binaryWarmUp: Int32Array;
  /** The build's copies of the JIT warm-up's logs (workers/warmup-logs.ts), as found; the worker checks them. */
  warmupLogs?: { jsonl?: Uint8Array; binary?: Uint8Array };
}

/** The build's warm-up logs, read here because a page worker reads no file of its own (test/layering); a missing one is made by the worker. */
export function readWarmupLogs(): { jsonl?: Uint8Array; binary?: Uint8Array } {
  const logs: { jsonl?: Uint8Array; binary?: Uint8Array } = {};
  for (const kind of ['jsonl', 'binary'] as const) {
    try {
      logs[kind] = readFileSync(new URL(WARMUP_LOG_FILES[kind], WORKER_FILE_URL));
    } catch {
      // Not built, or unreadable: the worker makes its logs.
    }
  }
  return logs;
}

const UNDECIDED = 0;
const JSONL_ONLY = 1;
const WITH_BINARY = 2;

/** Each pool's shared answer to its workers' "warm the binary path too?". */
const binaryAnswers = new WeakMap<PagePool, Int32Array>();

/** What `pool`'s workers were told (decideBinaryWarmUp): null for a pool that is not a worker pool. */
export function binaryWarmUpAnswer(pool: PagePool): 'undecided' | 'jsonl' | 'binary' | null {
  const answer = binaryAnswers.get(pool);
  if (answer === undefined) return null;
  const a = Atomics.load(answer, 0);
  return a === UNDECIDED ? 'undecided' : a === JSONL_ONLY ? 'jsonl' : 'binary';
}

/**
 * Tell `pool`'s workers whether to warm the binary path (the store's catalog holds a binary
 * session, or its writer writes binary). The first answer holds; a pool that was told at its
 * creation (PoolOptions.binaryWarmUp) or that is not a worker pool ignores it.
 */
export function decideBinaryWarmUp(pool: PagePool, binary: boolean): void {
  const answer = binaryAnswers.get(pool);
  if (answer === undefined || Atomics.load(answer, 0) !== UNDECIDED) return;
  Atomics.store(answer, 0, binary ? WITH_BINARY : JSONL_ONLY);
  Atomics.notify(answer, 0);
}

export function createPagePool(opts: PoolOptions = {}): PagePool {
  if (!existsSync(WORKER_FILE)) {
    throw new Error(`page worker not built: ${WORKER_FILE} is missing (run \`npm run build\`)`);
  }
  const threads = Math.max(1, opts.threads ?? Math.min(availableParallelism(), 8));
  // V8 takes a third of the young generation bound for each semi-space.
  startWorkersAtFullSize(WORKER_YOUNG_GENERATION_MB / 3);
  const binaryAnswer = new Int32Array(new SharedArrayBuffer(4));
  if (opts.binaryWarmUp !== undefined) binaryAnswer[0] = opts.binaryWarmUp ? WITH_BINARY : JSONL_ONLY;
  const create = (execArgv: string[]) =>
    new Piscina<SliceTask | CompressTask | SliceBatch, SliceResult | BatchResult>({
      filename: WORKER_FILE,
      minThreads: threads,
      maxThreads: threads,
      concurrentTasksPerWorker: TASKS_PER_WORKER,
      idleTimeout: 24 * 60 * 60 * 1000,
      maxQueue: opts.maxQueue ?? threads * 64,
      workerData: { jitWarmUp: opts.jitWarmUp ?? true, ...(opts.jitBudgetMs === undefined ? {} : { jitBudgetMs: opts.jitBudgetMs }), ...(opts.minCodedSection === undefined ? {} : { minCodedSection: opts.minCodedSection }), ...(opts.firstReadBytes === undefined ? {} : { firstReadBytes: opts.firstReadBytes }), binaryWarmUp: binaryAnswer, ...(opts.jitWarmUp === false ? {} : { warmupLogs: readWarmupLogs() }) } satisfies PageWorkerData,
      // A small young generation (semi-spaces of 2 MB: V8 takes a third of this each).
      // V8 grew a worker's to its limit during the JIT warm-up and never shrank it:
      // with 32 MB, 16 MB of empty young generation stayed resident in each idle
      // worker. The decode's bulk is external memory (its arena, the slice's bytes),
      // not young objects: cold and settled tail pages measured no slower with 6
      // than with 32 (docs/benchmarks.md, issue 12 "Idle memory").
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      // piscina loads the task file with require() first and import() only when that
      // throws. On Node 20 require() of an ES module is on by default, and its sync
      // instantiation path aborts the whole process (FATAL `v8::Module::IsGraphAsync
      // ... instantiated module`) when instantiation does not complete: seen twice in
      // full test runs as a fresh process's pool started. With require(esm) off in the
      // workers, require() throws ERR_REQUIRE_ESM at once and piscina takes import().
      // (worker-exec-argv.ts: the parent's own flags go along, minus those a worker refuses.)
      execArgv,
    });
  let pool: Piscina<SliceTask | CompressTask | SliceBatch, SliceResult | BatchResult>;
  try {
    pool = create(workerExecArgv(process.execArgv));
  } catch (err) {
    // The first worker's construction refused some of this process's flags (e.g. `node
    // --trace-gc`): start without them, as a worker inheriting them would have.
    const refused = refusedFlags(err);
    if (refused === null) throw err;
    pool = create(workerExecArgv(process.execArgv, refused));
  }
  // Each thread's new isolate reset V8's semi-space growth factor (young-generation.ts).
  for (const t of pool.threads) t.once('online', isolateStarted);
  // Small slices queued behind busy workers go to them in batches (slice-batches.ts).
  const batches = new SliceBatches(pool);
  binaryAnswers.set(batches, binaryAnswer);
  // Settled once each thread is online, or failed to start (the warm-up says why, not this).
  started.set(batches, Promise.all(pool.threads.map((t) => new Promise<void>((resolve) => ['online', 'error', 'exit'].forEach((e) => t.once(e, () => resolve()))))).then(() => undefined));
  return batches;
}

const started = new WeakMap<PagePool, Promise<void>>();

/**
 * Resolves when every thread `createPagePool` started runs JavaScript (its
 * isolate exists; or it failed to start). Each new isolate resets V8's
 * semi-space growth factor, which the pool holds again as it hears each
 * thread is online (young-generation.ts): a caller that waits for this
 * before its own heavy start-up (`serve` loading the app) does that work
 * with the hold in force, so its young generation does not grow in the gap.
 */
export function poolOnline(pool: PagePool): Promise<void> {
  return started.get(pool) ?? Promise.resolve();
}

/** Run one slice; a full queue becomes `overloaded`. */
export async function runSlice(pool: PagePool, task: SliceTask, wholePage = false): Promise<SliceResult> {
  // A handed-back arena and the task's own record copies are moved, not copied (the task is
  // not used again: a retried page builds new tasks).
  const transferList: ArrayBuffer[] = [];
  if (task.arena !== undefined) transferList.push(task.arena);
  // Views of shared memory (held records: page-service.ts heldRecords) are posted as they are, never moved.
  const own = (r: Uint8Array | undefined): r is Uint8Array => r !== undefined && r.byteOffset === 0 && r.byteLength === r.buffer.byteLength && !(r.buffer instanceof SharedArrayBuffer);
  const { crcs, meta } = task;
  // The checksum and row-metadata records in one copy of their own (page-service.ts withChecksums):
  // the checksums first, the metadata right after them to the buffer's end. Moved once.
  const paired = crcs !== undefined && meta !== undefined && meta.buffer === crcs.buffer && crcs.byteOffset === 0 && meta.byteOffset === crcs.byteLength && meta.byteOffset + meta.byteLength === meta.buffer.byteLength && !(crcs.buffer instanceof SharedArrayBuffer);
  if (paired) transferList.push(crcs.buffer as ArrayBuffer);
  for (const r of paired ? [task.bytes] : [crcs, meta, task.bytes]) if (own(r)) transferList.push(r.buffer as ArrayBuffer);
  try {
    return await pool.run(task, transferList.length === 0 ? (wholePage ? { wholePage } : {}) : wholePage ? { transferList, wholePage } : { transferList });
  } catch (err) {
    if (err instanceof Error && /queue is at limit/i.test(err.message)) {
      throw new PagerError('overloaded', 'page worker queue is full, retry shortly', { retryAfter: 1 });
    }
    throw err;
  }
}

/**
 * `bytes` compressed as one piece on a worker (workers/slice-compress.ts):
 * the coded bytes and, for gzip, the CRC-32 of `bytes`. The bytes go as a
 * moved copy (a view would take its whole backing buffer along).
 */
export async function runCompress(pool: PagePool, bytes: Uint8Array, coding: number, level: number): Promise<{ bytes: Buffer; crc: number; length: number }> {
  const copy = new Uint8Array(bytes);
  let r: SliceResult;
  try {
    r = await pool.run({ compress: copy, coding, level } satisfies CompressTask, { transferList: [copy.buffer as ArrayBuffer] });
  } catch (err) {
    if (err instanceof Error && /queue is at limit/i.test(err.message)) {
      throw new PagerError('overloaded', 'page worker queue is full, retry shortly', { retryAfter: 1 });
    }
    throw err;
  }
  if (!(r instanceof ArrayBuffer)) throw new PagerError('internal', 'a compress task returned no bytes');
  const out = Buffer.from(r);
  return { bytes: out.subarray(0, out.length - 4), crc: out.readUInt32LE(out.length - 4), length: bytes.byteLength };
}
