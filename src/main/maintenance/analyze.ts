/**
 * The one full scan of a log that explicit maintenance runs (`reindex`,
 * `repair`, `doctor --deep`): stream every frame with bounded memory
 * (scanFrames: one block plus the largest frame), check it (checksum, decode,
 * row rules, seq continuity), fold the metadata summary, and emit the entry
 * line each indexable frame gets. Callers decide what to do with the lines
 * (write them to a temp sidecar, or compare them with the existing one).
 *
 * How a log is classified (SPEC section 3; docs/decisions.md, "Repair
 * resynchronizes"):
 * - frame 0 must decode as a `session` header, else nothing is indexable;
 * - a frame that fails its checksum, decode or record rules but whose length
 *   is known, and that is followed by a good frame (with no confirmed valid
 *   frame starting inside it), is a *corrupt middle frame*: it is kept and
 *   indexed with its length (kind `corrupt`), its seq range is taken from
 *   the next good frame, and the session is degraded;
 * - damage whose length cannot be trusted (torn, bad magic or version,
 *   oversized, a known length that leads to garbage) is resynchronized past
 *   (resync.ts): the bytes up to the first confirmed valid frame are one
 *   kept, indexed damaged range (kind `corrupt`), and the scan goes on there;
 * - damage that no confirmed valid frame follows is a tail: *clearly
 *   invalid* (repair cuts it) when no valid frame at all follows, else kept
 *   for a human; a good frame whose seq does not continue stops indexing
 *   there too (a tail for a human).
 */
import { expandRow, recordSpan, validateRecord } from '../../core/chunk-codec.js';
import { entryFor } from '../../streams/batch-encoder.js';
import { emptySummary, foldEvent, type SessionSummary } from '../../core/summary.js';
import type { ChunkRow, EntryLine, SessionEvent, SessionHeader, StorageRecord } from '../../core/types.js';
import { isRowType } from '../../core/types.js';
import { RECORD_SCHEMA, type FaultReason, type FrameEncoding } from '../../streams/frame-codec.js';
import { scanFrames } from '../../streams/frame-scanner.js';
import { resync, type ResyncResult } from './resync.js';
import { StorageError, type ObjectStat, type RandomReader, type StorageBackend } from '../../storage/backend.js';
import { localFiles } from '../../storage/local/local-backend.js';

/** Kind of the entry line of a frame that cannot be decoded. */
export const CORRUPT_KIND = 'corrupt';

/** A run of consecutive corrupt middle frames, kept and indexed. */
export interface CorruptRange {
  offset: number;
  /** Bytes of the run. */
  length: number;
  frames: number;
  /** Seq range [fromSeq, toSeq) the run holds (from the frames around it). */
  fromSeq: number;
  toSeq: number;
  reason: FaultReason;
  message: string;
}

export type TailKind = 'damaged' | 'torn' | 'bad_length' | 'garbage' | 'seq_gap';

/** What follows the last indexable frame, when anything does. */
export interface TailFault {
  offset: number;
  kind: TailKind;
  message: string;
  /** Repair may cut it (after a backup): torn, bad length, undecodable last frames, garbage. */
  clearlyInvalid: boolean;
  /** First seq the tail would have held. */
  seq: number;
}

export interface LogAnalysis {
  logSize: number;
  logMtimeMs: number;
  header: SessionHeader | null;
  /** Why frame 0 is not a usable header; nothing is indexable then. */
  headerFault: string | null;
  /** Entry lines emitted (indexable frames, header included). */
  frameCount: number;
  /** Next seq after the indexable frames. */
  eventCount: number;
  /** Log bytes the emitted entries cover. */
  indexedEnd: number;
  /** End of the last frame that decoded and checked (0 when none). */
  lastGoodOffset: number;
  corrupt: CorruptRange[];
  tail: TailFault | null;
  /** Metadata summary folded over every readable event. */
  summary: SessionSummary | null;
  /** Time of the last readable event. */
  lastEventTime: number | null;
  /** Encoding of the last good frame (what a writer would keep using). */
  lastEncoding: FrameEncoding | null;
}

export interface AnalyzeOptions {
  /** Each indexable frame's entry line, in file order; `corrupt` marks a kept undecodable frame. */
  onEntry?: (entry: EntryLine, corrupt: boolean) => void | Promise<void>;
  /** Bytes of the log consumed so far. */
  onProgress?: (bytes: number) => void;
}

interface Pending {
  offset: number;
  length: number;
  reason: FaultReason;
  message: string;
}

/** Analyze the log at `key` of `storage` (default: local files, the key a path). */
export async function analyzeLog(key: string, opts: AnalyzeOptions = {}, storage: StorageBackend = localFiles): Promise<LogAnalysis> {
  const st = await storage.stat(key);
  if (st === null) throw new StorageError('ENOENT', `no such log: ${key}`);
  const fh = await storage.openReader(key, st.size);
  try {
    return await analyzeReader(fh, st, opts);
  } finally {
    await fh.close();
  }
}

async function analyzeReader(fh: RandomReader, st: ObjectStat, opts: AnalyzeOptions): Promise<LogAnalysis> {
  const a: LogAnalysis = {
    logSize: st.size,
    logMtimeMs: st.mtimeMs,
    header: null,
    headerFault: null,
    frameCount: 0,
    eventCount: 0,
    indexedEnd: 0,
    lastGoodOffset: 0,
    corrupt: [],
    tail: null,
    summary: null,
    lastEventTime: null,
    lastEncoding: null,
  };
  if (st.size === 0) {
    a.headerFault = 'log file is empty';
    return a;
  }
  const emit = async (entry: EntryLine, corrupt: boolean): Promise<void> => {
    a.frameCount++;
    a.indexedEnd = entry.offset + entry.length;
    if (opts.onEntry) await opts.onEntry(entry, corrupt);
  };
  let expected = 0;
  let pending: Pending[] = [];
  let first = true;
  let pos = 0;

  const source = fh;
  for (;;) {
    // Damage the scan cannot step over by a known length: resync past it (resync.ts).
    let damage: { start: number; reason: FaultReason; message: string; stop: Pending | null } | null = null;
    let found: ResyncResult | null = null;
    const scanStart = pos;
    const onProgress = opts.onProgress;
    for await (const f of scanFrames(source, pos, st.size, { onProgress: onProgress ? (b) => onProgress(scanStart + b) : undefined })) {
      if (first) {
        first = false;
        if (!f.ok) {
          a.headerFault = `header frame: ${f.message}`;
          return a;
        }
        const h = f.record as Record<string, unknown>;
        if (h.type !== 'session') {
          a.headerFault = `frame 0 is not a session header (type ${JSON.stringify(h.type)})`;
          return a;
        }
        a.header = h as SessionHeader;
        a.summary = emptySummary(a.header);
        a.lastGoodOffset = f.length;
        a.lastEncoding = f.encoding;
        await emit({ v: 1, seq: 0, count: 0, offset: 0, length: f.length, kind: 'session', schema: f.encoding === 'binary' ? f.schema : RECORD_SCHEMA }, false);
        continue;
      }
      if (!f.ok) {
        if (f.length !== undefined && f.reason !== 'torn') {
          pending.push({ offset: f.offset, length: f.length, reason: f.reason, message: f.message });
          continue;
        }
        const stop = { offset: f.offset, length: 0, reason: f.reason, message: f.message };
        const p0 = pending[0] ?? stop;
        damage = { start: p0.offset, reason: p0.reason, message: p0.message, stop };
        break;
      }
      let r: StorageRecord;
      try {
        r = validateRecord(f.record);
        if (r.type === 'session') throw new Error(`a second session header`);
      } catch (err) {
        pending.push({ offset: f.offset, length: f.length, reason: 'bad_record', message: `frame at offset ${f.offset}: ${(err as Error).message}` });
        continue;
      }
      const span = recordSpan(r);
      if (pending.length > 0) {
        const gap = span.seq - expected;
        if (gap < pending.length) {
          const p0 = pending[0] as Pending;
          a.tail = {
            offset: p0.offset,
            kind: 'seq_gap',
            clearlyInvalid: false,
            seq: expected,
            message: `${pending.length} undecodable frame(s) at offset ${p0.offset} cannot hold seq ${expected}..${span.seq - 1} before the frame at offset ${f.offset} (seq ${span.seq}); ${p0.message}`,
          };
          pending = [];
          break;
        }
        const p0 = pending[0] as Pending;
        // A wrong length may have stepped over valid frames: if one starts inside, resync there.
        const inside = await resync(fh, p0.offset, st.size, expected, f.offset);
        if (inside.found !== null) {
          damage = { start: p0.offset, reason: p0.reason, message: p0.message, stop: null };
          found = inside;
          break;
        }
        // Kept corrupt middle frames: one event each, the last takes the rest of the gap.
        const last = pending[pending.length - 1] as Pending;
        a.corrupt.push({
          offset: p0.offset,
          length: last.offset + last.length - p0.offset,
          frames: pending.length,
          fromSeq: expected,
          toSeq: span.seq,
          reason: p0.reason,
          message: p0.message,
        });
        for (let i = 0; i < pending.length; i++) {
          const p = pending[i] as Pending;
          const count = i === pending.length - 1 ? span.seq - expected : 1;
          await emit({ v: 1, seq: expected, count, offset: p.offset, length: p.length, kind: CORRUPT_KIND, schema: RECORD_SCHEMA }, true);
          expected += count;
        }
        pending = [];
      }
      if (span.seq !== expected) {
        a.tail = {
          offset: f.offset,
          kind: 'seq_gap',
          clearlyInvalid: false,
          seq: expected,
          message: `frame at offset ${f.offset} holds seq ${span.seq}, expected ${expected}`,
        };
        break;
      }
      const events: SessionEvent[] = isRowType(r.type) && 'seq0' in r ? expandRow(r as ChunkRow) : [r as SessionEvent];
      for (const e of events) foldEvent(a.summary as SessionSummary, e);
      const lastEvent = events[events.length - 1];
      if (lastEvent !== undefined) a.lastEventTime = lastEvent.time;
      await emit(entryFor(r, f.offset, f.length, f.schema), false);
      expected += span.count;
      a.lastGoodOffset = f.offset + f.length;
      a.lastEncoding = f.encoding;
    }
    if (a.header === null || a.tail !== null) break;
    // Undecodable frames at the very end may hide valid frames behind a wrong length too.
    if (damage === null && pending.length > 0) {
      const p0 = pending[0] as Pending;
      damage = { start: p0.offset, reason: p0.reason, message: p0.message, stop: null };
    }
    if (damage === null) break;

    const rs = found ?? (await resync(fh, damage.start, st.size, expected));
    const v = rs.found;
    if (v !== null) {
      // The damaged bytes hold the seqs the next valid frame skips; bytes that hold none (garbage
      // between two frames) take that frame into the range, so every indexed range holds an event.
      const gap = v.seq - expected;
      const end = gap > 0 ? v.offset : v.offset + v.length;
      const count = gap > 0 ? gap : v.count;
      const taken = gap > 0 ? '' : ` (the damaged bytes hold no event, so the range takes that frame too)`;
      a.corrupt.push({
        offset: damage.start,
        length: end - damage.start,
        frames: 1,
        fromSeq: expected,
        toSeq: expected + count,
        reason: damage.reason,
        message: `${damage.message}; skipped bytes [${damage.start}, ${v.offset}) up to the next valid frame (offset ${v.offset}, seq ${v.seq})${taken}`,
      });
      await emit({ v: 1, seq: expected, count, offset: damage.start, length: end - damage.start, kind: CORRUPT_KIND, schema: RECORD_SCHEMA }, true);
      expected += count;
      pending = [];
      pos = end;
      continue;
    }

    // No valid frame continues the log after the damage: it is a tail.
    let kind: TailKind = 'damaged';
    const parts: string[] = [];
    if (pending.length > 0) parts.push(`${pending.length} undecodable frame(s) at the end: ${(pending[0] as Pending).message}`);
    const stop = damage.stop;
    if (stop !== null) {
      kind = stop.reason === 'torn' ? 'torn' : stop.reason === 'oversized' ? 'bad_length' : 'garbage';
      parts.push(stop.message);
    }
    // Cut only what no valid frame follows (a valid frame whose seqs cannot follow is for a human).
    const u = rs.unconfirmed[0];
    if (u !== undefined) parts.push(`${rs.unconfirmed.length} valid frame(s) follow (the first at offset ${u.offset}, seq ${u.seq}) that do not continue seq ${expected}, so the tail is kept for a human to inspect`);
    a.tail = { offset: damage.start, kind, clearlyInvalid: u === undefined, seq: expected, message: parts.join('; then ') };
    break;
  }
  a.eventCount = expected;
  if (a.header === null && a.headerFault === null) a.headerFault = 'header frame is missing';
  return a;
}
