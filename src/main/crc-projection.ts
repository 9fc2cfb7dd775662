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
import { lastMetaLink, META_FILE_NAME, META_RECORD_BYTES, metaRecords, type MetaLink } from '../streams/frame-meta-file.js';
import type { SessionPaths } from './paths.js';

export function crcPath(paths: SessionPaths): string {
  return join(paths.projections, CRC_FILE_NAME);
}

export function metaPath(paths: SessionPaths): string {
  return join(paths.projections, META_FILE_NAME);
}

/** The row-metadata file beside the checksums (streams/frame-meta-file.ts): record k of both is frame k's. */
interface MetaFile {
  fd: number;
  size: number;
  link: MetaLink;
}

export class CrcProjection {
  private constructor(
    private fd: number | null,
    private size: number,
    /** Where the chain of records stands (frame-crc-file.ts). */
    private link: CrcLink | null,
    private meta: MetaFile | null,
  ) {}

  /**
   * Open for appending. `fresh` starts an empty file (new session). An
   * existing file is kept if it is whole records that end at or before the
   * indexed end; records past it (a log cut by repair) make it start over.
   * The metadata file is kept only while it has exactly one record per
   * checksum record; otherwise it is removed for good (its records would no
   * longer line up with the frames).
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
      return new CrcProjection(openSync(crcPath(paths), 'r+'), size, link, CrcProjection.openMeta(paths, size / CRC_RECORD_BYTES, fresh));
    } catch {
      return new CrcProjection(null, 0, null, null);
    }
  }

  private static openMeta(paths: SessionPaths, records: number, fresh: boolean): MetaFile | null {
    try {
      const fd = openSync(metaPath(paths), fresh ? 'w+' : 'a+');
      const size = fstatSync(fd).size;
      if (size === records * META_RECORD_BYTES) {
        closeSync(fd);
        const rw = openSync(metaPath(paths), 'r+');
        return { fd: rw, size, link: lastMetaLink(rw, size) };
      }
      closeSync(fd);
    } catch {
      // Fall through: no metadata for this writer.
    }
    rmSync(metaPath(paths), { force: true });
    return null;
  }

  /** Records for frames of `lengths` bytes, laid out back to back in `bytes` from log offset `offset`. */
  append(bytes: Uint8Array, offset: number, lengths: readonly number[]): void {
    if (this.fd === null || lengths.length === 0) return;
    try {
      const { records, link } = chainCrcRecords(bytes, offset, lengths, this.link);
      this.appendMeta(bytes, lengths, records);
      writeAllAt(this.fd, records, this.size);
      this.size += records.length;
      this.link = link;
    } catch {
      this.close();
    }
  }

  /** The frames' metadata records, written before their checksum records: a record without its checksum record is never read. */
  private appendMeta(bytes: Uint8Array, lengths: readonly number[], crcRecords: Buffer): void {
    const m = this.meta;
    if (m === null) return;
    try {
      const crcs = lengths.map((_, i) => crcRecords.readUInt32LE(i * CRC_RECORD_BYTES + 12));
      const { records, link } = metaRecords(bytes, lengths, crcs, m.link);
      writeAllAt(m.fd, records, m.size);
      m.size += records.length;
      m.link = link;
    } catch {
      this.closeMeta();
    }
  }

  private closeMeta(): void {
    if (this.meta !== null) closeSync(this.meta.fd);
    this.meta = null;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    this.closeMeta();
  }
}
