/**
 * The writer's side of the binary frame index (streams/frame-index-file.ts):
 * one record per frame it indexes. The index is only useful whole (from
 * the header on), so it is kept only while it is: a new session starts it;
 * an existing one keeps it if it still matches the session's frame count
 * and indexed length (import and reindex build it whole:
 * maintenance/projection-files.ts); anything else (a tail indexed on open,
 * a failed write) deletes it and pages plan from the JSONL sidecar.
 * Derived data: never synced.
 */
import type { StorageBackend, WritableFile } from '../storage/backend.js';
import { projectionKey, type SessionKeys } from '../storage/layout.js';
import { INDEX_FILE_NAME, INDEX_RECORD_BYTES, indexRecords } from '../streams/frame-index-file.js';

export function indexKey(keys: Pick<SessionKeys, 'projections'>): string {
  return projectionKey(keys, INDEX_FILE_NAME);
}

export class IndexProjection {
  private constructor(
    private readonly storage: StorageBackend,
    private readonly key: string,
    private file: WritableFile | null,
    private size: number,
  ) {}

  /** Start a whole index for a new session, with its header frame's record. */
  static async create(storage: StorageBackend, keys: SessionKeys, headerLength: number): Promise<IndexProjection> {
    const key = indexKey(keys);
    try {
      const p = new IndexProjection(storage, key, await storage.openWritable(key, 'truncate'), 0);
      await p.append(indexRecords([{ seq: 0, offset: 0, length: headerLength, count: 0 }]));
      return p;
    } catch {
      return new IndexProjection(storage, key, null, 0);
    }
  }

  /** Keep an existing index only if it is whole for this session. */
  static async open(storage: StorageBackend, keys: SessionKeys, frameCount: number, indexedLength: number): Promise<IndexProjection> {
    const key = indexKey(keys);
    let file: WritableFile;
    try {
      file = await storage.openWritable(key, 'existing');
    } catch {
      return new IndexProjection(storage, key, null, 0);
    }
    const p = new IndexProjection(storage, key, file, file.size);
    try {
      if (p.size !== frameCount * INDEX_RECORD_BYTES) throw new Error('size');
      const last = await file.read(p.size - INDEX_RECORD_BYTES, INDEX_RECORD_BYTES);
      if (last.length < INDEX_RECORD_BYTES || last.readDoubleLE(8) + last.readUInt32LE(24) !== indexedLength) throw new Error('end');
      return p;
    } catch {
      await p.drop();
      return p;
    }
  }

  async append(records: Buffer): Promise<void> {
    const file = this.file;
    if (file === null || records.length === 0) return;
    try {
      await file.write(records, this.size);
      this.size += records.length;
    } catch {
      await this.drop();
    }
  }

  /** Stop keeping the index and delete it: a partial index is worse than none. */
  async drop(): Promise<void> {
    await this.close();
    await this.storage.remove(this.key).catch(() => undefined);
  }

  async close(): Promise<void> {
    const file = this.file;
    this.file = null;
    await file?.close().catch(() => undefined);
  }
}
