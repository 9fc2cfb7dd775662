/**
 * Writing the derived projections of a log a maintenance command indexed
 * (import, reindex), through the storage seam: the binary frame index
 * (frames.idx, one record per entry line) and, where the frames' own bytes
 * allow (checksum-build.ts), the checksum and row-metadata records, so such
 * a session's pages take the same fast path as one its writer created.
 *
 * Derived data: written in place, never synced. A crash half way leaves
 * files the readers and the writer already handle: a frame index that is
 * not whole for the session is not used (and the writer drops it), a
 * checksum file is only whole records (a record missing just sends its
 * frame down the validating path), and row metadata is kept only while it
 * has one record per checksum record.
 */
import type { StorageBackend, WritableFile } from '../../storage/backend.js';
import { projectionKey, type SessionKeys } from '../../storage/layout.js';
import { CRC_FILE_NAME } from '../../streams/frame-crc-file.js';
import { META_FILE_NAME } from '../../streams/frame-meta-file.js';
import { INDEX_FILE_NAME, indexRecords } from '../../streams/frame-index-file.js';
import type { FrameEncoding } from '../../streams/frame-codec.js';
import type { EntryLine } from '../../core/types.js';
import { ChecksumBuilder, feedLog } from './checksum-build.js';

const FLUSH_BYTES = 1024 * 1024;

/** An append-only file written in blocks. */
class BlockFile {
  private parts: Buffer[] = [];
  private pending = 0;
  private at = 0;
  constructor(readonly file: WritableFile) {}

  async write(b: Buffer): Promise<void> {
    if (b.length === 0) return;
    this.parts.push(b);
    this.pending += b.length;
    if (this.pending >= FLUSH_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending === 0) return;
    const buf = Buffer.concat(this.parts);
    this.parts = [];
    this.pending = 0;
    await this.file.write(buf, this.at);
    this.at += buf.length;
  }
}

/** The projections of one session being built, frame by frame in file order. */
export class ProjectionFiles {
  private readonly builder = new ChecksumBuilder();

  private constructor(
    private readonly storage: StorageBackend,
    private readonly keys: Pick<SessionKeys, 'projections'>,
    private readonly idx: BlockFile | null,
    private readonly crc: BlockFile,
    private readonly meta: BlockFile,
  ) {}

  /** Start the session's projections afresh (whatever was there goes). `index`: build frames.idx too. */
  static async create(storage: StorageBackend, keys: Pick<SessionKeys, 'projections'>, index: boolean): Promise<ProjectionFiles> {
    await storage.removeAll(keys.projections);
    const open = async (name: string): Promise<BlockFile> => new BlockFile(await storage.openWritable(projectionKey(keys, name), 'truncate'));
    return new ProjectionFiles(storage, keys, index ? await open(INDEX_FILE_NAME) : null, await open(CRC_FILE_NAME), await open(META_FILE_NAME));
  }

  /** Frames recorded with checksums, and passed over. */
  get counts(): { recorded: number; skipped: number } {
    return { recorded: this.builder.recorded, skipped: this.builder.skipped };
  }

  /** One frame: its bytes at log offset `offset`, its validated record (null: none), its entry line (frames.idx). */
  async frame(bytes: Uint8Array, offset: number, record: unknown, encoding: FrameEncoding, entry: EntryLine | null): Promise<void> {
    if (entry !== null && this.idx !== null) await this.idx.write(indexRecords([entry]));
    this.builder.frame(bytes, offset, record, encoding);
    await this.drain(this.builder.takeReady());
  }

  /** The frame index's record of one more frame (reindex: from the sidecar's lines, after the scan). */
  async indexEntry(entry: EntryLine): Promise<void> {
    if (this.idx !== null) await this.idx.write(indexRecords([entry]));
  }

  /** Checksums for every frame of the log [0, end) read through `source` (reindex: the log is already written). */
  async frames(source: { read(pos: number, len: number): Promise<Buffer> }, end: number): Promise<void> {
    await feedLog(source, end, this.builder, (crc, meta) => this.drain({ crc, meta }));
  }

  private async drain(r: { crc: Buffer; meta: Buffer }): Promise<void> {
    await this.crc.write(r.crc);
    await this.meta.write(r.meta);
  }

  /** Write what is left and close the files. */
  async finish(): Promise<void> {
    await this.drain(this.builder.take());
    for (const f of [this.idx, this.crc, this.meta]) {
      if (f === null) continue;
      await f.flush();
      await f.file.close();
    }
  }

  /** Close and remove everything (the command failed). */
  async abandon(): Promise<void> {
    for (const f of [this.idx, this.crc, this.meta]) await f?.file.close().catch(() => undefined);
    await this.storage.removeAll(this.keys.projections).catch(() => undefined);
  }
}
