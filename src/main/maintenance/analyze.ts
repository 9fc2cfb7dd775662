/**
 * The one full scan of a log that explicit maintenance runs (`reindex`,
 * `repair`, `doctor --deep`): stream every frame with bounded memory
 * (scanFrames: one block plus the largest frame), check it (checksum, decode,
 * row rules, seq continuity), fold the metadata summary, and emit the entry
 * line each indexable frame gets. Callers decide what to do with the lines
 * (write them to a temp sidecar, or compare them with the existing one).
 *
 * How a log is classified (SPEC section 3):
 * - frame 0 must decode as a `session` header, else nothing is indexable;
 * - a frame that fails its checksum, decode or record rules but whose length
 *   is known, and that is followed by a good frame, is a *corrupt middle
 *   frame*: it is kept and indexed with its length (kind `corrupt`), its seq
 *   range is taken from the next good frame, and the session is degraded;
 * - such frames with no good frame after them, a torn frame, an oversized
 *   length, or garbage with no plausible frame start after it, form a
 *   *clearly invalid tail*: not indexed, and `repair` cuts it;
 * - a good frame whose seq does not continue, or garbage followed by
 *   something that could be a frame, stops indexing there: the rest is an
 *   unindexed tail that repair does not cut (it needs a human).
 */
import type { FileHandle } from 'node:fs/promises';
import { promises as fsp } from 'node:fs';
import { expandRow, recordSpan, validateRecord } from '../core/chunk-codec.js';
import { entryFor } from '../../streams/batch-encoder.js';
import { emptySummary, foldEvent, type SessionSummary } from '../core/summary.js';
import type { ChunkRow, EntryLine, SessionEvent, SessionHeader, StorageRecord } from '../core/types.js';
import { isRowType } from '../core/types.js';
import { RECORD_SCHEMA, type FaultReason, type FrameEncoding } from '../../streams/frame-codec.js';
import { scanFrames } from '../../streams/frame-scanner.js';
import { IO_BLOCK_BYTES } from './io.js';
import { quoteValue } from '../core/excerpt.js';

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

/** Whether [from, size) holds something that could start a frame ("\n{" or the SPF2 magic). */
async function plausibleFrameAfter(fh: FileHandle, from: number, size: number): Promise<boolean> {
  let pos = from + 1;
  let prev = Buffer.alloc(0);
  while (pos < size) {
    const n = Math.min(IO_BLOCK_BYTES, size - pos);
    const block = Buffer.allocUnsafe(n);
    const { bytesRead } = await fh.read(block, 0, n, pos);
    if (bytesRead === 0) break;
    const buf = Buffer.concat([prev, block.subarray(0, bytesRead)]);
    if (buf.indexOf('\n{') !== -1 || buf.indexOf('SPF2') !== -1) return true;
    prev = Buffer.from(buf.subarray(Math.max(0, buf.length - 3)));
    pos += bytesRead;
  }
  return false;
}

export async function analyzeLog(path: string, opts: AnalyzeOptions = {}): Promise<LogAnalysis> {
  const fh = await fsp.open(path, 'r');
  try {
    return await analyzeHandle(fh, opts);
  } finally {
    await fh.close();
  }
}

export async function analyzeHandle(fh: FileHandle, opts: AnalyzeOptions = {}): Promise<LogAnalysis> {
  const st = await fh.stat();
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
  let stoppedAt: { offset: number; reason: FaultReason; message: string } | null = null;

  for await (const f of scanFrames(fh, 0, st.size, { onProgress: opts.onProgress })) {
    if (first) {
      first = false;
      if (!f.ok) {
        a.headerFault = `header frame: ${f.message}`;
        return a;
      }
      const h = f.record as Record<string, unknown>;
      if (h.type !== 'session') {
        a.headerFault = `frame 0 is not a session header (type ${quoteValue(h.type)})`;
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
      stoppedAt = { offset: f.offset, reason: f.reason, message: f.message };
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
      // Kept corrupt middle frames: one event each, the last takes the rest of the gap.
      const p0 = pending[0] as Pending;
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
  a.eventCount = expected;
  if (a.header === null && a.headerFault === null) a.headerFault = 'header frame is missing';
  if (a.tail !== null) return a;

  if (pending.length > 0 || stoppedAt !== null) {
    const p0 = pending[0];
    const offset = p0 !== undefined ? p0.offset : (stoppedAt as { offset: number }).offset;
    let kind: TailKind = 'damaged';
    let clearlyInvalid = true;
    const parts: string[] = [];
    if (p0 !== undefined) parts.push(`${pending.length} undecodable frame(s) at the end: ${p0.message}`);
    if (stoppedAt !== null) {
      if (stoppedAt.reason === 'torn') kind = 'torn';
      else if (stoppedAt.reason === 'oversized') kind = 'bad_length';
      else {
        kind = 'garbage';
        clearlyInvalid = !(await plausibleFrameAfter(fh, stoppedAt.offset, st.size));
      }
      parts.push(stoppedAt.message);
      if (!clearlyInvalid) parts.push('something that may be a frame follows, so the tail is kept for a human to inspect');
    }
    const message = parts.join('; then ');
    a.tail = { offset, kind, clearlyInvalid, seq: expected, message };
  }
  return a;
}
