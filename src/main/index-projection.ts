/**
 * The writer's side of the binary frame index (streams/frame-index-file.ts):
 * one record per frame it indexes. The index is only useful whole (from
 * the header on), so it is kept only while it is: a new session starts it;
 * an existing one keeps it if it still matches the session's frame count
 * and indexed length; anything else (reindexed, imported, a tail indexed on
 * open, a failed write) deletes it and pages plan from the JSONL sidecar.
 * Derived data: never fsynced.
 */
import { closeSync, fstatSync, mkdirSync, openSync, readSync, rmSync } from 'node:fs';
import { writeAllAt } from '../streams/write-at.js';
import { join } from 'node:path';
import { INDEX_FILE_NAME, INDEX_RECORD_BYTES, indexRecords } from '../streams/frame-index-file.js';
import type { SessionPaths } from './paths.js';

export function indexPath(paths: SessionPaths): string {
  return join(paths.projections, INDEX_FILE_NAME);
}

export class IndexProjection {
  private constructor(
    private readonly path: string,
    private fd: number | null,
    private size: number,
  ) {}

  /** Start a whole index for a new session, with its header frame's record. */
  static create(paths: SessionPaths, headerLength: number): IndexProjection {
    const path = indexPath(paths);
    try {
      mkdirSync(paths.projections, { recursive: true });
      const p = new IndexProjection(path, openSync(path, 'w'), 0);
      p.append(indexRecords([{ seq: 0, offset: 0, length: headerLength, count: 0 }]));
      return p;
    } catch {
      return new IndexProjection(path, null, 0);
    }
  }

  /** Keep an existing index only if it is whole for this session. */
  static open(paths: SessionPaths, frameCount: number, indexedLength: number): IndexProjection {
    const path = indexPath(paths);
    let fd: number;
    try {
      fd = openSync(path, 'r+');
    } catch {
      return new IndexProjection(path, null, 0);
    }
    const p = new IndexProjection(path, fd, fstatSync(fd).size);
    try {
      if (p.size !== frameCount * INDEX_RECORD_BYTES) throw new Error('size');
      const last = Buffer.alloc(INDEX_RECORD_BYTES);
      readSync(fd, last, 0, INDEX_RECORD_BYTES, p.size - INDEX_RECORD_BYTES);
      if (last.readDoubleLE(8) + last.readUInt32LE(24) !== indexedLength) throw new Error('end');
      return p;
    } catch {
      p.drop();
      return p;
    }
  }

  append(records: Buffer): void {
    if (this.fd === null || records.length === 0) return;
    try {
      writeAllAt(this.fd, records, this.size);
      this.size += records.length;
    } catch {
      this.drop();
    }
  }

  /** Stop keeping the index and delete it: a partial index is worse than none. */
  drop(): void {
    this.close();
    rmSync(this.path, { force: true });
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
