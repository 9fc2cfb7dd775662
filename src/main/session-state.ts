/**
 * Opening a session on a normal path (catalog, open, page, append): decide
 * from the sidecars and a stat of the log, with bounded reads only, whether
 * the session can be served and up to where (SPEC section 3, trust rules).
 * Never writes; never throws for damage (damage is a status with reasons).
 *
 * What is read, at most:
 * - the metadata sidecar (small);
 * - the first and last lines of the entry sidecar, and the line ending where
 *   the metadata says its sidecar ended (a few small positional reads);
 * - when the log's fingerprint (size, mtime) differs from the metadata's:
 *   the last indexed frame and the header frame of the log (two frames) to
 *   prove the entry sidecar still describes this log;
 * - when the metadata is stale: the indexed tail past it (entries and frames),
 *   at most CATCH_UP_MAX_BYTES of log, folded in memory. Nothing is written:
 *   the writer persists a caught-up metadata sidecar when it opens the session.
 *
 * A middle entry that is out of order is only detectable by reading every
 * line: that is `doctor --deep`'s job, not the normal path's.
 */
import { isNotFound, type ObjectStat, type StorageBackend } from '../storage/backend.js';
import { localFiles } from '../storage/local/local-backend.js';
import { scanObject } from '../storage/scan.js';
import { EntriesFile, EntryFormatError, type LocatedEntry } from '../streams/entries-file.js';
import { decodeFrame, MAX_FRAME_BYTES } from '../streams/frame-codec.js';
import { expandRow, recordSpan, validateRecord } from '../core/chunk-codec.js';
import { foldEvent } from '../core/summary.js';
import type { ChunkRow, EntryLine, SessionEvent, StorageRecord } from '../core/types.js';
import { isRowType } from '../core/types.js';
import { checkMetaShape, readMeta, type SessionMeta } from './meta-file.js';
import type { SessionPaths } from './paths.js';
import { findInterruptedCreate, type InterruptedCreate } from './interrupted-create.js';
import { quoteValue } from '../core/excerpt.js';
import { entryFor } from '../streams/batch-encoder.js';
import { encodeEntry } from '../streams/entry-codec.js';

export type SessionStatus = 'ok' | 'degraded' | 'repair_required';

/** Largest indexed tail (log bytes, and entry-sidecar bytes) a stale metadata sidecar is caught up over in memory. */
export const CATCH_UP_MAX_BYTES = 64 * 1024 * 1024;

export type ProblemCode =
  | 'log_missing'
  | 'create_interrupted'
  | 'log_unreadable'
  | 'meta_missing'
  | 'meta_invalid'
  | 'meta_mismatch'
  | 'meta_ahead'
  | 'meta_too_stale'
  | 'catch_up_failed'
  | 'entries_missing'
  | 'entries_unreadable'
  | 'entries_empty'
  | 'entries_partial_line'
  | 'entries_partial_tail'
  | 'entries_malformed'
  | 'entries_bad_first'
  | 'entries_out_of_order'
  | 'entries_past_log'
  | 'log_changed'
  | 'unindexed_tail'
  | 'corrupt_frame'
  | 'recorded_issue';

/** One reason a session is not ok, with where it is when known. */
export interface StateProblem {
  code: ProblemCode | string;
  message: string;
  /** Byte offset in the log (or in the entry sidecar for entries_* codes). */
  offset?: number;
  /** Seq range [fromSeq, toSeq) concerned, when known. */
  fromSeq?: number;
  toSeq?: number;
  /** Bytes concerned from `offset`, when known. */
  length?: number;
}

export interface SessionState {
  id: string;
  paths: SessionPaths;
  status: SessionStatus;
  /** Why the status is not ok, most important first (the messages of `problems`). */
  reasons: string[];
  /** The same, structured. */
  problems: StateProblem[];
  /** Metadata, caught up in memory when the sidecar was stale; null when unusable. */
  meta: SessionMeta | null;
  /** True when `meta` was caught up from the indexed tail (the file on disk is older). */
  metaStale: boolean;
  /** True when the log's size and mtime equal the metadata's fingerprint and the metadata matches the entry sidecar. */
  fingerprintFresh: boolean;
  /** Bytes of the entry sidecar that are trusted (whole lines). */
  entriesSize: number;
  /** Bytes of the log covered by trusted entries: the only bytes ever served. */
  indexedLength: number;
  nextSeq: number;
  frameCount: number;
  logSize: number;
  logMtimeMs: number;
}

/** The state of a session that cannot be served, for one reason. */
export function needsRepair(paths: SessionPaths, problem: StateProblem, meta: SessionMeta | null, logSize = 0, logMtimeMs = 0): SessionState {
  return {
    id: paths.id,
    paths,
    status: 'repair_required',
    reasons: [problem.message],
    problems: [problem],
    meta,
    metaStale: false,
    fingerprintFresh: false,
    entriesSize: 0,
    indexedLength: 0,
    nextSeq: 0,
    frameCount: 0,
    logSize,
    logMtimeMs,
  };
}

function describe(e: EntryLine): string {
  return `seq ${e.seq}, offset ${e.offset}`;
}

/**
 * Check that the frame an entry names is still there: decodes, is a valid
 * record (or the header for the first entry) and holds what the entry says.
 * One positional read of `entry.length` bytes. Returns a reason or null.
 */
export async function checkIndexedFrame(eventsKey: string, entry: EntryLine, storage: StorageBackend = localFiles): Promise<string | null> {
  if (entry.length > MAX_FRAME_BYTES + 16) return `entry at offset ${entry.offset} names a frame of ${entry.length} bytes, over the limit`;
  const buf = await storage.read(eventsKey, entry.offset, entry.offset + entry.length);
  if (buf === null) throw Object.assign(new Error(`log ${eventsKey} is missing`), { code: 'ENOENT' });
  if (buf.length < entry.length) return `frame at offset ${entry.offset} is cut short (${buf.length} of ${entry.length} bytes)`;
  const f = decodeFrame(buf, 0, entry.offset);
  if (!f.ok) return f.message;
  if (f.length !== entry.length) return `frame at offset ${entry.offset} is ${f.length} bytes, the entry says ${entry.length}`;
  if (entry.kind === 'session' && entry.offset === 0) {
    const h = f.record as Record<string, unknown>;
    return h.type === 'session' ? null : `frame at offset 0 is not a session header`;
  }
  let r: StorageRecord;
  try {
    r = validateRecord(f.record);
  } catch (err) {
    return `frame at offset ${entry.offset}: ${(err as Error).message}`;
  }
  const span = recordSpan(r);
  if (span.seq !== entry.seq || span.count !== entry.count || r.type !== entry.kind) {
    return `frame at offset ${entry.offset} holds ${r.type} seq ${span.seq} x${span.count}, the entry says ${entry.kind} seq ${entry.seq} x${entry.count}`;
  }
  return null;
}

/**
 * Catch metadata up over the entries past `meta.entriesLength` (a line
 * boundary that was checked), reading only the indexed tail of the log and
 * checking each frame against its entry.
 */
async function catchUp(storage: StorageBackend, paths: SessionPaths, entries: EntriesFile, meta: SessionMeta): Promise<SessionMeta | StateProblem> {
  const tail = await entries.readRange(meta.entriesLength, entries.size);
  let offset = meta.indexedLength;
  let seq = meta.nextSeq;
  for (const { entry, start } of tail) {
    if (entry.offset !== offset || entry.seq !== seq) {
      return { code: 'entries_out_of_order', message: `entry sidecar line at byte ${start} names ${describe(entry)}, expected seq ${seq}, offset ${offset}`, offset: start };
    }
    offset += entry.length;
    seq += entry.count;
  }
  const caught: SessionMeta = { ...meta, tokens: { ...meta.tokens }, issues: [...meta.issues] };
  let i = 0;
  for await (const f of scanObject(storage, paths.events, meta.indexedLength, offset)) {
    const entry = tail[i++]?.entry;
    if (!f.ok) return { code: 'catch_up_failed', message: `stale metadata cannot be caught up: ${f.message}`, offset: f.offset };
    if (entry === undefined || f.length !== entry.length) {
      return { code: 'catch_up_failed', message: `stale metadata cannot be caught up: frame at offset ${f.offset} does not match its entry`, offset: f.offset };
    }
    let r: StorageRecord;
    try {
      r = validateRecord(f.record);
    } catch (err) {
      return { code: 'catch_up_failed', message: `stale metadata cannot be caught up: frame at offset ${f.offset}: ${(err as Error).message}`, offset: f.offset };
    }
    const span = recordSpan(r);
    if (span.seq !== entry.seq || span.count !== entry.count) {
      return { code: 'catch_up_failed', message: `stale metadata cannot be caught up: frame at offset ${f.offset} holds seq ${span.seq} x${span.count}, its entry says seq ${entry.seq} x${entry.count}`, offset: f.offset };
    }
    const events: SessionEvent[] = isRowType(r.type) && 'seq0' in r ? expandRow(r as ChunkRow) : [r as SessionEvent];
    for (const e of events) foldEvent(caught, e);
  }
  caught.nextSeq = seq;
  caught.eventCount = seq;
  caught.frameCount = meta.frameCount + tail.length;
  caught.indexedLength = offset;
  caught.entriesLength = entries.size;
  return caught;
}

/**
 * Stale metadata caught up by earlier reads, one per session, so the next
 * read catches up only the entries written since (the catalog reads a stale
 * session again whenever its files change, and a full catch-up reads up to
 * CATCH_UP_MAX_BYTES of tail each time). What is kept is used only while
 * the metadata sidecar on storage, the log's and the entry sidecar's
 * incarnations are those it was caught up under, and only when the entry
 * line ending where it ended still agrees with it: the same checks a
 * metadata sidecar written at that point would get, so a kept catch-up is
 * trusted exactly as far as a fresh metadata sidecar is (its frames are
 * checked again by the pages that read them).
 */
export class CatchUpMemo {
  private readonly kept = new Map<string, { base: string; caught: SessionMeta }>();

  constructor(private readonly max = 256) {}

  get(key: string, base: string): SessionMeta | undefined {
    const k = this.kept.get(key);
    return k !== undefined && k.base === base ? k.caught : undefined;
  }

  set(key: string, base: string, caught: SessionMeta): void {
    this.kept.delete(key);
    this.kept.set(key, { base, caught });
    if (this.kept.size > this.max) this.kept.delete(this.kept.keys().next().value as string);
  }

  delete(key: string): void {
    this.kept.delete(key);
  }

  get size(): number {
    return this.kept.size;
  }
}

/** What a create cut by a crash left of this session, if that is all there is (interrupted-create.ts). */
export function interruptedCreate(paths: SessionPaths, storage: StorageBackend = localFiles): Promise<InterruptedCreate | null> {
  return findInterruptedCreate(paths, storage);
}

async function statLog(storage: StorageBackend, key: string, seen?: ObjectStat | null): Promise<{ size: number; mtimeMs: number; incarnation: string } | StateProblem> {
  try {
    const st = seen !== undefined ? seen : await storage.stat(key);
    return st === null ? { code: 'log_missing', message: 'log file is missing' } : { size: st.size, mtimeMs: st.mtimeMs, incarnation: st.incarnation };
  } catch (err) {
    return { code: 'log_unreadable', message: `log file unreadable: ${(err as Error).message}` };
  }
}

/** Problems an append in flight can show to one read (it writes the log, then the entry lines, then the metadata). */
const APPEND_RACE = new Set(['entries_past_log', 'entries_partial_line']);

/**
 * Stats of the session's log and entry sidecar the caller took for this very
 * read (SessionViews' stamp, a moment before): the first attempt uses them
 * instead of stating the same files again. `null`: the object was missing.
 * Retries (an append or a write in flight) always stat anew.
 */
export interface SeenStats {
  events: ObjectStat | null;
  entries: ObjectStat | null;
}

/**
 * `paths`: the session's keys in `storage` (default: paths of local files).
 * `memo`: where stale metadata caught up by this caller's earlier reads is
 * kept (CatchUpMemo), so a catch-up reads only what is new.
 * `seen`: stats the caller already took for this read (SeenStats).
 */
export async function loadSessionState(paths: SessionPaths, storage: StorageBackend = localFiles, memo?: CatchUpMemo, seen?: SeenStats): Promise<SessionState> {
  for (let attempt = 0; ; attempt++) {
    const s = await loadSessionStateOnce(paths, storage, memo, attempt === 0 ? seen : undefined);
    if (attempt >= 3) return s;
    if (s.status !== 'repair_required') {
      // A partial entry line is also what a write in flight shows for a moment: read again once the sidecar moved on.
      const partial = s.problems.find((p) => p.code === 'entries_partial_tail');
      if (partial === undefined) return s;
      const st = await storage.stat(paths.entries).catch(() => null);
      if (st === null || st.size === (partial.offset ?? 0) + (partial.length ?? 0)) return s;
      continue;
    }
    // The log is stat'ed before the sidecars are read, so an append landing in
    // between looks like sidecars ahead of the log: read again before calling it damage.
    const now = await statLog(storage, paths.events);
    const moved = !('code' in now) && now.size !== s.logSize;
    if (!moved && !s.problems.some((p) => APPEND_RACE.has(p.code))) return s;
    await new Promise((r) => setTimeout(r, 2 * (attempt + 1)));
  }
}

/** Whether the entry line ending at byte `m.entriesLength` is the one that ends `m`'s indexed log. */
async function lineEndsMeta(entries: EntriesFile, m: SessionMeta): Promise<boolean> {
  let boundary: LocatedEntry | null;
  try {
    boundary = await entries.lineEndingAt(m.entriesLength);
  } catch (err) {
    if (err instanceof EntryFormatError) return false;
    throw err;
  }
  return boundary !== null && boundary.entry.offset + boundary.entry.length === m.indexedLength && boundary.entry.seq + boundary.entry.count === m.nextSeq;
}

async function loadSessionStateOnce(paths: SessionPaths, storage: StorageBackend, memo: CatchUpMemo | undefined, seen: SeenStats | undefined): Promise<SessionState> {
  const st = await statLog(storage, paths.events, seen?.events);
  if ('code' in st) return needsRepair(paths, st, null);
  const { size: logSize, mtimeMs: logMtimeMs } = st;
  const broken = (p: StateProblem, meta: SessionMeta | null = null): SessionState => needsRepair(paths, p, meta, logSize, logMtimeMs);

  const metaOrReason = await readMeta(storage, paths.meta);
  if (typeof metaOrReason === 'string') {
    if (metaOrReason === 'metadata sidecar is missing') {
      const interrupted = await findInterruptedCreate(paths, storage);
      if (interrupted !== null) return broken({ code: 'create_interrupted', message: interrupted.message });
    }
    return broken({ code: metaOrReason === 'metadata sidecar is missing' ? 'meta_missing' : 'meta_invalid', message: metaOrReason });
  }
  let meta = metaOrReason;
  if (meta.id !== undefined && meta.id !== paths.id) {
    return broken({ code: 'meta_mismatch', message: `metadata sidecar names session ${quoteValue(meta.id)}, not ${quoteValue(paths.id)}` }, meta);
  }

  let entries: EntriesFile;
  try {
    entries = new EntriesFile(await storage.openReader(paths.entries));
  } catch (err) {
    return broken(
      isNotFound(err)
        ? { code: 'entries_missing', message: 'entry sidecar is missing' }
        : { code: 'entries_unreadable', message: `entry sidecar unreadable: ${(err as Error).message}` },
      meta,
    );
  }
  try {
    if (entries.size === 0) return broken({ code: 'entries_empty', message: 'entry sidecar is empty' }, meta);
    // A write of entry lines cut by a crash leaves part of a line at the end: never acknowledged
    // (the metadata is written after the lines), so the whole lines before it are the sidecar,
    // once the log is shown to hold the frame that line was describing (partialTailDisagrees).
    let partialTail: { start: number; bytes: Buffer } | null = null;
    if (!(await entries.endsWithNewline())) {
      partialTail = await entries.partialLastLine();
      // Bytes the metadata counts (acknowledged) are never an unacknowledged tail.
      if (partialTail === null || partialTail.start === 0 || meta.entriesLength > partialTail.start) {
        return broken({ code: 'entries_partial_line', message: `entry sidecar ends in a partial line (size ${entries.size})`, offset: entries.size }, meta);
      }
      entries = entries.prefix(partialTail.start);
    }
    const first = (await entries.first())!;
    const fe = first.entry;
    if (fe.offset !== 0 || fe.kind !== 'session' || fe.count !== 0 || fe.seq !== 0) {
      return broken(
        { code: 'entries_bad_first', message: `entry sidecar's first entry is not the session header at offset 0 (kind ${quoteValue(fe.kind)}, seq ${fe.seq}, count ${fe.count}, offset ${fe.offset})`, offset: 0 },
        meta,
      );
    }
    const last = (await entries.last())!;
    const le = last.entry;
    const indexedLength = le.offset + le.length;
    const nextSeq = le.seq + le.count;
    if (last.start > 0) {
      // More than one line: the last must lie after the header frame and not be a header itself.
      if (le.offset < fe.length || le.kind === 'session' || le.count === 0) {
        return broken({ code: 'entries_out_of_order', message: `entry sidecar's last entry (${describe(le)}, kind ${quoteValue(le.kind)}) does not follow the header entry`, offset: last.start }, meta);
      }
    }
    if (indexedLength > logSize) {
      return broken({ code: 'entries_past_log', message: `entry sidecar points past the log (indexes ${indexedLength} bytes, log has ${logSize})`, offset: logSize }, meta);
    }

    // Metadata against the entry sidecar: equal, or behind at a line boundary (stale), never ahead.
    let metaStale = false;
    if (meta.entriesLength !== entries.size || meta.indexedLength !== indexedLength || meta.nextSeq !== nextSeq) {
      if (meta.entriesLength >= entries.size || meta.indexedLength > indexedLength || meta.nextSeq > nextSeq) {
        return broken(
          {
            code: 'meta_ahead',
            message: `metadata does not match the entry sidecar (metadata: ${meta.entriesLength} sidecar bytes, ${meta.indexedLength} log bytes, next seq ${meta.nextSeq}; sidecar: ${entries.size} bytes, ${indexedLength} log bytes, next seq ${nextSeq})`,
          },
          meta,
        );
      }
      // Where the metadata's sidecar ended must be a line boundary agreeing with the metadata.
      if (!(await lineEndsMeta(entries, meta))) {
        return broken({ code: 'meta_mismatch', message: `metadata's end of the entry sidecar (byte ${meta.entriesLength}) is not the line that ends its indexed log (${meta.indexedLength} bytes, next seq ${meta.nextSeq})` }, meta);
      }
      if (indexedLength - meta.indexedLength > CATCH_UP_MAX_BYTES || entries.size - meta.entriesLength > CATCH_UP_MAX_BYTES) {
        return broken(
          { code: 'meta_too_stale', message: `metadata is ${indexedLength - meta.indexedLength} log bytes (${entries.size - meta.entriesLength} sidecar bytes) behind the entry sidecar, over the ${CATCH_UP_MAX_BYTES}-byte catch-up bound; run reindex` },
          meta,
        );
      }
      // Start from an earlier read's catch-up when it still holds (CatchUpMemo), else from the metadata.
      let base = '';
      let from = meta;
      if (memo !== undefined) {
        // The entry sidecar's incarnation as stat'ed before it was opened (the caller's, when it has one):
        // a sidecar replaced after that stat is kept under the old incarnation, which no later read matches.
        const entriesStat = seen !== undefined ? seen.entries : await storage.stat(paths.entries);
        base = `${st.incarnation}|${entriesStat?.incarnation ?? '-'}|${JSON.stringify(meta)}`;
        const kept = memo.get(paths.events, base);
        if (kept !== undefined && kept.entriesLength <= entries.size && kept.indexedLength <= indexedLength && kept.nextSeq <= nextSeq && (await lineEndsMeta(entries, kept))) from = kept;
      }
      const caught = await catchUp(storage, paths, entries, from);
      if ('code' in caught) {
        memo?.delete(paths.events);
        return broken(caught, meta);
      }
      memo?.set(paths.events, base, caught);
      meta = caught;
      metaStale = true;
    } else memo?.delete(paths.events);

    // Fingerprint: when the log is not as the metadata last saw it, prove the last indexed frame is still there.
    const fingerprintFresh = !metaStale && meta.fingerprint.size === logSize && meta.fingerprint.mtimeMs === logMtimeMs;
    if (!fingerprintFresh) {
      // The last indexed frame (SPEC) and the header frame: both ends of what the sidecar describes.
      for (const e of last.start > 0 ? [le, fe] : [le]) {
        const bad = await checkIndexedFrame(paths.events, e, storage);
        if (bad !== null) {
          const p: StateProblem = { code: 'log_changed', message: `log changed since it was indexed: ${bad}`, offset: e.offset };
          if (e.count > 0) Object.assign(p, { fromSeq: e.seq, toSeq: e.seq + e.count });
          return broken(p, meta);
        }
      }
    }

    const problems: StateProblem[] = [];
    if (partialTail !== null) {
      const rawSize = partialTail.start + partialTail.bytes.length;
      const bad = await partialTailDisagrees(storage, paths.events, partialTail.bytes, indexedLength, nextSeq, logSize);
      if (bad !== null) {
        return broken({ code: 'entries_partial_line', message: `entry sidecar ends in a partial line (size ${rawSize}) ${bad}`, offset: rawSize }, meta);
      }
      problems.push({
        code: 'entries_partial_tail',
        message: `entry sidecar ends in ${partialTail.bytes.length} bytes of an entry line a crash cut short, at byte ${partialTail.start} (never acknowledged: not used, and the writer cuts it)`,
        offset: partialTail.start,
        length: partialTail.bytes.length,
      });
    }
    if (logSize > indexedLength) {
      problems.push({ code: 'unindexed_tail', message: `unindexed tail of ${logSize - indexedLength} bytes at offset ${indexedLength} is not served`, offset: indexedLength });
    }
    problems.push(...issueProblems(meta));
    return servable(paths, meta, problems, { metaStale, fingerprintFresh, entriesSize: entries.size, indexedLength, nextSeq, logSize, logMtimeMs });
  } catch (err) {
    if (err instanceof EntryFormatError) {
      return broken({ code: 'entries_malformed', message: `entry sidecar is malformed: ${err.message}`, offset: err.byteOffset }, meta);
    }
    throw err;
  } finally {
    await entries.close();
  }
}

/**
 * Whether the log contradicts reading `partial` (the bytes after the entry
 * sidecar's last newline) as the start of the line of the next frame, the
 * one at `indexedLength`: the writer writes a batch's frames before their
 * entry lines, so that frame is whole in the log and the bytes are a prefix
 * of the line it gets. Anything else (no such frame, a torn one, bytes no
 * writer would write for it) is damage. One read of one frame. Returns a
 * reason, or null when the log agrees.
 */
async function partialTailDisagrees(storage: StorageBackend, eventsKey: string, partial: Buffer, indexedLength: number, nextSeq: number, logSize: number): Promise<string | null> {
  if (logSize <= indexedLength) return 'and the log has no frame past its indexed end for that line to describe';
  for await (const f of scanObject(storage, eventsKey, indexedLength, Math.min(logSize, indexedLength + MAX_FRAME_BYTES + 16))) {
    if (!f.ok) return `and the frame after the indexed end is not valid: ${f.message}`;
    let r: StorageRecord;
    try {
      r = validateRecord(f.record);
    } catch (err) {
      return `and the frame after the indexed end is not a valid record: ${(err as Error).message}`;
    }
    if (recordSpan(r).seq !== nextSeq) return `and the frame after the indexed end starts at seq ${recordSpan(r).seq}, not ${nextSeq}`;
    const line = Buffer.from(encodeEntry(entryFor(r, indexedLength, f.length, f.schema)), 'utf8');
    return partial.length < line.length && line.subarray(0, partial.length).equals(partial) ? null : 'that is not the start of the line of the frame after the indexed end';
  }
  return 'and the log has no frame past its indexed end for that line to describe';
}

/** A servable session's state: ok, or degraded when it has problems. */
function servable(
  paths: SessionPaths,
  meta: SessionMeta,
  problems: StateProblem[],
  f: Pick<SessionState, 'metaStale' | 'fingerprintFresh' | 'entriesSize' | 'indexedLength' | 'nextSeq' | 'logSize' | 'logMtimeMs'>,
): SessionState {
  return {
    id: paths.id,
    paths,
    status: problems.length > 0 ? 'degraded' : 'ok',
    reasons: problems.map((p) => p.message),
    problems,
    meta,
    frameCount: meta.frameCount,
    ...f,
  };
}

/** Issues recorded in the metadata (by repair/reindex) as problems. */
function issueProblems(meta: SessionMeta): StateProblem[] {
  return meta.issues.map((issue) => {
    const i = issue as typeof issue & { toSeq?: number };
    const p: StateProblem = { code: issue.code === 'corrupt_frame' ? 'corrupt_frame' : 'recorded_issue', message: issue.message };
    if (issue.offset !== undefined) p.offset = issue.offset;
    if (issue.seq !== undefined) p.fromSeq = issue.seq;
    if (i.toSeq !== undefined) p.toSeq = i.toSeq;
    return p;
  });
}

/**
 * The catalog's fast path: a session whose log and entry sidecar are exactly
 * as its metadata last wrote them (log size and mtime equal the
 * fingerprint, the log ends at the indexed length, the sidecar has the
 * recorded length) is described by its metadata alone: one small read and
 * two stats, so thousands of sessions list in milliseconds. Anything else
 * returns null and takes loadSessionState's full checks. Pages never use
 * this: their own reads of the sidecar check what they touch.
 */
export async function catalogState(paths: SessionPaths, storage: StorageBackend = localFiles, seen?: SeenStats): Promise<SessionState | null> {
  try {
    const bytes = await storage.readAll(paths.meta);
    if (bytes === null) return null;
    const shaped = checkMetaShape(JSON.parse(bytes.toString('utf8')));
    if (typeof shaped === 'string') return null;
    const meta = shaped;
    // The caller's stats of this read (taken before the metadata was read), else stat now.
    const log = seen !== undefined ? seen.events : await storage.stat(paths.events);
    const entries = seen !== undefined ? seen.entries : await storage.stat(paths.entries);
    if (log === null || entries === null) return null;
    if (log.size !== meta.fingerprint.size || log.mtimeMs !== meta.fingerprint.mtimeMs || log.size !== meta.indexedLength || entries.size !== meta.entriesLength) return null;
    return servable(paths, meta, issueProblems(meta), {
      metaStale: false,
      fingerprintFresh: true,
      entriesSize: entries.size,
      indexedLength: meta.indexedLength,
      nextSeq: meta.nextSeq,
      logSize: log.size,
      logMtimeMs: log.mtimeMs,
    });
  } catch {
    return null;
  }
}
