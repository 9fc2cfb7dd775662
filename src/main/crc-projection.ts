/**
 * The writer's side of the frame-checksum projection (see
 * streams/frame-crc-file.ts): append one record per frame this writer
 * writes. Derived data: never synced, and any failure only turns the
 * projection off for this writer (pages then validate those frames in full).
 * Frames this writer did not encode itself (an unindexed tail it indexes on
 * open) get no record, since only JSON.stringify output of a validated
 * record may skip validation; import and reindex give records to the frames
 * whose bytes are exactly that (maintenance/checksum-build.ts).
 */
import type { StorageBackend, WritableFile } from '../storage/backend.js';
import { projectionKey, type SessionKeys } from '../storage/layout.js';
import { chainCrcRecords, CRC_FILE_NAME, CRC_FILE_NAME_V1, CRC_RECORD_BYTES, lastCrcLink, type CrcLink } from '../streams/frame-crc-file.js';
import { lastMetaLink, META_FILE_NAME, META_RECORD_BYTES, metaRecords, type MetaLink } from '../streams/frame-meta-file.js';

export function crcKey(keys: Pick<SessionKeys, 'projections'>): string {
  return projectionKey(keys, CRC_FILE_NAME);
}

export function metaKey(keys: Pick<SessionKeys, 'projections'>): string {
  return projectionKey(keys, META_FILE_NAME);
}

/** The row-metadata file beside the checksums (streams/frame-meta-file.ts): record k of both is frame k's. */
interface MetaFile {
  file: WritableFile;
  size: number;
  link: MetaLink;
}

export class CrcProjection {
  private constructor(
    private file: WritableFile | null,
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
  static async open(storage: StorageBackend, keys: SessionKeys, indexedLength: number, fresh: boolean): Promise<CrcProjection> {
    let file: WritableFile | null = null;
    try {
      await storage.remove(projectionKey(keys, CRC_FILE_NAME_V1));
      file = await storage.openWritable(crcKey(keys), fresh ? 'truncate' : 'existing-or-create');
      let size = file.size;
      let link = await lastCrcLink(file, size);
      if (size % CRC_RECORD_BYTES !== 0 || (link !== null && link.end > indexedLength)) {
        await file.truncate(0);
        size = 0;
        link = null;
      }
      return new CrcProjection(file, size, link, await CrcProjection.openMeta(storage, keys, size / CRC_RECORD_BYTES, fresh));
    } catch {
      await file?.close().catch(() => undefined);
      return new CrcProjection(null, 0, null, null);
    }
  }

  private static async openMeta(storage: StorageBackend, keys: SessionKeys, records: number, fresh: boolean): Promise<MetaFile | null> {
    try {
      const file = await storage.openWritable(metaKey(keys), fresh ? 'truncate' : 'existing-or-create');
      const size = file.size;
      if (size === records * META_RECORD_BYTES) return { file, size, link: await lastMetaLink(file, size) };
      await file.close();
    } catch {
      // Fall through: no metadata for this writer.
    }
    await storage.remove(metaKey(keys)).catch(() => undefined);
    return null;
  }

  /** Records for frames of `lengths` bytes, laid out back to back in `bytes` from log offset `offset`. */
  async append(bytes: Uint8Array, offset: number, lengths: readonly number[]): Promise<void> {
    const file = this.file;
    if (file === null || lengths.length === 0) return;
    try {
      const { records, link } = chainCrcRecords(bytes, offset, lengths, this.link);
      await this.appendMeta(bytes, lengths, records);
      await file.write(records, this.size);
      this.size += records.length;
      this.link = link;
    } catch {
      await this.close();
    }
  }

  /** The frames' metadata records, written before their checksum records: a record without its checksum record is never read. */
  private async appendMeta(bytes: Uint8Array, lengths: readonly number[], crcRecords: Buffer): Promise<void> {
    const m = this.meta;
    if (m === null) return;
    try {
      const crcs = lengths.map((_, i) => crcRecords.readUInt32LE(i * CRC_RECORD_BYTES + 12));
      const { records, link } = metaRecords(bytes, lengths, crcs, m.link);
      await m.file.write(records, m.size);
      m.size += records.length;
      m.link = link;
    } catch {
      await this.closeMeta();
    }
  }

  private async closeMeta(): Promise<void> {
    const m = this.meta;
    this.meta = null;
    await m?.file.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    const file = this.file;
    this.file = null;
    await file?.close().catch(() => undefined);
    await this.closeMeta();
  }
}
