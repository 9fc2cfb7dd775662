/**
 * `openStore(dataDir)`: the library API behind the HTTP service, the CLI and
 * the benchmarks. It owns the process's page-worker pool, the in-process
 * session writers (one per session, holding its lock) and a small cache of
 * session views validated by file stamps.
 *
 * Page path: view (bounded sidecar checks) -> plan from the entry sidecar
 * (bounded backward walk) -> slices decoded by workers -> assembled bytes.
 */
import { promises as fsp, statSync } from 'node:fs';
import { expandRecords } from './core/chunk-codec.js';
import { PagerError } from './core/errors.js';
import { planPage, planRange, type FrameSpan, type PagePlan } from './core/page-planner.js';
import { resolvePageParams, type ResolvedParams } from './core/page-rule.js';
import { PageCache } from './page-cache.js';
import { decodeCost, sliceStarts } from './core/slice-cuts.js';
import type { Page, PageParams, SessionEvent, SessionHeaderInit } from './core/types.js';
import { assemblePage, parseSlice, type ParsedSlice } from './page-assembler.js';
import { assertSessionId, indexDir, sessionPaths, sessionsDir, type SessionPaths } from './paths.js';
import { catalogState, loadSessionState, needsRepair, type SessionState, type SessionStatus, type StateProblem } from './session-state.js';
import { SessionWriter, type AppendResult } from './session-writer.js';
import type { CatalogEntry, FollowListener, PageBuffer, PageVersion, Store, StoreStats } from './store-types.js';
import { createPagePool, runSlice, type PagePool } from './worker-pool.js';
import { warmUpPlanner } from './planner-warmup.js';
import { warmUpPagePath } from './page-path-warmup.js';
import { crcPath, metaPath } from './crc-projection.js';
import { indexPath } from './index-projection.js';
import { FrameIndexFile } from '../streams/frame-index-file.js';
import { CRC_RECORD_BYTES, readCrcRecordsFrom, readCrcRecordsAt, recordOffset, sliceCrcRecords } from '../streams/frame-crc-file.js';
import { META_RECORD_BYTES, readMetaRecordsAt } from '../streams/frame-meta-file.js';
import { EntriesFile, EntryFormatError } from '../streams/entries-file.js';
import type { FrameEncoding } from '../streams/frame-codec.js';
import { sliceTask, type SliceTask } from '../workers/slice-protocol.js';
import { checkPlan, checkRange } from './core/plan-check.js';
import { sliceDigests } from './core/frame-claim.js';
import { IndexTrust } from './index-trust.js';
import { ChangeWatchers } from '../storage/local/change-watch.js';
import { EventFollower, type FollowOptions } from './event-follow.js';

/** A plan, and when it came from the binary frame index, the record number of its last frame. */
type IndexedPlan = PagePlan & { fromIndex?: boolean; lastRecord?: number };

export interface StoreOptions {
  dataDir: string;
  /** Page worker threads (default: available cores, at most 8). */
  workers?: number;
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
   * Only read: do not create the data directory's layout on open (a command
   * that reads one page must not leave directories behind, say under a
   * mistyped --data). Writes through such a store still create what they need.
   */
  readOnly?: boolean;
  /** Followers' backstop poll of a watched session's entry sidecar, ms (default 2000; storage/local/change-watch.ts). */
  watchPollMs?: number;
}

/** What the page path needs to know of a session, from bounded reads only. */
interface SessionView {
  paths: SessionPaths;
  status: SessionStatus;
  reasons: string[];
  nextSeq: number;
  entriesSize: number;
  indexedLength: number;
  frameCount: number;
  /** Changes whenever the session's files may have: keys cached pages. */
  version: string;
}

/**
 * A second slice pays for its extra worker hop (~0.1-0.2 ms here) once a page
 * decodes for more than ~0.3 ms: ~500,000 byte-equivalents, ~250 typical
 * frames. (Measured on the typical-page benchmark: 512 Ki and 1 Mi gave the
 * same p50, 2 Mi a worse one.)
 */
const DEFAULT_SPLIT_COST = 512 * 1024;

/**
 * Slices this large return the worker's arena as their result: copying 3 MB
 * into fresh memory cost ~1.8 ms (page faults and the pass), a 100 KB slice's
 * copy ~20 µs, and a small slice keeps the worker's arena warm for the next.
 */
const DEFAULT_IN_PLACE_BYTES = 512 * 1024;

/** Result buffers kept for reuse as worker arenas: at most this many bytes in all. */
const SPARE_MAX_TOTAL_BYTES = 128 * 1024 * 1024;

/** Sizes, mtimes and inodes of a session's files: a view is reused while they are unchanged. Sync: three page-cache stats cost less than one thread-pool hop. */
async function stamp(paths: SessionPaths): Promise<string> {
  let out = '';
  for (const p of [paths.events, paths.entries, paths.meta]) {
    const s = statSync(p, { throwIfNoEntry: false });
    out += s === undefined ? '-|' : `${s.size}:${s.mtimeMs}:${s.ino}|`;
  }
  return out;
}

export class PagerStore implements Store {
  readonly dataDir: string;
  private readonly pool: PagePool;
  private readonly threads: number;
  private readonly splitCost: number;
  private readonly inPlaceBytes: number;
  private readonly format: FrameEncoding;
  private readonly writerIdleMs: number;
  private readonly views = new Map<string, { stamp: string; state: SessionState }>();
  /** Catalog states read from metadata alone (catalogState); never used by pages. */
  private readonly catalogViews = new Map<string, { stamp: string; state: SessionState }>();
  private readonly writers = new Map<string, Promise<SessionWriter>>();
  private readonly idleTimers = new Map<string, NodeJS.Timeout>();
  private readonly listeners = new Map<string, Set<FollowListener>>();
  /** Binary frame indexes found lying: not planned from until their files change. */
  private readonly indexTrust = new IndexTrust((path) => {
    const s = statSync(path, { throwIfNoEntry: false });
    return s === undefined ? '-' : `${s.size}:${s.mtimeMs}:${s.ino}`;
  });
  /** Frames found corrupt by pages, per session: the session shows degraded. */
  private readonly damage = new Map<string, StateProblem[]>();
  private readonly pageCache: PageCache;
  private readonly watchers: ChangeWatchers;
  private readonly follows = new Set<EventFollower>();
  /** Consumed result buffers, handed back to workers as arenas (see recycle). */
  private readonly spares: ArrayBuffer[] = [];
  private cacheHits = 0;
  private cacheMisses = 0;
  private pagesServed = 0;
  private closed = false;

  /** Whether close() ends the pool (not when it was lent by another store). */
  private readonly ownsPool: boolean;

  /** `pool`: another store's, for a store that only borrows it (the page-path warm-up's). */
  constructor(opts: StoreOptions, pool?: PagePool) {
    this.dataDir = opts.dataDir;
    this.ownsPool = pool === undefined;
    this.pool = pool ?? createPagePool({ threads: opts.workers, maxQueue: opts.maxQueue });
    this.threads = this.pool.options.maxThreads;
    this.splitCost = opts.splitCost ?? DEFAULT_SPLIT_COST;
    this.inPlaceBytes = opts.inPlaceBytes ?? DEFAULT_IN_PLACE_BYTES;
    this.format = opts.format ?? 'jsonl';
    this.writerIdleMs = opts.writerIdleMs ?? 60_000;
    this.pageCache = new PageCache(opts.pageCacheBytes ?? 64 * 1024 * 1024);
    this.watchers = new ChangeWatchers(opts.watchPollMs);
  }

  // -------------------------------------------------------------------------
  // Session views

  private async loadState(paths: SessionPaths): Promise<SessionState> {
    return (await this.loadStamped(paths)).state;
  }

  /**
   * A session's state for the catalog: a page's view if still fresh by its
   * stamp; else the metadata alone when the files are as it last wrote them
   * (kept by stamp too, apart from the views pages use); else full checks.
   */
  private async catalogView(paths: SessionPaths): Promise<SessionState> {
    const s = await stamp(paths);
    const cached = this.views.get(paths.id) ?? this.catalogViews.get(paths.id);
    if (cached !== undefined && cached.stamp === s) {
      this.cacheHits++;
      return cached.state;
    }
    const fast = catalogState(paths);
    if (fast !== null) {
      if ((await stamp(paths)) === s) this.catalogViews.set(paths.id, { stamp: s, state: fast });
      return fast;
    }
    return this.loadState(paths);
  }

  /** The session's state and the file stamp it was read under ('' when the files moved meanwhile). */
  private async loadStamped(paths: SessionPaths): Promise<{ state: SessionState; stamp: string }> {
    const s = await stamp(paths);
    const cached = this.views.get(paths.id);
    if (cached !== undefined && cached.stamp === s) {
      this.cacheHits++;
      return cached;
    }
    this.cacheMisses++;
    const state = await loadSessionState(paths);
    // Stamp again: if a file moved while we read, do not cache a mixed view.
    if ((await stamp(paths)) !== s) return { state, stamp: '' };
    const entry = { stamp: s, state };
    this.views.set(paths.id, entry);
    return entry;
  }

  private async view(id: string): Promise<SessionView> {
    assertSessionId(id);
    const paths = sessionPaths(this.dataDir, id);
    const writer = await this.writers.get(id)?.catch(() => undefined);
    if (writer !== undefined) {
      // The in-process writer knows exactly what is committed; no file reads needed.
      const m = writer.metadata;
      const reasons = m.issues.map((i) => i.message);
      return { paths, status: reasons.length ? 'degraded' : 'ok', reasons, nextSeq: m.nextSeq, entriesSize: m.entriesLength, indexedLength: m.indexedLength, frameCount: m.frameCount, version: `w${m.indexedLength}:${m.entriesLength}` };
    }
    const stamped = await this.loadStamped(paths);
    const state = this.withDamage(stamped.state);
    if (state.status === 'repair_required' && state.problems[0]?.code === 'log_missing') {
      const metaExists = await fsp.access(paths.meta).then(
        () => true,
        () => false,
      );
      if (!metaExists) throw new PagerError('session_not_found', `session ${id} not found`);
    }
    return { paths, status: state.status, reasons: state.reasons, nextSeq: state.nextSeq, entriesSize: state.entriesSize, indexedLength: state.indexedLength, frameCount: state.frameCount, version: stamped.stamp };
  }

  private servable(id: string, v: SessionView): void {
    if (v.status === 'repair_required') {
      throw new PagerError('repair_required', `session ${id} needs repair: ${v.reasons.join('; ')}`, { reasons: v.reasons });
    }
  }

  // -------------------------------------------------------------------------
  // Catalog

  private catalogEntry(id: string, raw: SessionState): CatalogEntry {
    const state = this.withDamage(raw);
    const m = state.meta;
    return {
      id,
      status: state.status,
      reasons: state.reasons,
      title: m?.title ?? null,
      createdAt: m?.createdAt ?? null,
      updatedAt: m?.updatedAt ?? null,
      nextSeq: state.nextSeq,
      lastSeq: state.nextSeq - 1,
      eventCount: state.nextSeq,
      frameCount: state.frameCount,
      indexedLength: state.indexedLength,
      logSize: state.logSize,
      hasUserMessage: m?.hasUserMessage ?? false,
      provider: m?.provider ?? null,
      model: m?.model ?? null,
      agentPreset: m?.agentPreset ?? null,
      lastCompactionSeq: m?.lastCompactionSeq ?? null,
      tokens: m?.tokens ?? null,
      metaStale: state.metaStale,
      format: m?.format ?? null,
      header: m?.header ?? null,
    };
  }

  async list(): Promise<CatalogEntry[]> {
    const ids = new Set<string>();
    const names = await Promise.all([
      fsp.readdir(sessionsDir(this.dataDir)).catch(() => [] as string[]),
      fsp.readdir(indexDir(this.dataDir)).catch(() => [] as string[]),
    ]);
    for (const n of names[0]) if (n.endsWith('.events')) ids.add(n.slice(0, -'.events'.length));
    for (const n of names[1]) if (n.endsWith('.index.json')) ids.add(n.slice(0, -'.index.json'.length));
    const sorted = [...ids].filter((id) => {
      try {
        assertSessionId(id);
        return true;
      } catch {
        return false;
      }
    });
    sorted.sort();
    const out: CatalogEntry[] = new Array(sorted.length);
    // Bounded concurrency: thousands of sessions must not open thousands of files at once.
    let next = 0;
    const work = async () => {
      while (next < sorted.length) {
        const i = next++;
        const id = sorted[i] as string;
        try {
          const paths = sessionPaths(this.dataDir, id);
          // A view still fresh by its stamp; else the metadata alone when the files are as it
          // last wrote them; else the full checks.
          out[i] = this.catalogEntry(id, await this.catalogView(paths));
        } catch (err) {
          // A bad session never fails the catalog.
          out[i] = this.catalogEntry(id, needsRepair(sessionPaths(this.dataDir, id), { code: 'internal', message: `cannot be read: ${(err as Error).message}` }, null));
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(16, sorted.length) }, work));
    return out;
  }

  async info(id: string): Promise<CatalogEntry> {
    assertSessionId(id);
    const paths = sessionPaths(this.dataDir, id);
    await this.view(id); // session_not_found when absent
    const writer = await this.writers.get(id)?.catch(() => undefined);
    if (writer !== undefined) this.views.delete(id);
    return this.catalogEntry(id, await this.loadState(paths));
  }

  async nextSeq(id: string): Promise<number> {
    return (await this.view(id)).nextSeq;
  }

  // -------------------------------------------------------------------------
  // Pages

  private async withEntries<T>(v: SessionView, fn: (entries: EntriesFile) => Promise<T>): Promise<T> {
    let entries: EntriesFile;
    try {
      entries = await EntriesFile.open(v.paths.entries, v.entriesSize);
    } catch (err) {
      throw new PagerError('repair_required', `session ${v.paths.id}: entry sidecar unreadable: ${(err as Error).message}`);
    }
    try {
      return await fn(entries);
    } catch (err) {
      if (err instanceof EntryFormatError) throw new PagerError('repair_required', `session ${v.paths.id}: ${err.message}`);
      throw err;
    } finally {
      await entries.close();
    }
  }

  /** Byte position just after the entry line of the frame holding `seq`. */
  private async lineEndFor(entries: EntriesFile, v: SessionView, seq: number): Promise<number> {
    if (seq >= v.nextSeq - 1) return v.entriesSize;
    const located = await entries.findBySeq(seq);
    if (located === null) throw new PagerError('repair_required', `session ${v.paths.id}: entry sidecar has no frame for seq ${seq}`);
    return located.end;
  }

  async plan(id: string, params: PageParams = {}): Promise<{ view: SessionView; plan: PagePlan }> {
    const v = await this.view(id);
    this.servable(id, v);
    return { view: v, plan: await this.planResolved(v, resolvePageParams(params, v.nextSeq - 1)) };
  }

  /**
   * Plan from the binary frame index when it is whole for this session
   * (typed records, no parsing), else from the JSONL entry sidecar.
   */
  private async planResolved(v: SessionView, r: ResolvedParams, useIndex = true): Promise<IndexedPlan> {
    if (r.end <= 0) return { throughSeq: r.throughSeq, fromSeq: 0, toSeq: 0, hasMore: false, span: null };
    const index = useIndex && this.indexTrust.usable(v.paths) ? FrameIndexFile.openIfWhole(indexPath(v.paths), v.frameCount, v.indexedLength, v.nextSeq) : null;
    if (index !== null) {
      try {
        const from = r.end - 1 >= v.nextSeq - 1 ? index.records - 1 : index.findBySeq(r.end - 1);
        const plan = await planPage(r, index.backwardFrom(from));
        // A plan that does not fit the session: the index is damaged, the sidecar plans instead.
        if (checkPlan(plan, v) === null) return { ...plan, fromIndex: true, lastRecord: from };
      } catch {
        // A record that cannot be read is as good as a lying one.
      } finally {
        index.close();
      }
      this.indexTrust.drop(v.paths);
    }
    const plan = await this.withEntries(v, async (entries) => planPage(r, entries.backwardFrom(await this.lineEndFor(entries, v, r.end - 1))));
    const why = checkPlan(plan, v);
    if (why !== null) throw new PagerError('repair_required', `session ${v.paths.id}: the entry sidecar is inconsistent (${why}): run repair`);
    return plan;
  }

  /**
   * Cut a span into slices of about equal decode cost (core/slice-cuts.ts),
   * one per worker at most, one per `splitCost`.
   */
  private slices(path: string, span: FrameSpan | null, fromSeq: number, toSeq: number): SliceTask[] {
    if (span === null) return [];
    const { last } = span;
    const cuts = sliceStarts(span, Math.max(1, Math.min(this.threads, Math.ceil(decodeCost(span.count, span.bytes) / this.splitCost))));
    const end = last.offset + last.length;
    const endSeq = last.seq + last.count;
    // What the plan claims of each slice's frames, for the worker to check (core/frame-claim.ts).
    const digests = sliceDigests(span, cuts);
    return cuts.map((c, i) => {
      const nxt = cuts[i + 1];
      const t = sliceTask(path, c.offset, nxt?.offset ?? end, c.seq, nxt?.seq ?? endSeq, fromSeq, toSeq);
      t.digest = digests[i] as number;
      return t;
    });
  }

  /**
   * Attach each slice's frame-checksum records (one read for the span), when
   * the session has the projection. A span planned from the frame index
   * knows its record numbers, which are the projection's too when it holds
   * one record per frame (checked on the first frame's offset); otherwise
   * the records are found by binary search on offsets.
   */
  private withChecksums(paths: SessionPaths, tasks: SliceTask[], frames: number, lastRecord?: number): SliceTask[] {
    if (tasks.length === 0) return tasks;
    const start = (tasks[0] as SliceTask).start;
    let records: Uint8Array | null = null;
    // Row metadata, record for record with the checksums (record k of both files is the same frame's).
    let meta: Uint8Array | null = null;
    if (lastRecord !== undefined) {
      // The span's records and the one before (the chain's seed).
      const first = lastRecord - frames + 1;
      const seed = first > 0 ? 1 : 0;
      const byNumber = readCrcRecordsAt(crcPath(paths), first - seed, frames + seed);
      if (byNumber !== null && recordOffset(byNumber, seed) === start) {
        records = byNumber;
        meta = readMetaRecordsAt(metaPath(paths), first - seed, frames + seed);
      }
    }
    if (records === null) {
      // By offset: row metadata by the same record numbers (bound to its frames by their CRCs).
      const found = readCrcRecordsFrom(crcPath(paths), start, (tasks[tasks.length - 1] as SliceTask).end, frames);
      if (found === null) return tasks;
      records = found.records;
      meta = readMetaRecordsAt(metaPath(paths), found.first, records.byteLength / CRC_RECORD_BYTES);
    }
    for (const t of tasks) {
      const crcs = sliceCrcRecords(records, t.start, t.end);
      if (crcs === null) continue;
      // Copies: a view would take its whole backing buffer along to the worker.
      t.crcs = new Uint8Array(crcs);
      if (meta !== null) {
        const k = (crcs.byteOffset - records.byteOffset) / CRC_RECORD_BYTES;
        t.meta = new Uint8Array(meta.subarray(k * META_RECORD_BYTES, (k + crcs.byteLength / CRC_RECORD_BYTES) * META_RECORD_BYTES));
      }
    }
    return tasks;
  }

  /**
   * Decode slices on the pool. A frame that fails its checksum or decode
   * fails the page with `corrupt_range` naming that frame's seq range (from
   * the entry sidecar), and marks the session degraded for the catalog.
   */
  private async decode(id: string, v: SessionView, tasks: SliceTask[], recordDamage = true) {
    // Consumed large results go back to the workers as arenas (page-task.ts): memory already paged in.
    for (const t of tasks) {
      if (t.end - t.start >= this.inPlaceBytes) t.inPlace = true;
      const spare = this.spares.pop();
      if (spare !== undefined) t.arena = spare;
    }
    const results = await Promise.all(tasks.map((t) => runSlice(this.pool, t)));
    const out = [];
    for (const r of results) {
      if (r instanceof ArrayBuffer) {
        out.push(parseSlice(r));
        continue;
      }
      const { offset, reason, kind } = r.error;
      // The worker knows the seq the bad frame should start at; the sidecar knows how many it holds.
      // (Not for claims: those name the whole slice whose frames the plan misdescribed.)
      const entry = r.error.kind === 'claim' ? null : await this.withEntries(v, (entries) => entries.findBySeq(r.error.fromSeq)).catch(() => null);
      const fromSeq = entry?.entry.offset === offset ? entry.entry.seq : r.error.fromSeq;
      const toSeq = entry?.entry.offset === offset ? entry.entry.seq + Math.max(1, entry.entry.count) : r.error.toSeq;
      const message = `events [${fromSeq}, ${toSeq}) cannot be read: ${reason}`;
      if (recordDamage) this.noteDamage(id, { code: kind === 'claim' ? 'entries_disagree' : 'corrupt_frame', message: kind === 'claim' ? `${message} (run repair)` : message, offset, fromSeq, toSeq });
      throw new PagerError('corrupt_range', message, { fromSeq, toSeq, offset, kind });
    }
    return out;
  }

  /**
   * Keep the result buffers of an assembled page for later tasks (the page
   * was copied out of them): those of in-place size (arenas; smaller results
   * are cheap fresh copies), one per worker, bounded in bytes.
   */
  private recycle(slices: readonly ParsedSlice[]): void {
    for (const s of slices) {
      const b = s.buffer;
      if (b.byteLength < this.inPlaceBytes || this.spares.length >= this.threads) continue;
      if (this.spares.reduce((a, x) => a + x.byteLength, b.byteLength) > SPARE_MAX_TOTAL_BYTES) continue;
      this.spares.push(b);
    }
  }

  private noteDamage(id: string, problem: StateProblem): void {
    let list = this.damage.get(id);
    if (list === undefined) {
      list = [];
      this.damage.set(id, list);
    }
    if (!list.some((p) => p.offset === problem.offset)) list.push(problem);
  }

  /** Fold damage found by pages into a state (the files say nothing of it until doctor or repair). */
  private withDamage(state: SessionState): SessionState {
    const found = this.damage.get(state.id);
    if (found === undefined || state.status === 'repair_required') return state;
    const fresh = found.filter((p) => !state.problems.some((q) => q.offset === p.offset && q.code === p.code));
    if (fresh.length === 0) return state;
    return { ...state, status: 'degraded', reasons: [...state.reasons, ...fresh.map((p) => p.message)], problems: [...state.problems, ...fresh] };
  }

  async pageBuffer(id: string, params: PageParams = {}, signal?: AbortSignal): Promise<PageBuffer> {
    this.assertOpen();
    const view = await this.view(id);
    this.servable(id, view);
    const r = resolvePageParams(params, view.nextSeq - 1);
    // A page is a function of the session's files and the resolved parameters.
    const key = view.version === '' ? null : `${id}\n${view.version}\n${r.throughSeq}:${r.end}:${r.maxMessages}:${r.maxBytes ?? ''}`;
    const hit = key === null ? undefined : this.pageCache.get(key);
    if (hit !== undefined) {
      this.pagesServed++;
      return hit;
    }
    const t0 = performance.now();
    let plan = await this.planResolved(view, r);
    const t1 = performance.now();
    // The client left while we planned: queue nothing for it.
    signal?.throwIfAborted();
    const decodePlan = (p: IndexedPlan) =>
      this.decode(id, view, this.withChecksums(view.paths, this.slices(view.paths.events, p.span, p.fromSeq, p.toSeq), p.span?.count ?? 0, p.lastRecord), p.fromIndex !== true);
    let slices;
    try {
      slices = await decodePlan(plan);
    } catch (err) {
      // A damaged binary index must never fail a page the log can serve: plan again from the sidecar.
      if (!(plan.fromIndex === true && err instanceof PagerError && err.code === 'corrupt_range')) throw err;
      // Frames that contradict the index's claims: the index lies, and is not used again.
      if (err.details?.kind === 'claim') this.indexTrust.drop(view.paths);
      plan = await this.planResolved(view, r, false);
      slices = await decodePlan(plan);
    }
    const t2 = performance.now();
    const env = { sessionId: id, throughSeq: plan.throughSeq, fromSeq: plan.fromSeq, toSeq: plan.toSeq, hasMore: plan.hasMore };
    const body = assemblePage(env, slices);
    this.recycle(slices);
    this.pagesServed++;
    const t3 = performance.now();
    const logBytesRead = slices.reduce((a, s) => a + s.bytesRead, 0);
    const read = Math.max(0, ...slices.map((s) => s.readMs));
    const decode = Math.max(0, ...slices.map((s) => s.decodeMs));
    const timing = { plan: t1 - t0, read, decode, pool: Math.max(0, t2 - t1 - Math.max(0, ...slices.map((s) => s.readMs + s.decodeMs))), assemble: t3 - t2, total: t3 - t0 };
    const page: PageBuffer = { body, ...env, frames: plan.span?.count ?? 0, frameBytes: plan.span?.bytes ?? 0, logBytesRead, timing };
    if (key !== null) {
      // A cached page was not built by the request that gets it: no timing.
      const { timing: _built, ...prepared } = page;
      this.pageCache.set(key, prepared, r.throughSeq === view.nextSeq - 1 && r.end === r.throughSeq + 1);
    }
    return page;
  }

  async pageVersion(id: string): Promise<PageVersion> {
    this.assertOpen();
    const v = await this.view(id);
    // Inode and birth time: a log made anew (even at a reused inode) is another log.
    const s = statSync(v.paths.events, { throwIfNoEntry: false });
    return { nextSeq: v.nextSeq, servable: v.status !== 'repair_required', incarnation: s === undefined ? '' : `${s.ino}:${s.birthtimeMs}` };
  }

  async page(id: string, params: PageParams = {}): Promise<Page> {
    const pb = await this.pageBuffer(id, params);
    return JSON.parse(pb.body.toString('utf8')) as Page;
  }

  async readEvents(id: string, fromSeq: number, toSeq: number): Promise<SessionEvent[]> {
    this.assertOpen();
    const v = await this.view(id);
    this.servable(id, v);
    const to = Math.min(toSeq, v.nextSeq);
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 0) throw new PagerError('invalid_request', 'fromSeq must be a non-negative integer');
    if (to <= fromSeq) return [];
    const span = await this.withEntries(v, async (entries) => planRange(fromSeq, to, entries.backwardFrom(await this.lineEndFor(entries, v, to - 1))));
    const why = checkRange(span, fromSeq, to, v);
    if (why !== null) throw new PagerError('repair_required', `session ${id}: the entry sidecar is inconsistent (${why}): run repair`);
    const slices = await this.decode(id, v, this.withChecksums(v.paths, this.slices(v.paths.events, span, fromSeq, to), span?.count ?? 0));
    const body = assemblePage({ sessionId: id, throughSeq: to - 1, fromSeq, toSeq: to, hasMore: fromSeq > 0 }, slices);
    this.recycle(slices);
    return expandRecords((JSON.parse(body.toString('utf8')) as Page).records);
  }

  // -------------------------------------------------------------------------
  // Writes

  private touchWriter(id: string): void {
    clearTimeout(this.idleTimers.get(id));
    const t = setTimeout(() => void this.closeWriter(id), this.writerIdleMs);
    t.unref();
    this.idleTimers.set(id, t);
  }

  private async closeWriter(id: string): Promise<void> {
    const w = this.writers.get(id);
    clearTimeout(this.idleTimers.get(id));
    this.idleTimers.delete(id);
    if (w === undefined) return;
    this.writers.delete(id);
    this.views.delete(id);
    await (await w.catch(() => undefined))?.close();
  }

  private attach(id: string, writer: SessionWriter): SessionWriter {
    writer.onAppend((events) => {
      for (const fn of this.listeners.get(id) ?? []) {
        try {
          fn(events);
        } catch {
          // One subscriber's failure does not concern the others.
        }
      }
    });
    this.touchWriter(id);
    return writer;
  }

  private writer(id: string): Promise<SessionWriter> {
    let w = this.writers.get(id);
    if (w === undefined) {
      w = SessionWriter.open(this.dataDir, id).then((wr) => this.attach(id, wr));
      this.writers.set(id, w);
      w.catch(() => this.writers.delete(id));
    }
    return w;
  }

  async create(id: string, header: SessionHeaderInit = {}, opts: { format?: FrameEncoding } = {}): Promise<CatalogEntry> {
    this.assertOpen();
    assertSessionId(id);
    if (this.writers.has(id)) throw new PagerError('session_exists', `session ${id} already exists`);
    const w = SessionWriter.create(this.dataDir, id, header, { format: opts.format ?? this.format }).then((wr) => this.attach(id, wr));
    this.writers.set(id, w);
    try {
      await w;
    } catch (err) {
      this.writers.delete(id);
      throw err;
    }
    this.views.delete(id);
    return this.info(id);
  }

  async append(id: string, events: readonly SessionEvent[]): Promise<AppendResult> {
    this.assertOpen();
    assertSessionId(id);
    const w = await this.writer(id);
    const result = await w.append(events);
    this.touchWriter(id);
    return result;
  }

  subscribe(id: string, listener: FollowListener): () => void {
    let set = this.listeners.get(id);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(id, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(id);
    };
  }

  watch(id: string, listener: () => void, opts: { keepAlive?: boolean } = {}): () => void {
    return this.watchers.watch(id, sessionPaths(this.dataDir, id).entries, listener, opts);
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
   * the whole page path has served a generated session's pages (a serving
   * process does this before it listens, so no request pays for it).
   * `SESSION_PAGER_PAGE_WARMUP=0` skips the second part.
   */
  async warmUp(): Promise<void> {
    const empty = sliceTask('', 0, 0, 0, 0, 0, 0);
    // The planner warms up on this thread while the workers start (see planner-warmup.ts).
    const pagePath = process.env.SESSION_PAGER_PAGE_WARMUP !== '0';
    await Promise.all([warmUpPlanner(12, pagePath), ...Array.from({ length: this.threads * 2 }, () => runSlice(this.pool, empty))]);
    if (!pagePath) return;
    // Results in place from 64 KiB on: its slices then take the in-place path and hand
    // arenas back as real large pages do (a task's arena first set on the second real
    // page deoptimized the planner there, "code dependencies", and recompiled it beside the decode).
    const opts = { splitCost: this.splitCost, pageCacheBytes: 0, inPlaceBytes: 64 * 1024 };
    try {
      await warmUpPagePath(async (dataDir) => {
        await fsp.mkdir(indexDir(dataDir), { recursive: true });
        return new PagerStore({ ...opts, dataDir }, this.pool);
      });
    } catch (err) {
      // Only an optimization: serve without it (first pages slower), but say so.
      process.emitWarning(`page-path warm-up skipped: ${(err as Error).message}`, 'SessionPagerWarning');
    }
    // Real entries generalized some of the planner's object shapes, which discarded its
    // optimized code: optimize it again, now for every shape, before the first real page.
    await warmUpPlanner();
  }

  // -------------------------------------------------------------------------

  stats(): StoreStats {
    return {
      pool: { threads: this.threads, queueSize: this.pool.queueSize, maxQueue: this.pool.options.maxQueue, utilization: this.pool.utilization, completed: this.pool.completed, threadIds: this.pool.threads.map((w) => w.threadId) },
      cache: { hits: this.cacheHits, misses: this.cacheMisses, pageHits: this.pageCache.hits, pageMisses: this.pageCache.misses, pageBytes: this.pageCache.size },
      pagesServed: this.pagesServed,
      follow: { watchedSessions: this.watchers.size, followers: this.follows.size },
    };
  }

  private assertOpen(): void {
    if (this.closed) throw new PagerError('internal', 'store is closed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const f of [...this.follows]) f.end();
    this.watchers.close();
    await Promise.all([...this.writers.keys()].map((id) => this.closeWriter(id)));
    if (this.ownsPool) await this.pool.close();
  }
}

export async function openStore(opts: StoreOptions): Promise<PagerStore> {
  if (opts.readOnly !== true) await fsp.mkdir(indexDir(opts.dataDir), { recursive: true });
  return new PagerStore(opts);
}
