/**
 * The durable session writer (SPEC section 3). An append is: validate the
 * batch, pack its chunk runs, write its frames at the end of the indexed log,
 * fsync, append the entry lines, fsync, then atomically replace the metadata
 * sidecar. Only then is it acknowledged. One writer per session, across
 * processes (lock file); appends on one writer are serialized.
 */
import { isExists, type Lease, type StorageBackend, type WritableFile } from '../storage/backend.js';
import { sessionKeys, type SessionKeys } from '../storage/layout.js';
import { LocalBackend } from '../storage/local/local-backend.js';
import { scanObject } from '../storage/scan.js';
import { encodeBatch, encodeRecords } from '../streams/batch-encoder.js';
import { validateEvent } from '../core/chunk-codec.js';
import { PagerError } from '../core/errors.js';
import { nestingMessage, valueNestingExceeds } from '../core/nesting.js';
import { emptySummary, foldEvent } from '../core/summary.js';
import type { SessionEvent, SessionHeader } from '../core/types.js';
import { isRowType } from '../core/types.js';
import { CrcProjection } from './crc-projection.js';
import { IndexProjection } from './index-projection.js';
import { writeMeta, type SessionMeta } from './meta-file.js';
import { findInterruptedCreate } from './interrupted-create.js';
import { CATCH_UP_MAX_BYTES, loadSessionState } from './session-state.js';
import { validateRecord, recordSpan, expandRow } from '../core/chunk-codec.js';
import { entryFor } from '../streams/batch-encoder.js';
import { encodeEntry } from '../streams/entry-codec.js';
import type { FrameEncoding } from '../streams/frame-codec.js';
import type { ChunkRow, StorageRecord } from '../core/types.js';

export interface WriterOptions {
  /** fsync every append before acknowledging it (default true). `gen` turns it off and syncs once at close. */
  durable?: boolean;
  /** Frame encoding for new frames (default: jsonl for a new session, the session's own on open). */
  format?: FrameEncoding;
  /** Clock, for tests. */
  now?: () => number;
  /**
   * On create: a note recorded in the metadata's issues until `finish()`, so a
   * session whose writer dies first (SIGKILL: nothing removes it) shows as
   * `degraded` with this reason, never as a healthy shorter session. `gen`
   * uses it: its appends are not durable one by one, so its metadata is only
   * written at create and at close.
   */
  unfinished?: string;
}

/** Code of the recorded issue `WriterOptions.unfinished` places. */
export const UNFINISHED_ISSUE = 'unfinished';

/** What an append did: `{fromSeq, toSeq, nextSeq}` as the HTTP append answers, and what it stored. */
export interface AppendResult {
  fromSeq: number;
  /** Exclusive. */
  toSeq: number;
  /** The seq the next append must start at (equals toSeq). */
  nextSeq: number;
  /** Frames and log bytes the batch took. */
  frames: number;
  bytes: number;
}

/** First wait before a failed metadata write is tried again on its own, ms; doubled per failure up to META_RETRY_MAX_MS. */
export const META_RETRY_MIN_MS = 500;
export const META_RETRY_MAX_MS = 30_000;

export type AppendListener = (events: readonly SessionEvent[], meta: SessionMeta) => void;

/** Largest batch a single append takes, in events. */
export const MAX_BATCH_EVENTS = 100_000;

function checkHeader(id: string, header: unknown, now: number): SessionHeader {
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    throw new PagerError('invalid_request', 'session header must be a JSON object');
  }
  if (valueNestingExceeds(header)) throw new PagerError('invalid_request', nestingMessage('session header'));
  const h = { ...(header as Record<string, unknown>) };
  if (h.type === undefined) h.type = 'session';
  if (h.type !== 'session') throw new PagerError('invalid_request', 'session header type must be "session"');
  if (h.id === undefined) h.id = id;
  if (h.id !== id) throw new PagerError('invalid_request', `session header id ${JSON.stringify(h.id)} does not match ${JSON.stringify(id)}`);
  if (h.createdAt === undefined) h.createdAt = now;
  if (!Number.isSafeInteger(h.createdAt)) throw new PagerError('invalid_request', 'session header createdAt must be a safe integer');
  // Key order: type, version, id, createdAt first, as dsh writes them.
  const { type, version, id: hid, createdAt, ...rest } = h;
  const ordered: Record<string, unknown> = { type };
  if (version !== undefined) ordered.version = version;
  ordered.id = hid;
  ordered.createdAt = createdAt;
  return { ...ordered, ...rest } as SessionHeader;
}

/** Check one append batch against `nextSeq`; returns typed events. */
export function checkBatch(events: unknown, nextSeq: number): SessionEvent[] {
  if (!Array.isArray(events)) throw new PagerError('invalid_request', 'events must be an array');
  if (events.length === 0) throw new PagerError('invalid_request', 'events must not be empty');
  if (events.length > MAX_BATCH_EVENTS) throw new PagerError('payload_too_large', `a batch holds at most ${MAX_BATCH_EVENTS} events`);
  const out: SessionEvent[] = new Array(events.length);
  for (let i = 0; i < events.length; i++) {
    let e: SessionEvent;
    if (valueNestingExceeds(events[i])) throw new PagerError('invalid_request', `events[${i}]: ${nestingMessage('event')}`, { index: i });
    try {
      e = validateEvent(events[i]);
    } catch (err) {
      throw new PagerError('invalid_request', `events[${i}]: ${(err as Error).message}`, { index: i });
    }
    if (isRowType(e.type) || e.type === 'session') {
      throw new PagerError('invalid_request', `events[${i}]: type ${JSON.stringify(e.type)} is reserved for storage records`, { index: i });
    }
    if (e.seq !== nextSeq + i) {
      throw new PagerError('seq_conflict', `events[${i}] has seq ${e.seq}, expected ${nextSeq + i}`, { expectedSeq: nextSeq + i, index: i });
    }
    out[i] = e;
  }
  return out;
}

function writeAll(file: WritableFile, data: Buffer | string, position: number): Promise<void> {
  return file.write(typeof data === 'string' ? Buffer.from(data, 'utf8') : data, position);
}

/** Where a writer's session lives: a backend, or a local data directory. */
export type WriterTarget = StorageBackend | string;

function storageOf(target: WriterTarget): StorageBackend {
  return typeof target === 'string' ? new LocalBackend(target) : target;
}

export class SessionWriter {
  private queue: Promise<unknown> = Promise.resolve();
  private listeners = new Set<AppendListener>();
  private closed = false;
  private dirty = false;
  /**
   * Where the metadata sidecar on storage says the indexed log and the entry sidecar end.
   * Behind `meta` only while a metadata write failed (a full disk) after an append was
   * durable: readers then catch it up from the entry sidecar, which they do up to
   * CATCH_UP_MAX_BYTES (session-state.ts), so appends never take it further behind than that.
   */
  private persisted: { indexedLength: number; entriesLength: number };
  /** The last metadata write's failure while `persisted` lags, and when it is tried again. */
  private metaFailure: Error | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryMs = META_RETRY_MIN_MS;

  private constructor(
    readonly storage: StorageBackend,
    /** The session's keys in `storage`. */
    readonly paths: SessionKeys,
    private meta: SessionMeta,
    private readonly log: WritableFile,
    private readonly entries: WritableFile,
    private readonly lock: Lease,
    private readonly durable: boolean,
    private readonly now: () => number,
    private readonly crc: CrcProjection,
    private readonly idx: IndexProjection,
  ) {
    this.persisted = { indexedLength: meta.indexedLength, entriesLength: meta.entriesLength };
  }

  get id(): string {
    return this.paths.id;
  }

  get nextSeq(): number {
    return this.meta.nextSeq;
  }

  /** A copy of the current metadata. */
  get metadata(): SessionMeta {
    return { ...this.meta, tokens: { ...this.meta.tokens }, issues: [...this.meta.issues] };
  }

  onAppend(fn: AppendListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * Create a new session, atomically (docs/decisions.md, "Creates are
   * atomic"): the header frame is placed whole by the backend's exclusive
   * create (local: written and fsynced under a temp name, then hard-linked
   * into place, so a log never appears empty or half-written), then the
   * entry sidecar and last the metadata, which acknowledges the create. A
   * crash before that leaves an interrupted create (interrupted-create.ts),
   * whose id a new create takes over.
   */
  static async create(target: WriterTarget, id: string, header: unknown, opts: WriterOptions = {}): Promise<SessionWriter> {
    const storage = storageOf(target);
    const now = opts.now ?? Date.now;
    const paths = sessionKeys(id);
    const h = checkHeader(id, header, now());
    const format = opts.format ?? 'jsonl';
    const lock = await storage.lease(paths.lock, `session ${id}`);
    let log: WritableFile | undefined;
    let entries: WritableFile | undefined;
    /** The log was placed by this create, which has not been acknowledged yet. */
    let placed = false;
    try {
      const takeOver = (await storage.stat(paths.events)) !== null;
      if (takeOver && (await findInterruptedCreate(paths, storage)) === null) throw new PagerError('session_exists', `session ${id} already exists`);
      const enc = encodeRecords([h as unknown as StorageRecord], 0, format);
      // The header entry: seq 0, count 0, kind "session".
      const headerEntry = encodeEntry({ v: 1, seq: 0, count: 0, offset: 0, length: enc.bytes.length, kind: 'session', schema: 1 });
      if (takeOver) {
        // Never acknowledged: drop it and what it left. The exclusive create below still fails if someone else placed a log meanwhile.
        await storage.remove(paths.events);
        await storage.removeAll(paths.projections);
      }
      try {
        // Under the session's lease: no one else creates this key meanwhile (the backend may clear a crashed create's leftovers).
        await storage.createExclusive(paths.events, enc.bytes);
        placed = true;
      } catch (err) {
        if (isExists(err)) throw new PagerError('session_exists', `session ${id} already exists`);
        throw err;
      }
      await storage.replace(paths.entries, Buffer.from(headerEntry, 'utf8'));
      log = await storage.openWritable(paths.events, 'existing');
      entries = await storage.openWritable(paths.entries, 'existing');
      const st = await log.stat();
      const t = now();
      const meta: SessionMeta = {
        v: 1,
        id,
        header: h,
        format,
        fingerprint: { size: st.size, mtimeMs: st.mtimeMs },
        nextSeq: 0,
        eventCount: 0,
        frameCount: 1,
        indexedLength: enc.bytes.length,
        entriesLength: Buffer.byteLength(headerEntry),
        createdAt: typeof h.createdAt === 'number' ? h.createdAt : t,
        updatedAt: t,
        ...emptySummary(h),
        issues: opts.unfinished !== undefined ? [{ code: UNFINISHED_ISSUE, message: opts.unfinished }] : [],
      };
      await writeMeta(storage, paths.meta, meta);
      placed = false;
      const crc = await CrcProjection.open(storage, paths, enc.bytes.length, true);
      await crc.append(enc.bytes, 0, enc.lengths);
      return new SessionWriter(storage, paths, meta, log, entries, lock, opts.durable ?? true, now, crc, await IndexProjection.create(storage, paths, enc.bytes.length));
    } catch (err) {
      await log?.close().catch(() => undefined);
      await entries?.close().catch(() => undefined);
      if (placed && storage.kind === 'local') {
        // A create that failed while the process lives (a full disk: the entry sidecar or the
        // metadata could not be written) is taken back whole, as a crash's would be by the next
        // create of the id: until then the catalog listed a session that was never acknowledged,
        // repair_required, and GET answered it. (Local files only: on S3 a create that could not
        // publish may have been fenced by another writer, whose objects these keys may be now.)
        await storage.remove(paths.meta).catch(() => undefined);
        await storage.remove(paths.entries).catch(() => undefined);
        await storage.removeAll(paths.projections).catch(() => undefined);
        await storage.remove(paths.events).catch(() => undefined);
      }
      await lock.release();
      throw err;
    }
  }

  /**
   * Open an existing session for appending. Stale metadata is caught up and
   * persisted; complete valid frames past the indexed end are indexed (a scan
   * of that tail only); a torn tail or a broken sidecar refuses with
   * `repair_required`.
   */
  static async open(target: WriterTarget, id: string, opts: WriterOptions = {}): Promise<SessionWriter> {
    const storage = storageOf(target);
    const now = opts.now ?? Date.now;
    const paths = sessionKeys(id);
    if ((await storage.stat(paths.events)) === null) throw new PagerError('session_not_found', `session ${id} not found`);
    const lock = await storage.lease(paths.lock, `session ${id}`);
    let log: WritableFile | undefined;
    let entries: WritableFile | undefined;
    let crc: CrcProjection | undefined;
    let idx: IndexProjection | undefined;
    try {
      const state = await loadSessionState(paths, storage);
      if (state.status === 'repair_required' || state.meta === null) {
        throw new PagerError('repair_required', `session ${id} needs repair: ${state.reasons.join('; ')}`, { reasons: state.reasons });
      }
      log = await storage.openWritable(paths.events, 'existing');
      entries = await storage.openWritable(paths.entries, 'existing');
      if (state.problems.some((p) => p.code === 'entries_partial_tail')) {
        // Part of an entry line a crash cut short (never acknowledged; session-state.ts checked the
        // log holds its frame, which indexTail below indexes again): cut it, so no line is written after it.
        await entries.truncate(state.entriesSize);
        await entries.sync();
      }
      crc = await CrcProjection.open(storage, paths, state.indexedLength, false);
      idx = await IndexProjection.open(storage, paths, state.meta.frameCount, state.indexedLength);
      const w = new SessionWriter(storage, paths, state.meta, log, entries, lock, opts.durable ?? true, now, crc, idx);
      // Both encodings may be mixed in one log: an explicit format switches new frames over.
      const switched = opts.format !== undefined && opts.format !== state.meta.format;
      if (switched) w.meta.format = opts.format as FrameEncoding;
      if (state.logSize > state.indexedLength) await w.indexTail(state.indexedLength, state.logSize);
      else if (state.metaStale || switched) await w.persistMeta();
      return w;
    } catch (err) {
      await crc?.close();
      await idx?.close();
      await log?.close().catch(() => undefined);
      await entries?.close().catch(() => undefined);
      await lock.release();
      throw err;
    }
  }

  /** Index the complete valid frames of an unindexed tail, or refuse if it is torn. */
  private async indexTail(start: number, end: number): Promise<void> {
    // Frames this writer did not write: the binary index would need them too; drop it.
    await this.idx.drop();
    let entriesText = '';
    let offset = start;
    let seq = this.meta.nextSeq;
    let frames = 0;
    for await (const f of scanObject(this.storage, this.paths.events, start, end)) {
      if (!f.ok) {
        throw new PagerError('repair_required', `session ${this.id} has an invalid unindexed tail: ${f.message}`, { offset: f.offset });
      }
      let r: StorageRecord;
      try {
        r = validateRecord(f.record);
      } catch (err) {
        throw new PagerError('repair_required', `session ${this.id} has an invalid unindexed tail: frame at offset ${f.offset}: ${(err as Error).message}`, { offset: f.offset });
      }
      const span = recordSpan(r);
      if (span.seq !== seq) {
        throw new PagerError('repair_required', `session ${this.id} unindexed frame at offset ${f.offset} starts at seq ${span.seq}, expected ${seq}`, { offset: f.offset });
      }
      const events = isRowType(r.type) && 'seq0' in r ? expandRow(r as ChunkRow) : [r as SessionEvent];
      for (const e of events) foldEvent(this.meta, e);
      entriesText += encodeEntry(entryFor(r, offset, f.length, f.schema));
      offset += f.length;
      seq += span.count;
      frames++;
    }
    await writeAll(this.entries, entriesText, this.meta.entriesLength);
    await this.entries.sync();
    this.meta.entriesLength += Buffer.byteLength(entriesText);
    this.meta.indexedLength = offset;
    this.meta.nextSeq = seq;
    this.meta.eventCount = seq;
    this.meta.frameCount += frames;
    await this.persistMeta();
  }

  private async persistMeta(): Promise<void> {
    const st = await this.log.stat();
    this.meta.fingerprint = { size: st.size, mtimeMs: st.mtimeMs };
    this.meta.updatedAt = this.now();
    const { indexedLength, entriesLength } = this.meta;
    await writeMeta(this.storage, this.paths.meta, this.meta);
    this.persisted = { indexedLength, entriesLength };
    this.dirty = false;
    this.metaFailure = null;
    this.retryMs = META_RETRY_MIN_MS;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  /**
   * A metadata write failed after an append was durable (local files only): the sidecar on
   * storage is stale. Readers catch it up, but each of them reads the tail it lags by, and
   * only up to a bound; so it is written again by the next append, the close, and, when no
   * append comes, on a timer of its own (backing off while the storage still refuses), so a
   * session that takes no more appends once space is back does not stay stale.
   */
  private metaWriteFailed(err: unknown): void {
    this.dirty = true;
    this.metaFailure = err instanceof Error ? err : new Error(String(err));
    if (this.retryTimer !== null || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      const run = this.queue.then(async () => {
        if (this.closed || this.metaFailure === null) return;
        await this.persistMeta().catch((e: unknown) => this.metaWriteFailed(e));
      });
      this.queue = run.catch(() => undefined);
    }, this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, META_RETRY_MAX_MS);
  }

  /** Whether the metadata sidecar on storage lags the appends acknowledged (a write of it failed), and why. */
  get metadataBehind(): { indexedBytes: number; entriesBytes: number; cause: string } | null {
    if (this.metaFailure === null) return null;
    return { indexedBytes: this.meta.indexedLength - this.persisted.indexedLength, entriesBytes: this.meta.entriesLength - this.persisted.entriesLength, cause: this.metaFailure.message };
  }

  /**
   * Append one batch. Seqs must continue `nextSeq` exactly. Resolves after
   * the frames, entries and metadata are durable (unless `durable: false`).
   */
  append(events: unknown): Promise<AppendResult> {
    const run = this.queue.then(() => this.appendNow(events));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async appendNow(input: unknown): Promise<AppendResult> {
    if (this.closed) throw new PagerError('internal', `writer for session ${this.id} is closed`);
    const events = checkBatch(input, this.meta.nextSeq);
    const fromSeq = this.meta.nextSeq;
    const enc = encodeBatch(events, this.meta.indexedLength, this.meta.format);
    if (this.metaFailure !== null && this.wouldOutrunCatchUp(enc.bytes.length, Buffer.byteLength(enc.entries))) {
      // The sidecar on storage would lag past what readers catch up (they would call the session
      // repair_required, "run reindex"): it must be written first, and if it still cannot be,
      // the append is refused before anything of it is written, as on a full disk.
      await this.persistMeta().catch((err: unknown) => {
        this.metaWriteFailed(err);
        throw err;
      });
    }
    try {
      await writeAll(this.log, enc.bytes, this.meta.indexedLength);
      if (this.durable) await this.log.sync();
      await writeAll(this.entries, enc.entries, this.meta.entriesLength);
      if (this.durable) await this.entries.sync();
    } catch (err) {
      // Leave no unindexed bytes behind a failed append: cut the log back.
      await this.log.truncate(this.meta.indexedLength).catch(() => undefined);
      await this.entries.truncate(this.meta.entriesLength).catch(() => undefined);
      throw err;
    }
    await this.crc.append(enc.bytes, this.meta.indexedLength, enc.lengths);
    await this.idx.append(enc.index);
    for (const e of events) foldEvent(this.meta, e);
    this.meta.indexedLength += enc.bytes.length;
    this.meta.entriesLength += Buffer.byteLength(enc.entries);
    this.meta.nextSeq = fromSeq + events.length;
    this.meta.eventCount = this.meta.nextSeq;
    this.meta.frameCount += enc.frameCount;
    // On local files the append is durable now: its frames and entry lines are fsynced, and
    // metadata that lags them is caught up from the entry sidecar by the next open (SPEC
    // section 3), as after a crash here. So there a metadata write that fails (a full disk)
    // does not fail the append: it is answered as done, and the metadata is written again by
    // the next append or the close. (Failing it told the client an append had not happened that
    // had, and is served: its retry got seq_conflict.) Not on S3: there the metadata's replace
    // publishes the append (the manifest, s3/session-volume.ts), and a writer that cannot is
    // cut off or fenced: its failure must fail the append.
    if (this.durable && this.storage.kind === 'local') {
      await this.persistMeta().catch((err: unknown) => this.metaWriteFailed(err));
    } else if (this.durable) await this.persistMeta();
    else this.dirty = true;
    const snapshot = this.meta;
    for (const fn of this.listeners) {
      try {
        fn(events, snapshot);
      } catch {
        // A listener's failure is its own; the append is durable already.
      }
    }
    return { fromSeq, toSeq: this.meta.nextSeq, nextSeq: this.meta.nextSeq, frames: enc.frameCount, bytes: enc.bytes.length };
  }

  /** Whether an append of these sizes would leave the sidecar on storage behind by more than readers catch up. */
  private wouldOutrunCatchUp(logBytes: number, entryBytes: number): boolean {
    return (
      this.meta.indexedLength + logBytes - this.persisted.indexedLength > CATCH_UP_MAX_BYTES ||
      this.meta.entriesLength + entryBytes - this.persisted.entriesLength > CATCH_UP_MAX_BYTES
    );
  }

  /** The session is complete: drop the `unfinished` note (written with the metadata at close). */
  finish(): void {
    const kept = this.meta.issues.filter((i) => i.code !== UNFINISHED_ISSUE);
    if (kept.length === this.meta.issues.length) return;
    this.meta.issues = kept;
    this.dirty = true;
  }

  /** Flush (when not durable), write metadata, release the lock. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.queue;
    this.closed = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    try {
      if (this.dirty) {
        await this.log.sync();
        await this.entries.sync();
        if (this.metaFailure === null) await this.persistMeta();
        // Only durable appends on local files leave it stale (appendNow), within what readers
        // catch up: the close is not failed for it (an idle writer's close is no one's request),
        // the next open writes it.
        else await this.persistMeta().catch(() => undefined);
      }
    } finally {
      await this.crc.close();
      await this.idx.close();
      await this.log.close().catch(() => undefined);
      await this.entries.close().catch(() => undefined);
      await this.lock.release();
    }
  }
}
