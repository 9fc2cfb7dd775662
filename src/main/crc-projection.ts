/**
 * The writer's side of the frame-checksum projection (see
 * streams/frame-crc-file.ts): append one record per frame this writer
 * writes. Derived data: never fsynced, and any failure only turns the
 * projection off for this writer (pages then validate those frames in full).
 * Frames this writer did not encode itself (an unindexed tail it indexes on
 * open, imports, reindex) get no record, since only JSON.stringify output of
 * a validated record may skip validation.
 */
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { writeAllAt } from '../streams/write-at.js';
import { join } from 'node:path';
import { chainCrcRecords, CRC_FILE_NAME, CRC_FILE_NAME_V1, CRC_RECORD_BYTES, lastCrcLink, type CrcLink } from '../streams/frame-crc-file.js';
import type { SessionPaths } from './paths.js';

export function crcPath(paths: SessionPaths): string {
  return join(paths.projections, CRC_FILE_NAME);
}

export class CrcProjection {
  private constructor(
    private fd: number | null,
    private size: number,
    /** Where the chain of records stands (frame-crc-file.ts). */
    private link: CrcLink | null,
  ) {}

  /**
   * Open for appending. `fresh` starts an empty file (new session). An
   * existing file is kept if it is whole records that end at or before the
   * indexed end; records past it (a log cut by repair) make it start over.
   */
  static open(paths: SessionPaths, indexedLength: number, fresh: boolean): CrcProjection {
    try {
      mkdirSync(paths.projections, { recursive: true });
      rmSync(join(paths.projections, CRC_FILE_NAME_V1), { force: true });
      const fd = openSync(crcPath(paths), fresh ? 'w' : 'a+');
      let size = fresh ? 0 : fstatSync(fd).size;
      let link = lastCrcLink(fd, size);
      if (size % CRC_RECORD_BYTES !== 0 || (link !== null && link.end > indexedLength)) {
        ftruncateSync(fd, 0);
        size = 0;
        link = null;
      }
      closeSync(fd);
      return new CrcProjection(openSync(crcPath(paths), 'r+'), size, link);
    } catch {
      return new CrcProjection(null, 0, null);
    }
  }

  /** Records for frames of `lengths` bytes, laid out back to back in `bytes` from log offset `offset`. */
  append(bytes: Uint8Array, offset: number, lengths: readonly number[]): void {
    if (this.fd === null || lengths.length === 0) return;
    try {
      const { records, link } = chainCrcRecords(bytes, offset, lengths, this.link);
      writeAllAt(this.fd, records, this.size);
      this.size += records.length;
      this.link = link;
    } catch {
      this.close();
    }
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
