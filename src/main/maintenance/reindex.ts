/**
 * `reindex`: rebuild a session's sidecars (entry sidecar and metadata) from
 * its canonical log, streaming it with bounded memory, under the writer lock
 * so it never races a writer, through the storage seam (any backend). The
 * new entry sidecar is written as a replacement (local files: a temp file,
 * fsynced and renamed over the old one; storage/replacement.ts), then the
 * metadata is replaced (writeMeta). A crash in between leaves a new entry
 * sidecar with old metadata, which the normal path reports (repair_required
 * or stale) and a second reindex fixes; the log is never touched.
 *
 * What gets indexed is decided by `analyzeLog`: every good frame of the
 * valid prefix, corrupt middle frames kept with their length (recorded in
 * `meta.issues`, session degraded), nothing of an invalid tail (`repair`
 * cuts it).
 */
import { PagerError } from '../../core/errors.js';
import { encodeEntry, parseEntry } from '../../streams/entry-codec.js';
import { localFiles } from '../../storage/local/local-backend.js';
import type { Lease, StorageBackend } from '../../storage/backend.js';
import { openReplacement } from '../../storage/replacement.js';
import { checkMetaShape, readMeta, writeMeta, type RecordedIssue, type SessionMeta } from '../meta-file.js';
import type { SessionPaths } from '../paths.js';
import { analyzeLog, type CorruptRange, type LogAnalysis } from './analyze.js';
import { BufferedWriter, ObjectLineReader } from './io.js';
import { ProjectionFiles } from './projection-files.js';

/** A recorded issue of a kept corrupt range: seq range [seq, toSeq) and bytes [offset, offset + length). */
export interface CorruptIssue extends RecordedIssue {
  code: 'corrupt_frame';
  offset: number;
  seq: number;
  toSeq: number;
  length: number;
  frames: number;
}

export function corruptIssue(c: CorruptRange): CorruptIssue {
  return {
    code: 'corrupt_frame',
    message: `${c.frames} corrupt frame(s) at offset ${c.offset} (${c.length} bytes) hold seq ${c.fromSeq}..${c.toSeq - 1}: ${c.message}`,
    offset: c.offset,
    seq: c.fromSeq,
    toSeq: c.toSeq,
    length: c.length,
    frames: c.frames,
  };
}

export interface ReindexResult {
  id: string;
  analysis: LogAnalysis;
  entriesLength: number;
  meta: SessionMeta;
}

export interface ReindexOptions {
  onProgress?: (bytes: number) => void;
  /** The caller already holds the writer lock (repair). */
  locked?: boolean;
}

/** Whether the session's log exists (`paths`: its keys in `storage`; default: local files, the keys paths). */
export async function sessionExists(paths: SessionPaths, storage: StorageBackend = localFiles): Promise<boolean> {
  return (await storage.stat(paths.events)) !== null;
}

/** `paths`: the session's keys in `storage` (default: local files, the keys paths). */
export async function reindexSession(paths: SessionPaths, opts: ReindexOptions = {}, storage: StorageBackend = localFiles): Promise<ReindexResult> {
  if (!(await sessionExists(paths, storage))) throw new PagerError('session_not_found', `session ${paths.id} not found`);
  let lock: Lease | null = null;
  if (!opts.locked) lock = await storage.lease(paths.lock, `session ${paths.id}`);
  try {
    return await reindexLocked(paths, opts, storage);
  } finally {
    await lock?.release();
  }
}

async function reindexLocked(paths: SessionPaths, opts: ReindexOptions, storage: StorageBackend): Promise<ReindexResult> {
  const old = await readMeta(storage, paths.meta);
  const oldMeta = typeof old === 'string' ? null : old;
  const sidecar = await openReplacement(storage, paths.entries, false);
  let placed = false;
  try {
    const out = new BufferedWriter(sidecar);
    const analysis = await analyzeLog(paths.events, { onProgress: opts.onProgress, onEntry: (entry) => out.write(encodeEntry(entry)) }, storage);
    if (analysis.header === null) {
      throw new PagerError('repair_required', `session ${paths.id} cannot be reindexed: ${analysis.headerFault ?? 'no header frame'}`);
    }
    await out.flush();
    await sidecar.commit();
    placed = true;

    const header = analysis.header;
    const createdAt = Number.isSafeInteger(header.createdAt) ? (header.createdAt as number) : (oldMeta?.createdAt ?? Math.floor(analysis.logMtimeMs));
    const meta: SessionMeta = {
      v: 1,
      id: paths.id,
      header,
      format: oldMeta?.format ?? analysis.lastEncoding ?? 'jsonl',
      fingerprint: { size: analysis.logSize, mtimeMs: analysis.logMtimeMs },
      nextSeq: analysis.eventCount,
      eventCount: analysis.eventCount,
      frameCount: analysis.frameCount,
      indexedLength: analysis.indexedEnd,
      entriesLength: out.length,
      createdAt,
      // Deterministic: the time of the last event (a second reindex writes the same bytes).
      updatedAt: analysis.lastEventTime ?? createdAt,
      ...(analysis.summary ?? {}),
      issues: analysis.corrupt.map(corruptIssue),
    } as SessionMeta;
    const shaped = checkMetaShape(meta);
    if (typeof shaped === 'string') throw new Error(`reindex built invalid metadata: ${shaped}`);
    await writeMeta(storage, paths.meta, meta);
    await rebuildProjections(paths, analysis.indexedEnd, out.length, storage);
    return { id: paths.id, analysis, entriesLength: out.length, meta };
  } finally {
    if (!placed) await sidecar.abort();
  }
}

/**
 * Derived projections were built from the old sidecars: all go, but the
 * frame index, rebuilt from the new sidecar's lines (byte for byte what the
 * writer keeps), and checksums for the frames whose bytes are what a writer
 * writes (projection-files.ts), read from the log again.
 */
async function rebuildProjections(paths: SessionPaths, indexedEnd: number, entriesLength: number, storage: StorageBackend): Promise<void> {
  const projections = await ProjectionFiles.create(storage, paths, true);
  try {
    const lines = await ObjectLineReader.open(storage, paths.entries, undefined, entriesLength);
    try {
      for (let l = await lines.next(); l !== null; l = await lines.next()) {
        const e = parseEntry(l.line.toString('utf8'));
        if (typeof e === 'string') throw new Error(`the entry sidecar reindex wrote does not read back: ${e}`);
        await projections.indexEntry(e);
      }
    } finally {
      await lines.close();
    }
    const log = await storage.openReader(paths.events);
    try {
      await projections.frames(log, indexedEnd);
    } finally {
      await log.close();
    }
    await projections.finish();
  } catch (err) {
    await projections.abandon();
    throw err;
  }
}
