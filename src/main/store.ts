/**
 * `openStore(opts)`: the library API behind the HTTP service, the CLI and
 * the benchmarks, a small facade over parts with one job each
 * (src/main/store/):
 * - session-views.ts: what is known of a session, from bounded reads, cached;
 * - page-service.ts: plan, slice, decode on the pool, assemble, cache pages;
 * - writers.ts: one in-process writer per session, holding its lease;
 * - subscriptions.ts: who hears of each durable append;
 * - options.ts: what a store is configured with, and the defaults;
 * and warmup/warm-up.ts, everything a fresh process warms up.
 * Every byte is read and written through one storage backend (src/storage/).
 */
import type { StorageBackend } from '../storage/backend.js';
import { assertSessionId, INDEX } from '../storage/layout.js';
import { LocalBackend } from '../storage/local/local-backend.js';
import type { FrameEncoding } from '../streams/frame-codec.js';
import { PagerError } from '../core/errors.js';
import type { PagePlan } from '../core/page-planner.js';
import type { Page, PageParams, SessionEvent, SessionHeaderInit } from '../core/types.js';
import type { AppendResult } from './session-writer.js';
import type { CatalogEntry, FollowListener, PageBuffer, PageSignal, PageVersion, Store, StoreStats } from './store-types.js';
import { DEFAULT_IN_PLACE_BYTES, DEFAULT_INLINE_SLICE_BYTES, DEFAULT_DECODE_BUDGET_BYTES, DEFAULT_WARM_BODY_BYTES, DEFAULT_PAGE_CACHE_BYTES, DEFAULT_SPLIT_COST, DEFAULT_WRITER_IDLE_MS, type StoreOptions } from './store/options.js';
import { PageService } from './store/page-service.js';
import { SessionViews, type SessionView } from './store/session-views.js';
import { Subscriptions } from './store/subscriptions.js';
import { SessionWriters } from './store/writers.js';
import { decideBinaryWarmUp, type PagePool } from './worker-pool.js';
import { startPagePool } from './store/start-pool.js';
import { SmallSlicePool } from './small-slice-pool.js';
import type { InlineDecoder, WarmupStore, warmUpInlineDecoder } from './warmup/page-path-warmup.js';

/** The main thread's decoder warm-up after ready: only after this long without a page, ms, and for at most this long after ready. */
const INLINE_IDLE_MS = 25;
const INLINE_IDLE_FOR_MS = 60_000;

interface InlineWarmUp {
  open: (storage: StorageBackend) => Promise<WarmupStore>;
  decoder: InlineDecoder;
  progress: { pages: number; helpersAsked?: boolean };
  /** page-path-warmup.ts warmUpInlineDecoder, loaded with the warm-up. */
  run: typeof warmUpInlineDecoder;
}
import { InlinePool } from './inline-pool.js';
import type { OutputCoding } from './page-coding.js';
import { ChangeWatchers, DEFAULT_WATCH_POLL_MS } from '../storage/local/change-watch.js';
import { StatPollWatchers } from '../storage/stat-poll-watch.js';
import { sessionKeys } from '../storage/layout.js';
import { EventFollower, type FollowOptions } from './event-follow.js';
import type { AppendBus } from './store/append-bus.js';
import { RemoteAppends } from './store/remote-appends.js';

export type { StoreOptions, WarmUpOptions } from './store/options.js';
export { warmUpFromEnv } from './store/options.js';

export class PagerStore implements Store {
  readonly dataDir: string;
  readonly storage: StorageBackend;
  private readonly closeStorage: boolean;
  private readonly pool: PagePool;
  private readonly threads: number;
  private readonly splitCost: number;
  private readonly pagePathWarmUp: boolean;
  /** StoreOptions.warmUp.collect. */
  private readonly collectAfterWarmUp: boolean;
  /** StoreOptions.warmUp.bodyBytes: page-body memory the warm-up leaves ready for the first large page. */
  private readonly warmBodyBytes: number;
  private readonly views: SessionViews;
  private readonly pages: PageService;
  private readonly writers: SessionWriters;
  private readonly subscriptions = new Subscriptions();
  private readonly watchers: ChangeWatchers;
  private readonly watchFiles: boolean;
  /** Other processes' appends, over the append bus (null without one). */
  private readonly remote: RemoteAppends | null;
  /** Whether close() closes the bus (not one the caller gave). */
  private readonly ownsBus: boolean;
  private readonly polls: StatPollWatchers;
  /** With an append bus on a network store: the slow poll behind its messages. */
  private readonly backstopPolls: StatPollWatchers;
  private readonly follows = new Set<EventFollower>();
  /** How many clients are connected to the server in front of this store (setClientCount); none known: 0. */
  private clients: () => number = () => 0;
  private closed = false;

  /** Whether close() ends the pool (not when it was lent by another store). */
  private readonly ownsPool: boolean;
  /** The worker pool this store started or was handed to start with (its workers wait for decideWarmUp's answer); null for a borrowed or in-thread one. */
  private warmingPool: PagePool | null = null;

  /**
   * `pool`: another store's, for a store that only borrows it (the page-path
   * warm-up's). `ownBus`: the bus `opts.appendBus` was made for this store
   * (openStore's, from `redisUrl`), so close() closes it.
   */
  private workerPool(opts: StoreOptions): PagePool {
    const pool = opts.startedPool ?? startPagePool(opts);
    this.warmingPool = pool;
    const inline = opts.inlineSliceBytes ?? DEFAULT_INLINE_SLICE_BYTES;
    // A page is alone while no other is being built and at most one client is connected (setClientCount).
    return inline > 0 ? new SmallSlicePool(pool, inline, () => this.pages.inFlight <= 1 && this.clients() <= 1) : pool;
  }

  constructor(opts: StoreOptions, pool?: PagePool, ownBus = false) {
    this.storage = storageOf(opts);
    this.closeStorage = opts.closeStorage === true;
    this.dataDir = opts.dataDir ?? `${this.storage.kind}:`;
    this.ownsPool = pool === undefined;
    this.pool = pool ?? (opts.inThread === true ? new InlinePool() : this.workerPool(opts));
    this.threads = this.pool.options.maxThreads;
    this.splitCost = opts.splitCost ?? DEFAULT_SPLIT_COST;
    this.pagePathWarmUp = opts.warmUp?.pagePath ?? true;
    this.collectAfterWarmUp = opts.warmUp?.collect ?? false;
    this.warmBodyBytes = opts.warmUp?.bodyBytes ?? DEFAULT_WARM_BODY_BYTES;
    this.writers = new SessionWriters(
      this.storage,
      opts.format ?? 'jsonl',
      opts.writerIdleMs ?? DEFAULT_WRITER_IDLE_MS,
      (id, events) => {
        this.subscriptions.publish(id, events);
        const last = events[events.length - 1];
        if (last !== undefined) this.remote?.published(id, last.seq + 1, this.storage.changeMark?.(sessionKeys(id).meta));
      },
      (id) => this.views.forget(id),
    );
    // A network store caches what it looked up for a while: told of an append (or asked for a seq not seen yet), it looks again.
    const storage = this.storage as { refresh?(key: string, at?: string): Promise<void> };
    const refresh = async (id: string, at?: string) => storage.refresh?.(sessionKeys(id).meta, at);
    this.views = new SessionViews(this.storage, (id) => this.writers.committed(id), refresh);
    this.pages = new PageService(this.storage, this.pool, this.views, {
      splitCost: this.splitCost,
      inPlaceBytes: opts.inPlaceBytes ?? DEFAULT_IN_PLACE_BYTES,
      pageCacheBytes: opts.pageCacheBytes ?? DEFAULT_PAGE_CACHE_BYTES,
      decodeBudgetBytes: opts.decodeBudgetBytes ?? DEFAULT_DECODE_BUDGET_BYTES,
      ...(opts.bodyPool !== undefined ? { bodyPool: opts.bodyPool } : {}),
    });
    this.watchers = new ChangeWatchers(opts.watchPollMs);
    this.watchFiles = opts.watchFiles ?? true;
    if (opts.appendBus === undefined && opts.redisUrl !== undefined) throw new PagerError('internal', 'a store with redisUrl is opened by openStore()');
    const bus: AppendBus | null = opts.appendBus ?? null;
    this.ownsBus = ownBus && bus !== null;
    this.remote = bus === null ? null : new RemoteAppends(bus, (id) => this.nextSeq(id), refresh);
    this.polls = new StatPollWatchers(this.storage, opts.statPollMs);
    this.backstopPolls = new StatPollWatchers(this.storage, opts.watchPollMs ?? DEFAULT_WATCH_POLL_MS);
  }

  /**
   * Answer the workers' "warm the binary path too?" (worker-pool.ts decideBinaryWarmUp): yes
   * when this store writes binary or its catalog holds a binary session, else JSONL only; yes
   * when the catalog cannot be listed. Not awaited by openStore: the workers ask only once their
   * JSONL warm-up is done, by when a local catalog has long been listed.
   */
  decideWarmUp(opts: StoreOptions): Promise<void> {
    const pool = this.warmingPool;
    if (pool === null) return Promise.resolve();
    if (opts.warmUp?.binary !== undefined || opts.format === 'binary') {
      decideBinaryWarmUp(pool, opts.warmUp?.binary ?? true);
      return Promise.resolve();
    }
    return this.list().then(
      (catalog) => decideBinaryWarmUp(pool, catalog.some((e) => e.format === 'binary')),
      () => decideBinaryWarmUp(pool, true),
    );
  }

  async list(): Promise<CatalogEntry[]> {
    return this.views.list();
  }

  async info(id: string): Promise<CatalogEntry> {
    return this.views.info(id);
  }

  async nextSeq(id: string): Promise<number> {
    return (await this.views.view(id)).nextSeq;
  }

  async plan(id: string, params: PageParams = {}): Promise<{ view: SessionView; plan: PagePlan }> {
    return this.pages.plan(id, params);
  }

  async pageBuffer(id: string, params: PageParams = {}, signal?: PageSignal, coding?: OutputCoding, version?: PageVersion): Promise<PageBuffer> {
    this.assertOpen();
    return this.pages.pageBuffer(id, params, signal, coding, version);
  }

  async encodeBody(body: Buffer, coding: OutputCoding): Promise<Buffer> {
    this.assertOpen();
    return this.pages.encodeBody(body, coding);
  }

  async pageVersion(id: string, throughSeq?: number): Promise<PageVersion> {
    this.assertOpen();
    return this.views.pageVersion(id, throughSeq);
  }

  async page(id: string, params: PageParams = {}): Promise<Page> {
    this.assertOpen();
    return this.pages.page(id, params);
  }

  async readEvents(id: string, fromSeq: number, toSeq: number): Promise<SessionEvent[]> {
    this.assertOpen();
    return this.pages.readEvents(id, fromSeq, toSeq);
  }

  async create(id: string, header: SessionHeaderInit = {}, opts: { format?: FrameEncoding } = {}): Promise<CatalogEntry> {
    this.assertOpen();
    assertSessionId(id);
    await this.writers.create(id, header, opts.format);
    this.views.forget(id);
    return this.info(id);
  }

  async append(id: string, events: readonly SessionEvent[]): Promise<AppendResult> {
    this.assertOpen();
    assertSessionId(id);
    return this.writers.append(id, events);
  }

  subscribe(id: string, listener: FollowListener): () => void {
    return this.subscriptions.subscribe(id, listener);
  }

  /**
   * Be told when another writer may have appended to `id`: a change of its
   * entry sidecar and a message on the append bus. Local files by
   * file-change notification (storage/local/change-watch.ts, with its
   * backstop poll); any other backend without a bus by polling the
   * sidecar's stat through the seam (storage/stat-poll-watch.ts: another
   * store or process over the same storage); the append bus (`redisUrl`:
   * any process on any host over the same storage; store/remote-appends.ts)
   * where there is one. Appends through this store reach `subscribe` instead.
   */
  watch(id: string, listener: () => void, opts: { keepAlive?: boolean } = {}): () => void {
    const keys = sessionKeys(id);
    const stops: (() => void)[] = [];
    if (this.watchFiles && this.storage instanceof LocalBackend) stops.push(this.watchers.watch(id, this.storage.path(keys.entries), listener, opts));
    else if (this.watchFiles && this.remote === null) stops.push(this.polls.watch(keys.entries, listener, opts));
    if (this.remote !== null) {
      stops.push(this.remote.watch(id, listener));
      // A message can be lost, and an append can be made durable without one (a restarted writer's
      // recovered tail): a slow poll of the sidecar's stat through the seam is the backstop.
      if (this.watchFiles && !(this.storage instanceof LocalBackend)) stops.push(this.backstopPolls.watch(keys.entries, listener, opts));
    }
    return () => {
      for (const stop of stops.splice(0)) stop();
    };
  }

  follow(id: string, opts: FollowOptions = {}): AsyncIterableIterator<SessionEvent> {
    this.assertOpen();
    assertSessionId(id);
    const f = new EventFollower(this, id, opts, (done) => this.follows.delete(done));
    if (!f.ended) this.follows.add(f);
    return f;
  }

  /**
   * Resolve once every pool thread has started and loaded the page task, and
   * (unless `warmUp.pagePath` is false) the whole page path has served a
   * generated session's pages: a serving process does this before it
   * listens, so no request pays for it (warmup/warm-up.ts).
   */
  async warmUp(): Promise<void> {
    // Results in place from 64 KiB on: its slices then take the in-place path and hand
    // arenas back as real large pages do (a task's arena first set on the second real
    // page deoptimized the planner there, "code dependencies", and recompiled it beside the decode).
    const opts = { splitCost: this.splitCost, pageCacheBytes: 0, inPlaceBytes: 64 * 1024 };
    // Loaded when asked for: a process that never warms up (`session-pager page`) does not load the generator.
    const { warmUpStore } = await import('./warmup/warm-up.js');
    // This thread's decoder for small slices, warmed while the workers warm up (and after, while idle).
    const small = this.pagePathWarmUp && this.pool instanceof SmallSlicePool ? this.pool : null;
    const inline = small === null ? undefined : await this.inlineWarmUp();
    if (inline !== undefined) small?.awaitWarmDecoder();
    await warmUpStore({
      pool: this.pool,
      threads: this.threads,
      pagePath: this.pagePathWarmUp,
      collect: this.collectAfterWarmUp,
      bodies: { bytes: this.warmBodyBytes, prepare: (bytes) => this.pages.bodies.prepare(bytes) },
      ...(inline === undefined ? {} : { inline }),
      openStore: async (storage) => new PagerStore({ ...opts, storage }, this.pool),
      // Then small slices may go inline: the decoder is loaded here now, not on a request (small-slice-pool.ts).
      // After the page-path warm-up, whose slices are for the workers' decode to be optimized.
      finish: async () => {
        if (this.pagePathWarmUp && this.pool instanceof SmallSlicePool) await this.pool.prepare();
      },
    });
    if (small !== null && inline !== undefined && !small.decoderWarm) this.warmInlineWhenIdle(small, inline);
  }

  /** What the main thread's decoder warm-up needs (warmup/page-path-warmup.ts warmUpInlineDecoder): stores that decode on this thread, V8's answer for its loop. */
  private async inlineWarmUp(): Promise<InlineWarmUp | undefined> {
    const [{ decoderTier, optimizeDecoder, optimizeFrameHelpers, widenTaskShape }, { warmUpInlineDecoder, canWarmUpInline }] = await Promise.all([import('../workers/page-task.js'), import('./warmup/page-path-warmup.js')]);
    // Without the build's copy of the session (run from src/), nothing to warm it on: as before, small slices decoded here cold.
    if (!(await canWarmUpInline())) return undefined;
    return {
      run: warmUpInlineDecoder,
      // The real store's settings (the small slices' tasks as its page service makes them), no cache.
      open: async (storage) => new PagerStore({ storage, pageCacheBytes: 0, splitCost: this.splitCost }, new InlinePool()),
      decoder: { tier: decoderTier, optimize: optimizeDecoder, optimizeHelpers: optimizeFrameHelpers, widen: widenTaskShape },
      progress: { pages: 0 },
    };
  }

  /**
   * The decoder warm-up continued after ready, a page at a time, only while no page has been
   * asked for INLINE_IDLE_MS, for at most INLINE_IDLE_FOR_MS: until it is optimized, small
   * slices go to the workers (small-slice-pool.ts), which serves them but costs the round trip.
   */
  private warmInlineWhenIdle(small: SmallSlicePool, inline: InlineWarmUp): void {
    const until = performance.now() + INLINE_IDLE_FOR_MS;
    const idle = () => !this.closed && performance.now() < until && this.pages.inFlight === 0 && small.idleMs() >= INLINE_IDLE_MS;
    const tick = (): void => {
      if (this.closed || small.decoderWarm || performance.now() >= until) return;
      const turn = idle() ? inline.run(inline.open, inline.decoder, idle, inline.progress).catch(() => true) : Promise.resolve(false);
      void turn.then((warm) => {
        if (!warm) setTimeout(tick, INLINE_IDLE_MS).unref();
      });
    };
    setTimeout(tick, INLINE_IDLE_MS).unref();
  }

  /**
   * Tell the store how many clients are connected (the HTTP server's open
   * connections): with more than one, a page is never decoded on this
   * thread, as pages of concurrent clients are not (small-slice-pool.ts).
   * The server handles each request to its end before it reads the next,
   * so pages in flight alone cannot show the requests waiting behind one.
   */
  setClientCount(count: () => number): void {
    this.clients = count;
  }

  poolQueueSize(): number {
    return this.pool.queueSize;
  }

  stats(): StoreStats {
    const page = this.pages.cache;
    const pool = this.pool;
    return {
      pool: {
        threads: this.threads,
        queueSize: this.pool.queueSize,
        maxQueue: this.pool.options.maxQueue,
        // Read when asked (the /metrics gauge), not on every call: piscina computes it from a
        // summary of its run-time histogram (mean, stddev, percentiles), and the load-shedding
        // check reads stats() on every page request.
        get utilization() {
          return pool.utilization;
        },
        completed: this.pool.completed,
        threadIds: this.pool.threads.map((w) => w.threadId),
      },
      cache: { hits: this.views.hits, misses: this.views.misses, pageHits: page.hits, pageMisses: page.misses, pageBytes: page.size, readersOpened: this.pages.readers.opened, readersReused: this.pages.readers.reused },
      pagesServed: this.pages.pagesServed,
      building: this.pages.budget.stats(),
      follow: { watchedSessions: this.watchers.size + this.polls.size + this.backstopPolls.size, followers: this.follows.size, ...(this.remote !== null ? { bus: { ...this.remote.bus.stats(), watchedSessions: this.remote.size } } : {}) },
    };
  }

  /**
   * At start-up: open the writer of every session whose crashed writer left
   * a durable tail only this process can publish (a network store's local
   * tail, `StorageBackend.recoverable`), so readers everywhere see it now
   * and not at the next append; other processes' followers are told. A
   * session that cannot be opened (busy, damaged) is left as it is: its
   * next append says why.
   */
  async recoverWriters(): Promise<string[]> {
    const ids = (await this.storage.recoverable?.().catch(() => [])) ?? [];
    const done: string[] = [];
    for (const id of ids) {
      try {
        const nextSeq = await this.writers.reopen(id);
        this.remote?.published(id, nextSeq, this.storage.changeMark?.(sessionKeys(id).meta));
        done.push(id);
      } catch {
        // Left for its next append (which reports the reason).
      }
    }
    return done;
  }

  private assertOpen(): void {
    if (this.closed) throw new PagerError('internal', 'store is closed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const f of [...this.follows]) f.end();
    this.watchers.close();
    this.remote?.close();
    this.polls.close();
    this.backstopPolls.close();
    await this.writers.closeAll();
    this.pages.readers.closeAll();
    if (this.ownsBus) await this.remote?.bus.close();
    if (this.ownsPool) await this.pool.close();
    if (this.closeStorage) await this.storage.close?.();
  }
}

function storageOf(opts: StoreOptions): StorageBackend {
  if (opts.storage !== undefined) return opts.storage;
  if (opts.dataDir === undefined) throw new PagerError('internal', 'openStore needs a dataDir or a storage backend');
  return new LocalBackend(opts.dataDir);
}

export async function openStore(opts: StoreOptions): Promise<PagerStore> {
  if (opts.appendBus === undefined && opts.redisUrl !== undefined) {
    // ioredis loads only for a store that uses it (it costs a serving process's start-up otherwise).
    const { RedisAppendBus } = await import('./store/redis-bus.js');
    const appendBus = new RedisAppendBus(opts.redisUrl, { prefix: opts.redisPrefix, onError: opts.onBusError });
    return finishOpen(new PagerStore({ ...opts, appendBus }, undefined, true), opts);
  }
  return finishOpen(new PagerStore(opts), opts);
}

async function finishOpen(store: PagerStore, opts: StoreOptions): Promise<PagerStore> {
  try {
    if (opts.readOnly !== true) {
      await store.storage.ensureFolder(INDEX);
      await store.recoverWriters();
    }
    void store.decideWarmUp(opts);
  } catch (err) {
    await store.close().catch(() => undefined); // its pool and bus connections would keep the process alive
    throw err;
  }
  return store;
}
