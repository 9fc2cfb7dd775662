/**
 * Turns an append batch of logical events into frames and entry-sidecar
 * lines, pure. Shared by the durable writer, `gen`, `import` and `reindex`,
 * so every path that writes a log frames and indexes it the same way.
 */
import { countedGroup } from '../core/page-rule.js';
import { packBatch, recordSpan } from '../core/chunk-codec.js';
import { foldEvent, type SessionSummary } from '../core/summary.js';
import type { EntryLine, SessionEvent, StorageRecord } from '../core/types.js';
import { encodeFrame, RECORD_SCHEMA, type FrameEncoding } from './frame-codec.js';
import { encodeEntry } from './entry-codec.js';
import { indexRecords } from './frame-index-file.js';

export interface EncodedBatch {
  /** The frames, concatenated, to write at `offset`. */
  bytes: Buffer;
  /** Entry lines for those frames, concatenated. */
  entries: string;
  entryList: EntryLine[];
  frameCount: number;
  /** Byte length of each frame, in order. */
  lengths: number[];
  /** Binary frame-index records for these frames (frame-index-file.ts). */
  index: Buffer;
}

/** The entry line of a storage record stored as a frame at `offset`. */
export function entryFor(record: StorageRecord, offset: number, length: number, schema = RECORD_SCHEMA): EntryLine {
  const span = recordSpan(record);
  const entry: EntryLine = { v: 1, seq: span.seq, count: span.count, offset, length, kind: record.type, schema };
  if (span.count === 1) {
    const group = countedGroup(record as SessionEvent);
    if (group !== undefined) entry.group = group;
  }
  return entry;
}

/**
 * Frame storage records at `offset`. Records must already be valid and in
 * seq order; the caller owns seq checks.
 */
export function encodeRecords(records: readonly StorageRecord[], offset: number, encoding: FrameEncoding): EncodedBatch {
  const frames: Buffer[] = [];
  const entryList: EntryLine[] = [];
  let entries = '';
  let at = offset;
  for (const r of records) {
    const frame = encodeFrame(r, encoding);
    const entry = entryFor(r, at, frame.length);
    frames.push(frame);
    entryList.push(entry);
    entries += encodeEntry(entry);
    at += frame.length;
  }
  return { bytes: frames.length === 1 ? (frames[0] as Buffer) : Buffer.concat(frames), entries, entryList, frameCount: frames.length, lengths: frames.map((f) => f.length), index: indexRecords(entryList) };
}

/** Pack one append batch canonically, frame it, and fold it into the summary. */
export function encodeBatch(events: readonly SessionEvent[], offset: number, encoding: FrameEncoding, summary?: SessionSummary): EncodedBatch {
  if (summary) for (const e of events) foldEvent(summary, e);
  return encodeRecords(packBatch(events), offset, encoding);
}
