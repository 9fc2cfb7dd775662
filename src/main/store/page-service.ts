/**
 * The page service: one page (or event range) from a session view to
 * assembled bytes. Plan from the binary frame index or the entry sidecar
 * (bounded backward walk), cut the span into slices of about equal decode
 * cost, attach each slice's projection records, decode the slices on the
 * worker pool, assemble; prepared pages are kept in a bounded cache keyed
 * by the view's version.
 */
import type { StorageBackend } from '../../storage/backend.js';
import { sourceString } from '../../storage/worker-reads.js';
import { CRC_RECORD_BYTES, readCrcRecordsFrom, recordOffset, sliceCrcRecords } from '../../streams/frame-crc-file.js';
import { META_RECORD_BYTES, readMetaRecordsAt } from '../../streams/frame-meta-file.js';
import { FrameIndexFile, INDEX_BLOCK_BYTES } from '../../streams/frame-index-file.js';
import { ScratchBlocks } from './block-scratch.js';
import { EntriesFile, EntryFormatError } from '../../streams/entries-file.js';
import { copyRecordsInto, sliceTask, type SliceResult, type SliceTask } from '../../workers/slice-protocol.js';
import { expandRecords } from '../../core/chunk-codec.js';
import { PagerError } from '../../core/errors.js';
import { planPage, planRange, type FrameSpan, type PagePlan } from '../../core/page-planner.js';
import { resolvePageParams, type ResolvedParams } from '../../core/page-rule.js';
import { decodeCost, sliceStarts } from '../../core/slice-cuts.js';
import type { EntryLine, Page, PageParams, SessionEvent } from '../../core/types.js';
import { sliceDigests } from '../../core/frame-claim.js';
import { checkPlan, checkRange } from '../../core/plan-check.js';
import { crcKey, metaKey } from '../crc-projection.js';
import { IndexTrust } from '../index-trust.js';
import { indexKey } from '../index-projection.js';
import { assemblePage, assemblePieces, pageHead, parseSlice, type ParsedSlice } from '../page-assembler.js';
import { PageCache } from '../page-cache.js';
import { DecodeBudget } from './decode-budget.js';
import { KeptReaders } from './kept-readers.js';
import type { PageBuffer, PageSignal, PageVersion } from '../store-types.js';
import { runCompress, runSlice, type PagePool } from '../worker-pool.js';
import { PieceWriter } from '../../core/fragment-run.js';
import { BodyPool } from './body-pool.js';
import { codedForm, codedPage, wholeCodedPage, workerCoding } from '../coded-page.js';
import { compressBody, levelFor, type CodedForm, type OutputCoding, type PageEncoding } from '../page-coding.js';
import type { CodedPiece } from '../../streams/gzip-members.js';
import type { PositionalReader, RangeRead } from '../../streams/positional-reader.js';
import { projectionReadStats, readRecordsInto, u32 } from '../../streams/record-file.js';
import type { SessionView, SessionViews } from './session-views.js';

/** A plan, and when it came from the binary frame index, the record number of its last frame. */
type IndexedPlan = PagePlan & { fromIndex?: boolean; lastRecord?: number };

/** A body compressed on the pool (encodeBody) is cut into pieces of at least this many bytes, one per worker at most. */
const MIN_COMPRESS_PIECE = 256 * 1024;
/** Event reads (follow) of at most this many stored bytes are decoded on the calling thread, not the pool. */
const DECODE_HERE_BYTES = 64 * 1024;
/**
 * While at least as many pages are being built as there are workers, a span of at most this
 * decode cost (core/slice-cuts.ts: a typical 50-message page is ~1.6 M) is one slice: every worker
 * has a page of its own, so a second slice shortens no page and costs a task, a result buffer and
 * the assembler's merge (docs/benchmarks.md, "proof, second round (tenth session)"; from "as many"
 * rather than "more" since its third round: over HTTP at 16 connections the store often holds just
 * two pages, the others being read or written, and those were still cut and assembled).
 */
const ONE_SLICE_UNDER_LOAD_COST = 4 * 1024 * 1024;

/**
 * The worker's decoder, loaded on this thread the first time a follower's
 * step needs it: its module state (encoder sinks, scratch buffers, kept
 * shapes) stays out of the heap of a store that only serves pages, where it
 * doubled the main thread's full collections (docs/benchmarks.md, issue 13).
 */
let decoder: Promise<typeof import('../../workers/page-task.js').decodeInArena> | null = null;
function inThreadDecoder(): Promise<typeof import('../../workers/page-task.js').decodeInArena> {
  decoder ??= import('../../workers/page-task.js').then((m) => m.decodeInArena);
  return decoder;
}

/**
 * A page as the store hands it out or keeps it: one object literal of every field, undefined where
 * absent, for pages built, kept and handed out from the cache alike. A literal's hidden class lives
 * as long as this code (the literal holds it). Built as a spread with fields added after, and copied
 * from the cache with spreads, a page had classes that died with the last page between requests,
 * and a full collection then discarded the code that makes and reads pages ("weak objects" in
 * --trace-deopt: buildPage). One class also keeps that code's checks for it monomorphic.
 */
function pageOf(
  body: Buffer,
  env: { sessionId: string; throughSeq: number; fromSeq: number; toSeq: number; hasMore: boolean },
  frames: number,
  frameBytes: number,
  logBytesRead: number,
  timing: PageBuffer['timing'],
  forms: PageBuffer['forms'],
  encoded: PageBuffer['encoded'],
  release: PageBuffer['release'],
): PageBuffer {
  return { body, sessionId: env.sessionId, throughSeq: env.throughSeq, fromSeq: env.fromSeq, toSeq: env.toSeq, hasMore: env.hasMore, frames, frameBytes, logBytesRead, timing, forms, encoded, release };
}

/**
 * How many of `span`'s frames come before the one at log offset `offset`: 0 for its first frame,
 * a split's count for a split (slices start at those: core/slice-cuts.ts), else -1.
 */
function framesBefore(span: FrameSpan, offset: number): number {
  if (offset === span.first.offset) return 0;
  const { splits } = span;
  let lo = 0;
  let hi = splits.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const o = (splits[mid] as EntryLine).offset;
    if (o === offset) return span.splitFrames[mid] as number;
    if (o < offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Result buffers kept for reuse as worker arenas: at most this many bytes in all. */
const SPARE_MAX_TOTAL_BYTES = 128 * 1024 * 1024;

export interface PageServiceOptions {
  splitCost: number;
  inPlaceBytes: number;
  pageCacheBytes: number;
  decodeBudgetBytes: number;
  /** Large bodies built into reusable memory (body-pool.ts; StoreOptions.bodyPool). */
  bodyPool?: { minBytes?: number; idleMs?: number };
}

export class PageService {
  private readonly threads: number;
  private readonly splitCost: number;
  private readonly inPlaceBytes: number;
  /** How workers reach this store's logs (a task field; '' when slices are read here and handed over). */
  private readonly source: string;
  private readonly pageCache: PageCache;
  /** Memory for large bodies, used again once released by every holder (body-pool.ts). */
  readonly bodies: BodyPool;
  /** Stored bytes of the pages being built at once (decode-budget.ts). */
  readonly budget: DecodeBudget;
  /** Consumed result buffers, handed back to workers as arenas (see recycle). */
  private readonly spares: ArrayBuffer[] = [];
  /** Binary frame indexes found lying: not planned from until their objects change. */
  private readonly indexTrust: IndexTrust;
  /** The projection files' readers, kept open between pages while unchanged (kept-readers.ts). */
  readonly readers: KeptReaders;
  /** Buffers the frame index's blocks are read into, plan after plan (block-scratch.ts). */
  readonly indexBlocks = new ScratchBlocks(INDEX_BLOCK_BYTES);
  pagesServed = 0;
  /** Pages being built now (the small-slice pool asks whether a page is alone: store.ts). */
  inFlight = 0;

  constructor(
    private readonly storage: StorageBackend,
    private readonly pool: PagePool,
    private readonly views: SessionViews,
    opts: PageServiceOptions,
  ) {
    this.threads = pool.options.maxThreads;
    this.splitCost = opts.splitCost;
    this.inPlaceBytes = opts.inPlaceBytes;
    this.source = sourceString(storage.workerSource);
    this.bodies = new BodyPool(opts.bodyPool?.minBytes, opts.bodyPool?.idleMs);
    // The cache holds the body of each page it keeps: its memory is not used again until evicted.
    this.pageCache = new PageCache(opts.pageCacheBytes, undefined, undefined, (page) => this.bodies.release(page.body));
    this.budget = new DecodeBudget(opts.decodeBudgetBytes);
    this.indexTrust = new IndexTrust(storage);
    this.readers = new KeptReaders(storage);
  }

  get cache(): { hits: number; misses: number; size: number } {
    return { hits: this.pageCache.hits, misses: this.pageCache.misses, size: this.pageCache.size };
  }

  /** `read` over the ranges of projection record file `key` (through its kept reader; null when it is missing). */
  private async records(key: string, stamp: string, read: (ranges: RangeRead) => Promise<Buffer | null>): Promise<Buffer | null> {
    const file = await this.readers.ranges(key, stamp);
    if (file === null) return null;
    try {
      return await read(file.read);
    } finally {
      await file.close();
    }
  }

  private servable(id: string, v: SessionView): void {
    if (v.status === 'repair_required') {
      throw new PagerError('repair_required', `session ${id} needs repair: ${v.reasons.join('; ')}`, { reasons: v.reasons });
    }
  }

  private async withEntries<T>(v: SessionView, fn: (entries: EntriesFile) => Promise<T>): Promise<T> {
    let entries: EntriesFile;
    try {
      entries = new EntriesFile(await this.storage.openReader(v.paths.entries, v.entriesSize));
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
    const v = await this.views.view(id, params.throughSeq);
    this.servable(id, v);
    return { view: v, plan: await this.planResolved(v, resolvePageParams(params, v.nextSeq - 1)) };
  }

  /**
   * Plan from the binary frame index when it is whole for this session
   * (typed records, no parsing), else from the JSONL entry sidecar.
   */
  private async planResolved(v: SessionView, r: ResolvedParams, useIndex = true, hint?: Promise<{ lo: number; hi: number } | null>): Promise<IndexedPlan> {
    if (r.end <= 0) return { throughSeq: r.throughSeq, fromSeq: 0, toSeq: 0, hasMore: false, span: null };
    const reader = useIndex && (await this.indexTrust.usable(v.paths)) ? await this.readers.open(indexKey(v.paths), v.version) : null;
    const index = reader === null ? null : await FrameIndexFile.openIfWhole(reader, v.frameCount, v.indexedLength, v.nextSeq, this.indexBlocks);
    if (index !== null) {
      try {
        const from = r.end - 1 >= v.nextSeq - 1 ? index.records - 1 : await index.findBySeq(r.end - 1, await hint);
        const plan = await planPage(r, index.backwardFrom(from));
        // A plan that does not fit the session: the index is damaged, the sidecar plans instead.
        if (checkPlan(plan, v) === null) return { ...plan, fromIndex: true, lastRecord: from };
      } catch {
        // A record that cannot be read is as good as a lying one.
      } finally {
        await index.close();
      }
      await this.indexTrust.drop(v.paths);
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
  private slices(session: string, span: FrameSpan | null, fromSeq: number, toSeq: number): SliceTask[] {
    if (span === null) return [];
    const { last } = span;
    const cost = decodeCost(span.count, span.bytes);
    const end = last.offset + last.length;
    const loaded = this.inFlight >= this.threads && cost <= ONE_SLICE_UNDER_LOAD_COST;
    // A page the pool would decode on this thread (a lone small page: small-slice-pool.ts) is one
    // slice: cut, its slices would run one after the other here, then be assembled and copied.
    const inline = span.bytes <= (this.pool.inlineBytes?.(this.source) ?? 0);
    const cuts = sliceStarts(span, loaded || inline ? 1 : Math.max(1, Math.min(this.threads, Math.ceil(cost / this.splitCost))));
    const endSeq = last.seq + last.count;
    // What the plan claims of each slice's frames, for the worker to check (core/frame-claim.ts).
    const digests = sliceDigests(span, cuts);
    return cuts.map((c, i) => {
      const nxt = cuts[i + 1];
      const t = sliceTask(this.source, session, c.offset, nxt?.offset ?? end, c.seq, nxt?.seq ?? endSeq, fromSeq, toSeq);
      t.digest = digests[i] as number;
      return t;
    });
  }

  /**
   * Attach each slice's frame-checksum and row-metadata records, when the
   * session has the projections. A span planned from the frame index knows
   * its record numbers, which are the projections' too when they hold one
   * record per frame (recordsByNumber: read straight into each slice's
   * buffer); otherwise, or when that does not check out, the records are
   * found by binary search on offsets (one read for the span, then copied
   * slice by slice).
   */
  private async withChecksums(v: SessionView, tasks: SliceTask[], frames: number, lastRecord?: number, span?: FrameSpan | null): Promise<SliceTask[]> {
    if (tasks.length === 0) return tasks;
    const { paths, version } = v;
    const start = (tasks[0] as SliceTask).start;
    if (lastRecord !== undefined && span != null && (await this.recordsByNumber(v, tasks, span, lastRecord))) return tasks;
    let records: Uint8Array | null = null;
    // Row metadata, record for record with the checksums (record k of both files is the same frame's).
    let meta: Uint8Array | null = null;
    if (records === null) {
      // By offset: row metadata by the same record numbers (bound to its frames by their CRCs).
      const file = await this.readers.open(crcKey(paths), version);
      if (file === null) return tasks;
      let found;
      try {
        found = await readCrcRecordsFrom(file, start, (tasks[tasks.length - 1] as SliceTask).end, frames);
      } finally {
        await file.close();
      }
      if (found === null) return tasks;
      records = found.records;
      const at = found.first;
      const count = records.byteLength / CRC_RECORD_BYTES;
      meta = await this.records(metaKey(paths), version, (read) => readMetaRecordsAt(read, at, count));
    }
    for (const t of tasks) {
      const crcs = sliceCrcRecords(records, t.start, t.end);
      if (crcs === null) continue;
      const k = (crcs.byteOffset - records.byteOffset) / CRC_RECORD_BYTES;
      const rows = meta === null ? null : meta.subarray(k * META_RECORD_BYTES, (k + crcs.byteLength / CRC_RECORD_BYTES) * META_RECORD_BYTES);
      // One copy holding both, moved to the worker as one buffer (worker-pool.ts runSlice).
      copyRecordsInto(t, crcs, rows);
    }
    return tasks;
  }

  /**
   * withChecksums for a span planned from the frame index (record `lastRecord` is its last
   * frame's): each slice's checksum and row-metadata records read by record number straight
   * into the one buffer that is moved to its worker (the checksums, then the metadata: see
   * below), with no buffer of the span's records between and no copy. Record k of the
   * projections is frame k's for every session this writer made; that is checked on each
   * slice's first and last frame (offsets and end), and any slice that does not fit, or a
   * checksum file missing or short, leaves every slice without records and returns false (the
   * caller then finds them by offset). The records stay derived data: the worker checks them
   * against the frames (frame-crc-file.ts), and they are read through the kept readers, which
   * read a replaced, rewritten or grown file as it is now (kept-readers.ts).
   */
  private async recordsByNumber(v: SessionView, tasks: SliceTask[], span: FrameSpan, lastRecord: number): Promise<boolean> {
    const first = lastRecord - span.count + 1;
    if (first < 0) return false;
    const crcFile = await this.readers.open(crcKey(v.paths), v.version);
    if (crcFile === null) return false;
    const metaFile = await this.readers.open(metaKey(v.paths), v.version);
    try {
      // A page of one slice reads its records where the kept readers hold them (heldRecords): a
      // lone page decoded on this thread (small-slice-pool.ts) moves nothing, and a page for a
      // worker takes views of held bytes only in shared memory (kept-readers.ts), which go to the
      // worker as they are; else its records are copied into a buffer of their own, below. The
      // copy and its fresh buffer (~36 KB a typical page) were ~2% of this thread's CPU at 16
      // connections.
      if (tasks.length === 1 && heldRecords(tasks[0] as SliceTask, crcFile, metaFile, first, span, span.bytes > (this.pool.inlineBytes?.(this.source) ?? 0))) return true;
      // Row metadata while every slice's read is whole (a file shorter than the checksums': none from there on).
      let withMeta = metaFile !== null;
      const records: { both: Uint8Array; crcBytes: number; meta: boolean }[] = [];
      for (let i = 0; i < tasks.length; i++) {
        const t = tasks[i] as SliceTask;
        // The slice's frames, and the record before them (the chain's seed).
        const at = framesBefore(span, t.start);
        const to = i + 1 < tasks.length ? framesBefore(span, (tasks[i + 1] as SliceTask).start) : span.count;
        if (at < 0 || to <= at) return false;
        const seed = first + at > 0 ? 1 : 0;
        const r0 = first + at - seed;
        const n = to - at + seed;
        const crcBytes = n * CRC_RECORD_BYTES;
        // Memory of its own (not a slab of Buffer's pool: the whole slab would be moved), all of it written by the reads.
        const both = new Uint8Array(Buffer.allocUnsafeSlow(crcBytes + (withMeta ? n * META_RECORD_BYTES : 0)).buffer);
        const crcs = both.subarray(0, crcBytes);
        if (!(await readRecordsInto(crcFile, CRC_RECORD_BYTES, r0, crcs))) return false;
        // Record k is frame k's: the slice's first frame starts at its start, its last ends at its end.
        const lastAt = (n - 1) * CRC_RECORD_BYTES;
        if (recordOffset(crcs, seed) !== t.start || recordOffset(crcs, n - 1) + u32(crcs, lastAt + 8) !== t.end) return false;
        if (withMeta) withMeta = await readRecordsInto(metaFile as PositionalReader, META_RECORD_BYTES, r0, both.subarray(crcBytes));
        records.push({ both, crcBytes, meta: withMeta });
      }
      tasks.forEach((t, i) => {
        const { both, crcBytes, meta } = records[i] as (typeof records)[number];
        // Moved to the worker as one buffer (worker-pool.ts runSlice): the checksums, then the metadata
        // to its end, 8-byte aligned as the worker's float64 view needs (16-byte records first).
        if (meta) {
          t.crcs = both.subarray(0, crcBytes);
          t.meta = both.subarray(crcBytes);
        } else t.crcs = both.byteLength === crcBytes ? both : both.slice(0, crcBytes);
      });
      return true;
    } finally {
      await crcFile.close();
      await metaFile?.close();
    }
  }

  /**
   * Decode slices on the pool. A frame that fails its checksum or decode
   * fails the page with `corrupt_range` naming that frame's seq range (from
   * the entry sidecar), and marks the session degraded for the catalog.
   */
  /** Decode the slices on the pool. */
  private async onPool(v: SessionView, tasks: SliceTask[]): Promise<SliceResult[]> {
    // Consumed large results go back to the workers as arenas (page-task.ts): memory already paged in.
    // A backend the workers cannot read: the slices' bytes go with the tasks (moved, not copied).
    if (this.source === '') {
      await Promise.all(
        tasks.map(async (t) => {
          if (t.end > t.start) t.bytes = (await this.storage.read(v.paths.events, t.start, t.end)) ?? Buffer.alloc(0);
        }),
      );
    }
    for (const t of tasks) {
      const len = t.end - t.start;
      if (len >= this.inPlaceBytes) t.inPlace = true;
      // A small whole page is written into a consumed one's buffer when one of about its size is free (body-pool.ts adopt).
      const spare = this.spares.pop() ?? (t.pageHead !== '' && !t.inPlace ? this.bodies.takeSpare(len, 2 * len) : undefined);
      if (spare !== undefined) t.arena = spare;
    }
    if (tasks.length === 1) return [await runSlice(this.pool, tasks[0] as SliceTask, true)];
    return Promise.all(tasks.map((t) => runSlice(this.pool, t)));
  }

  private async decode(id: string, v: SessionView, tasks: SliceTask[], recordDamage = true, here = false) {
    // A few events (a follower's step): decoded on this thread, as a worker would. Two thread
    // hops cost more than the decode, and on a loaded machine each waits for a CPU.
    const decodeHere = here ? await inThreadDecoder() : null;
    const results = decodeHere !== null ? await Promise.all(tasks.map(async (t) => decodeHere(t, t.end > t.start ? ((await this.storage.read(v.paths.events, t.start, t.end)) ?? Buffer.alloc(0)) : Buffer.alloc(0)))) : await this.onPool(v, tasks);
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
      if (recordDamage) this.views.noteDamage(id, { code: kind === 'claim' ? 'entries_disagree' : 'corrupt_frame', message: kind === 'claim' ? `${message} (run repair)` : message, offset, fromSeq, toSeq });
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
      // A page written whole by its worker: the buffer is that page's body now.
      if (s.page !== null) continue;
      if (b.byteLength < this.inPlaceBytes || this.spares.length >= this.threads) continue;
      if (this.spares.reduce((a, x) => a + x.byteLength, b.byteLength) > SPARE_MAX_TOTAL_BYTES) continue;
      this.spares.push(b);
    }
  }

  /**
   * `body` compressed in `coding`: gzip and zstd cut into one piece per
   * worker, compressed on the pool in parallel and joined (coded-page.ts),
   * brotli in one piece (its streams do not concatenate; zlib runs it on the
   * libuv pool).
   */
  async encodeBody(body: Buffer, coding: OutputCoding): Promise<Buffer> {
    return (await this.encodeForm(body, coding, body.length)).body;
  }

  /**
   * `encodeBody`, at the level for `levelBytes` (a page's stored bytes, as a fresh build
   * picks it: docs/decisions.md "Coded tags name their cuts"), with what made its bytes.
   */
  private async encodeForm(body: Buffer, coding: OutputCoding, levelBytes: number): Promise<CodedForm> {
    const level = levelFor(coding.encoding, levelBytes, coding.levels);
    const encoding = coding.encoding;
    if (encoding === 'br') return { encoding, body: await compressBody(body, 'br', level), level, pieces: null };
    const n = Math.max(1, Math.min(this.threads, Math.floor(body.length / MIN_COMPRESS_PIECE)));
    const cuts = Array.from({ length: n + 1 }, (_, i) => Math.round((body.length * i) / n));
    const parts: CodedPiece[] = await Promise.all(cuts.slice(0, -1).map((a, i) => runCompress(this.pool, body.subarray(a, cuts[i + 1]), workerCoding(encoding), level)));
    return codedForm(parts, encoding, level);
  }

  /** The page as asked: `coding` adds its body in that coding (`encoded`), from the cache when it holds that form. */
  async pageBuffer(id: string, params: PageParams = {}, signal?: PageSignal, coding?: OutputCoding, version?: PageVersion): Promise<PageBuffer> {
    this.inFlight++;
    try {
      return await this.buildPage(id, params, signal, coding, version);
    } finally {
      this.inFlight--;
    }
  }

  private async buildPage(id: string, params: PageParams, signal: PageSignal | undefined, coding: OutputCoding | undefined, version: PageVersion | undefined): Promise<PageBuffer> {
    // A store whose reads are round trips fetches the page's index records ahead, beside the view's reads.
    const hint = this.storage.pageHint?.(id, params).catch(() => null);
    const view = await this.views.pageView(id, params.throughSeq, version);
    this.servable(id, view);
    const r = resolvePageParams(params, view.nextSeq - 1);
    // A page is a function of the session's files and the resolved parameters.
    const key = view.version === '' ? null : `${id}\n${view.version}\n${r.throughSeq}:${r.end}:${r.maxMessages}:${r.maxBytes ?? ''}`;
    const hit = key === null ? undefined : this.pageCache.get(key);
    if (hit !== undefined) {
      this.pagesServed++;
      if (coding === undefined) return this.handOut(hit);
      let form = hit.forms?.get(coding.encoding);
      if (form === undefined) {
        // Prepared in another coding (or none): compressed now, on the pool, and kept with it.
        form = await this.encodeForm(hit.body, coding, hit.frameBytes);
        this.pageCache.addForm(key as string, hit, form);
      }
      return this.handOut(hit, form);
    }
    const t0 = performance.now();
    let plan = await this.planResolved(view, r, true, hint);
    const t1 = performance.now();
    // The client left while we planned: queue nothing for it.
    signal?.throwIfAborted();
    // gzip and zstd are compressed by the workers, slice by slice, at the level for the page's size.
    const encoding: PageEncoding | null = coding?.encoding ?? null;
    const wc = encoding === null ? 0 : workerCoding(encoding);
    const level = (p: IndexedPlan) => (coding === undefined ? 0 : levelFor(coding.encoding, p.span?.bytes ?? 0, coding.levels));
    const decodePlan = async (p: IndexedPlan) => {
      const tasks = this.slices(id, p.span, p.fromSeq, p.toSeq);
      // The log as this request's view stat'ed it: the reader may use a descriptor it kept on that file (log-range.ts).
      const incarnation = view.incarnation ?? '';
      for (const t of tasks) {
        t.incarnation = incarnation;
        t.coding = wc;
        t.level = level(p);
      }
      // One slice, not compressed, under the in-place size: its worker writes the page whole
      // (SliceTask.pageHead), and the body is a view of the result instead of a copy. Such a result
      // is a fresh buffer of its own either way (page-task.ts copies a slice under the in-place
      // size out of its arena), so a pooled body for it (body-pool.ts, from 256 KiB) only added a
      // second buffer, the assembly and a copy. Larger slices return their arena (inPlace), which
      // goes back to the workers (recycle), and keep their pooled body.
      // Compressed, such a page is one piece, coded where it was written (coded-page.ts wholeCodedPage).
      const only = tasks.length === 1 ? (tasks[0] as SliceTask) : null;
      if (only !== null && only.end - only.start < this.inPlaceBytes) only.pageHead = pageHead({ sessionId: id, throughSeq: p.throughSeq, fromSeq: p.fromSeq, toSeq: p.toSeq, hasMore: p.hasMore });
      return this.decode(id, view, await this.withChecksums(view, tasks, p.span?.count ?? 0, p.lastRecord, p.span), p.fromIndex !== true);
    };
    // Room for this page's results among the pages being built (decode-budget.ts): held until it is assembled.
    const release = await this.budget.acquire(plan.span?.bytes ?? 0, signal);
    let slices;
    let t2: number;
    let body: Buffer;
    let encoded: PageBuffer['encoded'];
    let pagePieces: ReturnType<typeof assemblePieces> | null = null;
    // A page its worker wrote whole: its body is a view of that result buffer, which goes back to
    // a worker once the caller releases the page (body-pool.ts spareReleaser), unless the cache keeps it.
    let whole: Uint8Array | null = null;
    try {
      try {
        slices = await decodePlan(plan);
      } catch (err) {
        // A damaged binary index must never fail a page the log can serve: plan again from the sidecar.
        if (!(plan.fromIndex === true && err instanceof PagerError && err.code === 'corrupt_range')) throw err;
        // Frames that contradict the index's claims: the index lies, and is not used again.
        if (err.details?.kind === 'claim') await this.indexTrust.drop(view.paths);
        plan = await this.planResolved(view, r, false);
        slices = await decodePlan(plan);
      }
      t2 = performance.now();
      whole = slices.length === 1 ? (slices[0] as ParsedSlice).page : null;
      if (whole !== null) {
        // Written whole by its worker: the result buffer is the body (recycle leaves it alone), no copy.
        body = Buffer.from(whole.buffer, whole.byteOffset, whole.byteLength);
        if (encoding === 'gzip' || encoding === 'zstd') encoded = wholeCodedPage(whole, (slices[0] as ParsedSlice).coded?.get(whole), encoding, level(plan));
      } else {
        const pieces = assemblePieces({ sessionId: id, throughSeq: plan.throughSeq, fromSeq: plan.fromSeq, toSeq: plan.toSeq, hasMore: plan.hasMore }, slices);
        const w = new PieceWriter(pieces);
        // Held once, by this page's caller (release below).
        body = this.bodies.take(w.byteLength);
        w.writeTo(body, 0);
        pagePieces = pieces;
      }
      if ((encoding === 'gzip' || encoding === 'zstd') && pagePieces !== null) {
        // Joined before the result buffers go back to the workers: the coded pieces are views into them.
        const coded = new Map<Uint8Array, CodedPiece>();
        for (const s of slices) for (const [k, v] of s.coded ?? []) coded.set(k, v);
        encoded = codedPage(pagePieces, coded, encoding, level(plan));
      }
      this.recycle(slices);
    } finally {
      release();
    }
    const env = { sessionId: id, throughSeq: plan.throughSeq, fromSeq: plan.fromSeq, toSeq: plan.toSeq, hasMore: plan.hasMore };
    // brotli: in one piece, after the page is built.
    if (encoding === 'br') encoded = { encoding, body: await compressBody(body, 'br', level(plan)), level: level(plan), pieces: null };
    this.pagesServed++;
    const t3 = performance.now();
    const logBytesRead = slices.reduce((a, s) => a + s.bytesRead, 0);
    const read = Math.max(0, ...slices.map((s) => s.readMs));
    const decode = Math.max(0, ...slices.map((s) => s.decodeMs));
    const code = Math.max(0, ...slices.map((s) => s.codeMs));
    const timing = { plan: t1 - t0, read, decode, pool: Math.max(0, t2 - t1 - Math.max(0, ...slices.map((s) => s.readMs + s.decodeMs + s.codeMs))), assemble: t3 - t2, total: t3 - t0, code };
    const page = pageOf(body, env, plan.span?.count ?? 0, plan.span?.bytes ?? 0, logBytesRead, timing, undefined, encoded, this.bodies.releaser(body));
    if (key !== null) {
      // A cached page was not built by the request that gets it: no timing.
      const prepared = pageOf(body, env, page.frames, page.frameBytes, logBytesRead, undefined, encoded === undefined ? undefined : new Map([[encoded.encoding, encoded]]), undefined, undefined);
      // The cache's hold, taken before it may evict (and so release) anything.
      this.bodies.hold(body);
      if (!this.pageCache.set(key, prepared, r.throughSeq === view.nextSeq - 1 && r.end === r.throughSeq + 1)) {
        this.bodies.release(body);
        if (whole !== null) page.release = this.bodies.spareReleaser(body);
      }
    } else if (whole !== null) page.release = this.bodies.spareReleaser(body);
    return page;
  }

  /** A cached page for one more caller (a copy of the entry): it holds the body until it calls `release`. */
  private handOut(hit: PageBuffer, encoded?: PageBuffer['encoded']): PageBuffer {
    this.bodies.hold(hit.body);
    const release = this.bodies.releaser(hit.body);
    return pageOf(hit.body, hit, hit.frames, hit.frameBytes, hit.logBytesRead, hit.timing, hit.forms, encoded ?? hit.encoded, release);
  }

  async page(id: string, params: PageParams = {}): Promise<Page> {
    const pb = await this.pageBuffer(id, params);
    try {
      return JSON.parse(pb.body.toString('utf8')) as Page;
    } finally {
      pb.release?.();
    }
  }

  async readEvents(id: string, fromSeq: number, toSeq: number): Promise<SessionEvent[]> {
    const v = await this.views.view(id);
    this.servable(id, v);
    const to = Math.min(toSeq, v.nextSeq);
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 0) throw new PagerError('invalid_request', 'fromSeq must be a non-negative integer');
    if (to <= fromSeq) return [];
    const span = await this.withEntries(v, async (entries) => planRange(fromSeq, to, entries.backwardFrom(await this.lineEndFor(entries, v, to - 1))));
    const why = checkRange(span, fromSeq, to, v);
    if (why !== null) throw new PagerError('repair_required', `session ${id}: the entry sidecar is inconsistent (${why}): run repair`);
    const tasks = await this.withChecksums(v, this.slices(id, span, fromSeq, to), span?.count ?? 0);
    const release = await this.budget.acquire(span?.bytes ?? 0);
    let body: Buffer;
    try {
      const slices = await this.decode(id, v, tasks, true, tasks.length === 1 && span !== null && span.bytes <= DECODE_HERE_BYTES);
      body = assemblePage({ sessionId: id, throughSeq: to - 1, fromSeq, toSeq: to, hasMore: fromSeq > 0 }, slices);
      this.recycle(slices);
    } finally {
      release();
    }
    return expandRecords((JSON.parse(body.toString('utf8')) as Page).records);
  }
}

/**
 * recordsByNumber for a page's only slice from checksum and metadata files the kept readers hold
 * whole: the task's records are views of the held bytes (checked as the copies are: the slice's
 * first and last frame), its metadata only when the view is 8-byte aligned (the decoder's float64
 * view; else none, as for a short file). `shared`: the task goes to a worker, so the views must be
 * of shared memory (a view of an ArrayBuffer would be posted as a copy of the whole held file).
 * False (nothing set) when either file is not held (or not in shared memory when asked) or the
 * records do not check out: the caller reads them into a buffer of their own. A task that goes to
 * a worker after all with views of unshared memory gets its records copied then (small-slice-pool.ts
 * ownRecords). Exported for tests.
 */
export function heldRecords(t: SliceTask, crcFile: PositionalReader, metaFile: PositionalReader | null, first: number, span: FrameSpan, shared = false): boolean {
  const at = framesBefore(span, t.start);
  if (at !== 0) return false;
  const seed = first > 0 ? 1 : 0;
  const r0 = first - seed;
  const n = span.count + seed;
  const crcBytes = n * CRC_RECORD_BYTES;
  const crcs = crcFile.heldView?.(r0 * CRC_RECORD_BYTES, crcBytes) ?? null;
  if (crcs === null || crcs.length !== crcBytes || crcs.byteOffset % 4 !== 0) return false;
  if (shared && !(crcs.buffer instanceof SharedArrayBuffer)) return false;
  const lastAt = (n - 1) * CRC_RECORD_BYTES;
  if (recordOffset(crcs, seed) !== t.start || recordOffset(crcs, n - 1) + u32(crcs, lastAt + 8) !== t.end) return false;
  let meta: Buffer | null = null;
  if (metaFile !== null) {
    const m = metaFile.heldView?.(r0 * META_RECORD_BYTES, n * META_RECORD_BYTES) ?? null;
    // Not held: the caller reads both.
    if (m === null) return false;
    if (m.length === n * META_RECORD_BYTES && m.byteOffset % 8 === 0 && (!shared || m.buffer instanceof SharedArrayBuffer)) meta = m;
  }
  projectionReadStats.bytes += crcs.length + (meta?.length ?? 0);
  // Plain Uint8Array views, as the copies are (the held bytes are Buffers): the decode loop sees one class.
  t.crcs = new Uint8Array(crcs.buffer, crcs.byteOffset, crcs.byteLength);
  if (meta !== null) t.meta = new Uint8Array(meta.buffer, meta.byteOffset, meta.byteLength);
  return true;
}
