/**
 * The writer's side of the frame-checksum projection (see
 * streams/frame-crc-file.ts): append one record per frame this writer
 * writes. Derived data: never fsynced, and any failure only turns the
 * projection off for this writer (pages then validate those frames in full).
 * Frames this writer did not encode itself (an unindexed tail it indexes on
 * open, imports, reindex) get no record, since only JSON.stringify output of
 * a validated record may skip validation.
 */
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync } from 'node:fs';
import { writeAllAt } from '../streams/write-at.js';
import { join } from 'node:path';
import { CRC_FILE_NAME, CRC_RECORD_BYTES, recordOffset } from '../streams/frame-crc-file.js';
import type { SessionPaths } from './paths.js';

export function crcPath(paths: SessionPaths): string {
  return join(paths.projections, CRC_FILE_NAME);
}

export class CrcProjection {
  private constructor(
    private fd: number | null,
    private size: number,
  ) {}

  /**
   * Open for appending. `fresh` starts an empty file (new session). An
   * existing file is kept if it is whole records that end at or before the
   * indexed end; records past it (a log cut by repair) make it start over.
   */
  static open(paths: SessionPaths, indexedLength: number, fresh: boolean): CrcProjection {
    try {
      mkdirSync(paths.projections, { recursive: true });
      const fd = openSync(crcPath(paths), fresh ? 'w' : 'a+');
      let size = fresh ? 0 : fstatSync(fd).size;
      if (size % CRC_RECORD_BYTES !== 0 || (size > 0 && lastEnd(fd, size) > indexedLength)) {
        ftruncateSync(fd, 0);
        size = 0;
      }
      closeSync(fd);
      return new CrcProjection(openSync(crcPath(paths), 'r+'), size);
    } catch {
      return new CrcProjection(null, 0);
    }
  }

  append(records: Buffer): void {
    if (this.fd === null || records.length === 0) return;
    try {
      writeAllAt(this.fd, records, this.size);
      this.size += records.length;
    } catch {
      this.close();
    }
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

function lastEnd(fd: number, size: number): number {
  const rec = Buffer.alloc(CRC_RECORD_BYTES);
  readSync(fd, rec, 0, CRC_RECORD_BYTES, size - CRC_RECORD_BYTES);
  return recordOffset(rec, 0) + rec.readUInt32LE(8);
}
