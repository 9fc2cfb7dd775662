/**
 * The library API shared by the HTTP service, the CLI and the benchmarks
 * (`openStore(dataDir)`): one page path for all of them.
 */
import type { Page, PageParams, SessionEvent, SessionHeaderInit } from '../core/types.js';
import type { SessionStatus } from './session-state.js';
import type { AppendResult } from './session-writer.js';
import type { FrameEncoding } from '../streams/frame-codec.js';
import type { TokenTotals } from '../core/summary.js';
import type { FollowOptions } from './event-follow.js';
import type { AppendBusStats } from './store/append-bus.js';
import type { CodedForm, OutputCoding, PageEncoding } from './page-coding.js';

export interface CatalogEntry {
  id: string;
  status: SessionStatus;
  /** Why the status is not ok; empty when ok. */
  reasons: string[];
  title: string | null;
  createdAt: number | null;
  updatedAt: number | null;
  /** Next seq to append; lastSeq = nextSeq - 1 (-1 when empty). */
  nextSeq: number;
  lastSeq: number;
  eventCount: number;
  frameCount: number;
  indexedLength: number;
  logSize: number;
  hasUserMessage: boolean;
  provider: string | null;
  model: string | null;
  agentPreset: string | null;
  lastCompactionSeq: number | null;
  tokens: TokenTotals | null;
  /** Metadata sidecar older than the entry sidecar (caught up in memory). */
  metaStale: boolean;
  format: FrameEncoding | null;
  header: Record<string, unknown> | null;
}

/** A page serialized once, ready to send. `body` is the JSON of SPEC section 4. */
export interface PageBuffer {
  body: Buffer;
  sessionId: string;
  throughSeq: number;
  fromSeq: number;
  toSeq: number;
  hasMore: boolean;
  /** Frames read and their stored bytes. */
  frames: number;
  frameBytes: number;
  /** Log bytes the workers actually read (equals frameBytes: the bounded-read guard). */
  logBytesRead: number;
  /** Where the time went when the page was built (absent on a prepared-page cache hit). */
  timing?: PageTiming;
  /** Compressed forms of `body` kept with it in the prepared-page cache (page-cache.ts); owned by the cache. */
  forms?: Map<PageEncoding, CodedForm>;
  /** The body in the coding it was asked in (pageBuffer's `coding`), when one was. */
  encoded?: CodedForm;
  /**
   * The caller is done with `body` (nothing reads it any more: its socket write has finished):
   * the store may build a later page into the same memory. Optional; once per page returned
   * (later calls do nothing); a page never released is left to the collector like any buffer.
   */
  release?: () => void;
}

/** Milliseconds per phase of one page (the slowest worker's for read and decode: slices run in parallel). */
export interface PageTiming {
  plan: number;
  read: number;
  decode: number;
  /** Everything between planning and assembly the workers do not account for: checksum records, queueing, messaging. */
  pool: number;
  assemble: number;
  total: number;
  /** Compressing in the output coding, the slowest worker's (its joining, and brotli, count in assemble). */
  code?: number;
}

export interface StoreStats {
  /** `threadIds`: the live workers' thread ids (a worker that died and was replaced shows as a new id). */
  pool: { threads: number; queueSize: number; maxQueue: number; utilization: number; completed: number; threadIds: number[] };
  /** hits/misses: session views; page*: prepared pages (page-cache.ts); readers*: projection files opened, and kept readers used again (store/kept-readers.ts). */
  cache: { hits: number; misses: number; pageHits: number; pageMisses: number; pageBytes: number; readersOpened: number; readersReused: number };
  pagesServed: number;
  /** Pages being built now, by their stored bytes, and those waiting for room (store/decode-budget.ts). */
  building: { bytes: number; pages: number; waiting: number; peakBytes: number; budgetBytes: number };
  /** Sessions with a file watcher (one each, shared by their followers) and open library followers. */
  follow: { watchedSessions: number; followers: number; bus?: AppendBusStats & { watchedSessions: number } };
}

/**
 * What validates a session's pages without building one (HTTP ETags, 304s):
 * a page is a function of the events up to its cut, its parameters and the
 * log it was read from, so the next seq and the log's identity are enough.
 */
export interface PageVersion {
  nextSeq: number;
  /** Changes when the log is replaced (deleted and created again, restored); never on append. */
  incarnation: string;
  /** False when pages would fail with `repair_required`. */
  servable: boolean;
}

export type FollowListener = (events: readonly SessionEvent[]) => void;

/**
 * What a page build reads of its caller's abort signal (an AbortSignal is one): whether it has
 * aborted and why, and a listener while the page waits for room (decode-budget.ts). The HTTP
 * page path passes a RequestAbort (server/request-abort.ts), which makes an AbortSignal only
 * when something listens or the request is aborted.
 */
export interface PageSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  throwIfAborted(): void;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export interface Store {
  readonly dataDir: string;
  /** Catalog from metadata sidecars; never fails for one bad session. */
  list(): Promise<CatalogEntry[]>;
  /** One session's catalog entry; `session_not_found` when absent. */
  info(id: string): Promise<CatalogEntry>;
  /** The next seq to append (cheap: the writer's or the cached view's); `session_not_found` when absent. */
  nextSeq(id: string): Promise<number>;
  /** Resolve once every page worker has started and optimized its decode path. */
  warmUp(): Promise<void>;
  /** How many clients the server in front of the store has connected now (small slices go inline only for a lone one). */
  setClientCount?(count: () => number): void;
  page(id: string, params?: PageParams): Promise<Page>;
  /**
   * The page as prepared bytes. An aborted `signal` stops the page before its
   * slices are queued (running decodes are never interrupted: aborting a
   * running piscina task would kill its worker). `version`: what `pageVersion`
   * answered for this request; the page is then built from the same reads of
   * the session (one look at its objects per request, and the page is the one
   * that version names).
   */
  pageBuffer(id: string, params?: PageParams, signal?: PageSignal, coding?: OutputCoding, version?: PageVersion): Promise<PageBuffer>;
  /**
   * `body` compressed in `coding` as a page is (gzip and zstd on the page
   * workers in parallel, brotli in one piece): for the routes whose bodies no
   * worker built (the catalog).
   */
  encodeBody?(body: Buffer, coding: OutputCoding): Promise<Buffer>;
  /** See PageVersion; a backend without a cheap log identity may leave it out (pages are then validated by their bytes). */
  pageVersion?(id: string, throughSeq?: number): Promise<PageVersion>;
  /** Logical events [fromSeq, toSeq) of the indexed log (bounded by the caller). */
  readEvents(id: string, fromSeq: number, toSeq: number): Promise<SessionEvent[]>;
  /** Create a session from its header record (`type`, `id`, `createdAt` filled in when absent); `session_exists` when it does. */
  create(id: string, header?: SessionHeaderInit, opts?: { format?: FrameEncoding }): Promise<CatalogEntry>;
  /**
   * Append events durably (resolves after fsync). Seqs must continue `nextSeq`
   * exactly (`seq_conflict`); every event is checked (`invalid_request`).
   */
  append(id: string, events: readonly SessionEvent[]): Promise<AppendResult>;
  /** Be told of every durable append to `id` made through this store, in order. */
  subscribe(id: string, listener: FollowListener): () => void;
  /**
   * Be told (without the events) whenever the session's files may have
   * changed, by any process on this machine: the session's one shared file
   * watcher (storage/local/change-watch.ts). `keepAlive` keeps the process running while watched.
   */
  watch(id: string, listener: () => void, opts?: { keepAlive?: boolean }): () => void;
  /**
   * The session's events from `fromSeq` (default: from now on), waiting for
   * new ones appended by any process, with no gap and no duplicate; ends on
   * `break`/`return()`, on `close()` and when `signal` aborts (event-follow.ts).
   */
  follow(id: string, opts?: FollowOptions): AsyncIterableIterator<SessionEvent>;
  stats(): StoreStats;
  /**
   * stats().pool.queueSize alone: the load-shedding check reads it on every page request, and
   * stats() builds a dozen objects (every counter, the threads' ids) a request only to drop them.
   */
  poolQueueSize?(): number;
  close(): Promise<void>;
}
