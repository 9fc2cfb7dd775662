/**
 * What a store is opened with (`openStore(opts)`), and the defaults: the one
 * place a store's behaviour is configured. The CLI maps its flags and
 * environment variables onto these; nothing below it reads `process.env`.
 */
import type { StorageBackend } from '../../storage/backend.js';
import type { FrameEncoding } from '../../streams/frame-codec.js';
import type { AppendBus } from './append-bus.js';
import type { PagePool } from '../page-pool.js';

/** The warm-ups a store runs (docs/architecture.md, "Worker pool"); both default on. */
export interface WarmUpOptions {
  /** Page workers optimize their decode path on a synthetic log when they start (workers/jit-warmup.ts). */
  jit?: boolean;
  /** Wall-time bound of each worker's JIT warm-up, ms (default: jit-warmup.ts's; tests on a loaded machine give more). */
  jitBudgetMs?: number;
  /** `store.warmUp()` also serves a generated session's pages through the whole page path (warmup/page-path-warmup.ts). */
  pagePath?: boolean;
  /**
   * `store.warmUp()` ends with a full collection of the calling thread's heap (workers/full-gc.ts),
   * for a host that runs V8 without incremental marking (`serve`: cli/serve-gc.ts), where nothing
   * collects the warm-up's garbage before the old generation's limit, so it stayed resident while
   * idle. Default off: under V8's own marking the collection is V8's to schedule, and a forced one
   * left the old generation's limit ~8 MB above the live heap (two collections back to back: the
   * smallest growth factor), less than the worker results one 5M tail page moves through this
   * thread (V8 counts ArrayBuffers against that limit), so marking ran beside nearly every such
   * page's decode (docs/benchmarks.md, "same (twelfth session)").
   */
  collect?: boolean;
  /**
   * Bytes of page-body memory `store.warmUp()` touches last and leaves free in the body pool
   * (store/body-pool.ts prepare) for the first large page, whose assembly otherwise faults in
   * fresh memory a 4 KiB page at a time (default DEFAULT_WARM_BODY_BYTES; 0: none). The first
   * pooled body of at most this size takes it; kept until then (idle RSS pays for it).
   */
  bodyBytes?: number;
  /**
   * Bytes of each page worker's arena its JIT warm-up touches last and keeps (workers/page-task.ts
   * prepareFirstArena) for the first large slice, whose bytes are otherwise read into fresh memory a
   * 4 KiB page at a time (default DEFAULT_WORKER_READ_BYTES; 0: none). The region is where a slice
   * of up to this many bytes is read; the arena around it is sized for such a slice's sinks (untouched,
   * no RSS). Kept until a large slice that fits takes it (idle RSS pays for it, in every worker).
   */
  workerReadBytes?: number;
  /**
   * The workers' JIT warm-up also warms the binary path (binary frames, MessagePack to JSON).
   * Unset: when the store's writer writes binary or its catalog holds a binary session at open.
   */
  binary?: boolean;
}

export interface StoreOptions {
  /** The local data directory (SPEC section 3); or give `storage`. */
  dataDir?: string;
  /** Where sessions live (default: local files under `dataDir`). */
  storage?: StorageBackend;
  /** Close `storage` with the store (StorageBackend.close: an S3 store seals and gives its sessions back); for a backend made for this store alone. */
  closeStorage?: boolean;
  /** Page worker threads (default: available cores, at most 8). */
  workers?: number;
  /**
   * Decode on the calling thread instead of a worker pool (main/inline-pool.ts):
   * for a process that builds a page or two and exits, where starting workers
   * costs more than they save. `workers` is then ignored.
   */
  inThread?: boolean;
  /**
   * Slices of at most this many stored bytes are decoded on the calling
   * thread instead of a worker while the workers are idle, once warmUp() has
   * run the page path (small-slice-pool.ts; default DEFAULT_INLINE_SLICE_BYTES, 0: none).
   */
  inlineSliceBytes?: number;
  /** Bound of the worker queue, in slices. */
  maxQueue?: number;
  /**
   * A page is cut into one slice per this much decode cost (stored bytes plus
   * FRAME_COST_BYTES per frame, core/slice-cuts.ts), one per worker at most.
   */
  splitCost?: number;
  /** Frame encoding of sessions created through this store (default jsonl). */
  format?: FrameEncoding;
  /** Close an in-process writer after this long without appends (ms). */
  writerIdleMs?: number;
  /**
   * Slices of at least this many bytes come back as the worker's arena itself
   * instead of a copy (default 512 KiB; see page-task.ts).
   */
  inPlaceBytes?: number;
  /** Bytes of prepared pages kept for repeated requests (default 64 MiB; 0 turns it off). */
  pageCacheBytes?: number;
  /**
   * Page bodies of at least `minBytes` are built into memory used again once every holder has
   * released it (`PageBuffer.release`; default BODY_POOL_MIN_BYTES, 256 KiB); released memory is
   * let go after `idleMs` without a page (default 2000). Tests set them.
   */
  bodyPool?: { minBytes?: number; idleMs?: number };
  /**
   * Stored bytes of the pages being built at once (default
   * DEFAULT_DECODE_BUDGET_BYTES): a page past it waits for room, one page is
   * always let in (store/decode-budget.ts).
   */
  decodeBudgetBytes?: number;
  /**
   * Only read: do not create the data directory's layout on open (a command
   * that reads one page must not leave directories behind, say under a
   * mistyped --data). Writes through such a store still create what they need.
   */
  readOnly?: boolean;
  /** Followers' backstop poll of a watched session's entry sidecar, ms (default 2000): behind file-change notification (storage/local/change-watch.ts) and behind the append bus's messages on a network store. */
  watchPollMs?: number;
  /** On a backend without change notification (memory, a network store), how often a followed session's entry sidecar is stat'ed, ms (default 100; storage/stat-poll-watch.ts). */
  statPollMs?: number;
  /**
   * Page workers already started for this store by `startPagePool(opts)`
   * (store/start-pool.ts), with these same options: `serve` starts them
   * before it loads the app, so their JIT warm-ups run while it does. The
   * store takes the pool over (close() ends it).
   */
  startedPool?: PagePool;
  /** Which warm-ups run (default: all). */
  warmUp?: WarmUpOptions;
  /**
   * Follow across processes and hosts: publish each durable append on Redis
   * pub/sub and hear of other processes' appends there (`redis://host:port`;
   * store/redis-bus.ts). Ignored when `appendBus` is given.
   */
  redisUrl?: string;
  /** Channel prefix on Redis (default `session-pager:append:`). */
  redisPrefix?: string;
  /** An append bus of the caller's (tests, another transport); the store does not close it. */
  appendBus?: AppendBus;
  /** Told of the Redis connection's errors (once per disconnection): the server logs them. */
  onBusError?: (err: Error) => void;
  /**
   * Whether followers watch a local data directory's entry sidecars for
   * other processes' appends (fs.watch and the backstop poll; default true).
   * Tests of the append bus turn it off, so what arrives came by the bus.
   */
  watchFiles?: boolean;
  /**
   * Slice sections shorter than this are compressed by the main thread, not
   * the worker (default 4 KiB, workers/slice-compress.ts); tests lower it so
   * small pages take the workers' path.
   */
  minCodedSection?: number;
}

/**
 * A second slice pays for its extra worker hop (~0.1-0.2 ms here) once a page
 * decodes for more than ~0.3 ms: ~500,000 byte-equivalents, ~250 typical
 * frames. (Measured on the typical-page benchmark: 512 Ki and 1 Mi gave the
 * same p50, 2 Mi a worse one.)
 */
export const DEFAULT_SPLIT_COST = 512 * 1024;

/**
 * Slices this large return the worker's arena as their result: copying 3 MB
 * into fresh memory cost ~1.8 ms (page faults and the pass), a 100 KB slice's
 * copy ~20 µs, and a small slice keeps the worker's arena warm for the next.
 */
export const DEFAULT_IN_PLACE_BYTES = 512 * 1024;

/**
 * A slice of ~256 KiB decodes on the main thread in ~1-2 ms, less than its
 * round trip through a worker costs (~1 ms of CPU a page over HTTP,
 * docs/benchmarks.md "The page request's main thread"), so it helps a lone
 * client. Only a lone one (small-slice-pool.ts): with "the workers are
 * idle" as the only guard (12-02 morning) the main thread took every small
 * slice under load, the server ran on one thread and the backlog built up
 * on the event loop where admission never saw it queue (random 50-message
 * pages at 256 connections never shed, p99 6-7x the unloaded one;
 * docs/decisions.md). Now a page also has to be the only one in flight,
 * with at most one client connected.
 */
export const DEFAULT_INLINE_SLICE_BYTES = 256 * 1024;

export const DEFAULT_PAGE_CACHE_BYTES = 64 * 1024 * 1024;

/**
 * A page holds about three times its stored bytes while it is built (slice
 * arenas, then the body); two workers finish pages no faster when more are
 * started. 8 MiB lets one 5 MB tail page (or a few 1 MB ones) build at once
 * and never holds back small pages (a 50-message page is ~10-200 KB).
 */
export const DEFAULT_DECODE_BUDGET_BYTES = 8 * 1024 * 1024;

/**
 * WarmUpOptions.bodyBytes's default: room for the body of a long session's tail page (the 5M
 * bench session's is 4.65 MB). Resident from the warm-up's end until the first pooled body takes
 * it: +6 MiB of idle RSS (issue 12's <= 120 MB: 103-105 MB without it, 109-111 with it).
 */
export const DEFAULT_WARM_BODY_BYTES = 6 * 1024 * 1024;

/**
 * WarmUpOptions.workerReadBytes's default: room for one worker's slice of a long session's tail
 * page (the 5M bench session's span is 6.35 MB, cut into two slices of ~3.17 MB). Resident from
 * each worker's warm-up on: +6.5 MB of idle RSS with two workers (issue 12's <= 120 MB: 110-112 MB
 * without it, 117-118 with it; docs/decisions.md).
 */
export const DEFAULT_WORKER_READ_BYTES = 3.25 * 1024 * 1024;
export const DEFAULT_WRITER_IDLE_MS = 60_000;

/** The environment variables the CLI honours for the warm-ups (README): `SESSION_PAGER_JIT_WARMUP=0`, `SESSION_PAGER_PAGE_WARMUP=0`, `SESSION_PAGER_BINARY_WARMUP=0|1`. */
export function warmUpFromEnv(env: NodeJS.ProcessEnv, defaults: WarmUpOptions = {}): WarmUpOptions {
  const flag = (v: string | undefined, dflt: boolean | undefined) => (v === undefined ? dflt : v !== '0');
  const out: WarmUpOptions = {};
  const jit = flag(env.SESSION_PAGER_JIT_WARMUP, defaults.jit);
  const pagePath = flag(env.SESSION_PAGER_PAGE_WARMUP, defaults.pagePath);
  const binary = flag(env.SESSION_PAGER_BINARY_WARMUP, defaults.binary);
  if (jit !== undefined) out.jit = jit;
  if (pagePath !== undefined) out.pagePath = pagePath;
  if (binary !== undefined) out.binary = binary;
  return out;
}
