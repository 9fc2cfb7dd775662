/**
 * The page workers a store's options ask for, started. A store starts its
 * own on open; `serve` calls this first, right after it binds its port and
 * before it loads fastify and the store, and hands the pool to openStore
 * (`StoreOptions.startedPool`): the workers then start and run their JIT
 * warm-ups while the main thread loads the app, instead of after it
 * (docs/benchmarks.md, "Start-up: workers first").
 *
 * This module loads only the pool (piscina), not the store, so calling it
 * first costs the main thread nothing it would not load anyway.
 */
import { createPagePool, type PagePool } from '../worker-pool.js';
import { DEFAULT_WORKER_READ_BYTES, type StoreOptions } from './options.js';

export function startPagePool(opts: StoreOptions): PagePool {
  return createPagePool({
    threads: opts.workers,
    maxQueue: opts.maxQueue,
    jitWarmUp: opts.warmUp?.jit ?? true,
    // Known now when set or when the writer writes binary; else the store answers from its catalog (store.ts).
    ...(opts.warmUp?.binary !== undefined ? { binaryWarmUp: opts.warmUp.binary } : opts.format === 'binary' ? { binaryWarmUp: true } : {}),
    ...(opts.warmUp?.jitBudgetMs === undefined ? {} : { jitBudgetMs: opts.warmUp.jitBudgetMs }),
    ...(opts.minCodedSection === undefined ? {} : { minCodedSection: opts.minCodedSection }),
    firstReadBytes: opts.warmUp?.workerReadBytes ?? DEFAULT_WORKER_READ_BYTES,
  });
}

