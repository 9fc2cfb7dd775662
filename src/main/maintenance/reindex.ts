/**
 * `reindex`: rebuild a session's sidecars (entry sidecar and metadata) from
 * its canonical log, streaming it with bounded memory, under the writer lock
 * so it never races a writer. The new entry sidecar is written as a temp
 * file, fsynced and renamed over the old one; then the metadata is written
 * the same way (writeMeta). A crash in between leaves a new entry sidecar
 * with old metadata, which the normal path reports (repair_required or
 * stale) and a second reindex fixes; the log is never touched.
 *
 * What gets indexed is decided by `analyzeLog`: every good frame of the
 * valid prefix, corrupt middle frames kept with their length (recorded in
 * `meta.issues`, session degraded), nothing of an invalid tail (`repair`
 * cuts it).
 */
import { promises as fsp } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { PagerError } from '../core/errors.js';
import { encodeEntry } from '../../streams/entry-codec.js';
import { INDEX_FILE_NAME, indexRecords } from '../../streams/frame-index-file.js';
import { localFiles, syncFolder } from '../../storage/local/local-backend.js';
import type { Lease } from '../../storage/backend.js';
import { checkMetaShape, readMeta, writeMeta, type RecordedIssue, type SessionMeta } from '../meta-file.js';
import type { SessionPaths } from '../paths.js';
import { analyzeLog, type CorruptRange, type LogAnalysis } from './analyze.js';
import { BufferedWriter } from './io.js';
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

export async function sessionExists(paths: SessionPaths): Promise<boolean> {
  try {
    await fsp.access(paths.events);
    return true;
  } catch {
    return false;
  }
}

export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
}

export async function reindexSession(paths: SessionPaths, opts: ReindexOptions = {}): Promise<ReindexResult> {
  if (!(await sessionExists(paths))) throw new PagerError('session_not_found', `session ${paths.id} not found`);
  let lock: Lease | null = null;
  if (!opts.locked) lock = await localFiles.lease(paths.lock, `session ${paths.id}`);
  try {
    return await reindexLocked(paths, opts);
  } finally {
    await lock?.release();
  }
}

async function reindexLocked(paths: SessionPaths, opts: ReindexOptions): Promise<ReindexResult> {
  const old = await readMeta(localFiles, paths.meta);
  const oldMeta = typeof old === 'string' ? null : old;
  await fsp.mkdir(dirname(paths.entries), { recursive: true });
  const tmp = tempPathFor(paths.entries);
  const idxTmp = tempPathFor(join(dirname(paths.entries), `${paths.id}.frames.idx`));
  const fh = await fsp.open(tmp, 'wx');
  let renamed = false;
  try {
    const out = new BufferedWriter(fh);
    // The binary frame index, rebuilt beside the sidecar from the same lines (derived: not fsynced).
    const idxFh = await fsp.open(idxTmp, 'wx');
    const idx = new BufferedWriter(idxFh);
    let analysis: LogAnalysis;
    try {
      analysis = await analyzeLog(paths.events, {
        onProgress: opts.onProgress,
        onEntry: async (entry) => {
          await out.write(encodeEntry(entry));
          await idx.write(indexRecords([entry]));
        },
      });
      await idx.flush();
    } finally {
      await idxFh.close();
    }
    if (analysis.header === null) {
      throw new PagerError('repair_required', `session ${paths.id} cannot be reindexed: ${analysis.headerFault ?? 'no header frame'}`);
    }
    await out.flush();
    await fh.sync();
    await fh.close();
    await fsp.rename(tmp, paths.entries);
    renamed = true;
    await syncFolder(dirname(paths.entries));

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
    await writeMeta(localFiles, paths.meta, meta);
    // Derived projections were built from the old sidecars: all go, but the frame index, rebuilt
    // from the new lines, and checksums for the frames whose bytes are what a writer writes
    // (projection-files.ts), read from the log again.
    const projections = await ProjectionFiles.create(localFiles, paths, false);
    try {
      const log = await fsp.open(paths.events, 'r');
      try {
        await projections.frames({ read: async (pos, len) => {
          const b = Buffer.allocUnsafe(len);
          const { bytesRead } = await log.read(b, 0, len, pos);
          return b.subarray(0, bytesRead);
        } }, analysis.indexedEnd);
      } finally {
        await log.close();
      }
      await projections.finish();
    } catch (err) {
      await projections.abandon();
      throw err;
    }
    await fsp.rename(idxTmp, join(paths.projections, INDEX_FILE_NAME));
    return { id: paths.id, analysis, entriesLength: out.length, meta };
  } finally {
    if (!renamed) {
      await fh.close().catch(() => undefined);
      await fsp.rm(tmp, { force: true });
    }
    await fsp.rm(idxTmp, { force: true });
  }
}
