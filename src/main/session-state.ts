/**
 * Opening a session on a normal path (catalog, open, page, append): decide
 * from the sidecars and a stat of the log, with bounded reads only, whether
 * the session can be served and up to where (SPEC section 3, trust rules).
 * Never writes; never throws for damage (damage is a status with reasons).
 */
import { promises as fsp } from 'node:fs';
import { EntriesFile, EntryFormatError } from '../streams/entries-file.js';
import { scanFile } from '../streams/frame-scanner.js';
import { expandRow, validateRecord } from './core/chunk-codec.js';
import { foldEvent } from './core/summary.js';
import type { ChunkRow, SessionEvent } from './core/types.js';
import { isRowType } from './core/types.js';
import { readMeta, type SessionMeta } from './meta-file.js';
import type { SessionPaths } from './paths.js';

export type SessionStatus = 'ok' | 'degraded' | 'repair_required';

export interface SessionState {
  id: string;
  paths: SessionPaths;
  status: SessionStatus;
  /** Why the status is not ok, most important first. */
  reasons: string[];
  /** Metadata, caught up in memory when the sidecar was stale; null when unusable. */
  meta: SessionMeta | null;
  /** True when `meta` was caught up from the indexed tail (the file on disk is older). */
  metaStale: boolean;
  /** Bytes of the entry sidecar that are trusted (whole lines). */
  entriesSize: number;
  /** Bytes of the log covered by trusted entries: the only bytes ever served. */
  indexedLength: number;
  nextSeq: number;
  frameCount: number;
  logSize: number;
  logMtimeMs: number;
}

function broken(paths: SessionPaths, reason: string, meta: SessionMeta | null = null): SessionState {
  return {
    id: paths.id,
    paths,
    status: 'repair_required',
    reasons: [reason],
    meta,
    metaStale: false,
    entriesSize: 0,
    indexedLength: 0,
    nextSeq: 0,
    frameCount: 0,
    logSize: 0,
    logMtimeMs: 0,
  };
}

/** Catch metadata up from entries past `meta.entriesLength`, reading only the indexed tail. */
async function catchUp(paths: SessionPaths, entries: EntriesFile, meta: SessionMeta): Promise<SessionMeta | string> {
  const tail = await entries.readRange(meta.entriesLength, entries.size);
  let offset = meta.indexedLength;
  let seq = meta.nextSeq;
  for (const { entry } of tail) {
    if (entry.offset !== offset) return `entry sidecar at seq ${entry.seq} names offset ${entry.offset}, expected ${offset}`;
    if (entry.seq !== seq) return `entry sidecar jumps from seq ${seq} to ${entry.seq}`;
    offset += entry.length;
    seq += entry.count;
  }
  const caught: SessionMeta = { ...meta, tokens: { ...meta.tokens }, issues: [...meta.issues] };
  let next = meta.nextSeq;
  for await (const f of scanFile(paths.events, meta.indexedLength, offset)) {
    if (!f.ok) return `stale metadata cannot be caught up: ${f.message}`;
    let r;
    try {
      r = validateRecord(f.record);
    } catch (err) {
      return `stale metadata cannot be caught up: frame at offset ${f.offset}: ${(err as Error).message}`;
    }
    const events: SessionEvent[] = isRowType(r.type) && 'seq0' in r ? expandRow(r as ChunkRow) : [r as SessionEvent];
    for (const e of events) {
      if (e.seq !== next) return `frame at offset ${f.offset} holds seq ${e.seq}, expected ${next}`;
      foldEvent(caught, e);
      next++;
    }
  }
  caught.nextSeq = seq;
  caught.eventCount = seq;
  caught.frameCount = meta.frameCount + tail.length;
  caught.indexedLength = offset;
  caught.entriesLength = entries.size;
  return caught;
}

export async function loadSessionState(paths: SessionPaths): Promise<SessionState> {
  const metaOrReason = await readMeta(paths.meta);
  let logSize: number;
  let logMtimeMs: number;
  try {
    const st = await fsp.stat(paths.events);
    logSize = st.size;
    logMtimeMs = st.mtimeMs;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return broken(paths, code === 'ENOENT' ? 'log file is missing' : `log file unreadable: ${(err as Error).message}`);
  }
  if (typeof metaOrReason === 'string') return { ...broken(paths, metaOrReason), logSize, logMtimeMs };
  let meta = metaOrReason;
  let entries: EntriesFile;
  try {
    entries = await EntriesFile.open(paths.entries);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ...broken(paths, code === 'ENOENT' ? 'entry sidecar is missing' : `entry sidecar unreadable: ${(err as Error).message}`, meta), logSize, logMtimeMs };
  }
  try {
    if (entries.size === 0) return { ...broken(paths, 'entry sidecar is empty', meta), logSize, logMtimeMs };
    if (!(await entries.endsWithNewline())) return { ...broken(paths, `entry sidecar ends in a partial line (size ${entries.size})`, meta), logSize, logMtimeMs };
    const first = await entries.first();
    if (first === null || first.entry.offset !== 0 || first.entry.kind !== 'session' || first.entry.count !== 0) {
      return { ...broken(paths, 'entry sidecar does not start with the session header at offset 0', meta), logSize, logMtimeMs };
    }
    const last = (await entries.last())!;
    const indexedLength = last.entry.offset + last.entry.length;
    const nextSeq = last.entry.seq + last.entry.count;
    if (indexedLength > logSize) {
      return { ...broken(paths, `entry sidecar points past the log (indexes ${indexedLength} bytes, log has ${logSize})`, meta), logSize, logMtimeMs };
    }
    let metaStale = false;
    if (meta.entriesLength !== entries.size || meta.indexedLength !== indexedLength || meta.nextSeq !== nextSeq) {
      if (meta.entriesLength > entries.size || meta.indexedLength > indexedLength || meta.nextSeq > nextSeq) {
        return { ...broken(paths, `metadata is ahead of the entry sidecar (metadata indexes ${meta.indexedLength} bytes, sidecar ${indexedLength})`, meta), logSize, logMtimeMs };
      }
      const caught = await catchUp(paths, entries, meta);
      if (typeof caught === 'string') return { ...broken(paths, caught, meta), logSize, logMtimeMs };
      meta = caught;
      metaStale = true;
    }
    const reasons: string[] = [];
    if (logSize > indexedLength) reasons.push(`unindexed tail of ${logSize - indexedLength} bytes at offset ${indexedLength} is not served`);
    for (const issue of meta.issues) reasons.push(issue.message);
    return {
      id: paths.id,
      paths,
      status: reasons.length > 0 ? 'degraded' : 'ok',
      reasons,
      meta,
      metaStale,
      entriesSize: entries.size,
      indexedLength,
      nextSeq,
      frameCount: meta.frameCount,
      logSize,
      logMtimeMs,
    };
  } catch (err) {
    if (err instanceof EntryFormatError) return { ...broken(paths, err.message, meta), logSize, logMtimeMs };
    throw err;
  } finally {
    await entries.close();
  }
}
