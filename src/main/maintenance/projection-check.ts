/**
 * `doctor --deep`'s check of the derived projections under
 * `sessions/index/<id>/`, fed the entry line of every frame the scan finds
 * (in file order), reading the projection files in blocks (bounded memory):
 *
 * - frames.idx: record k must be exactly what the entry line of frame k
 *   gives (streams/frame-index-file.ts), and there must be one per frame;
 * - frames.crc2: every record must name a frame of the log (its offset and
 *   length); the CRCs themselves are proven by each page that uses them;
 * - frames.meta: one record per checksum record, its chain unbroken, each
 *   naming the CRC of its checksum record.
 *
 * A projection that fails is reported (`projection_invalid`): pages do not
 * use what they cannot prove (docs/reliability.md), and `reindex` rebuilds
 * the frame index and drops the others. Reads only.
 */
import { crc32 } from 'node:zlib';
import type { EntryLine } from '../../core/types.js';
import { INDEX_FILE_NAME, INDEX_RECORD_BYTES, indexRecords } from '../../streams/frame-index-file.js';
import { CRC_FILE_NAME, CRC_RECORD_BYTES } from '../../streams/frame-crc-file.js';
import { META_FILE_NAME, META_RECORD_BYTES } from '../../streams/frame-meta-file.js';

/** Positional reads of the projection files, given by the caller (through the storage seam). */
export interface ProjectionFiles {
  /** Size of the file, or null when it does not exist. */
  size(name: string): Promise<number | null>;
  /** Up to `length` bytes at `position`. */
  read(name: string, position: number, length: number): Promise<Buffer>;
}

const BLOCK_RECORDS = 4096;

/** Records of one file, read forwards in blocks. */
class RecordReader {
  private block: Buffer = Buffer.alloc(0);
  private first = 0;
  readonly records: number;

  constructor(
    private readonly files: ProjectionFiles,
    private readonly name: string,
    private readonly recordBytes: number,
    size: number,
  ) {
    this.records = Math.floor(size / recordBytes);
  }

  /** Record k (k increasing from call to call), or null past the end. */
  async at(k: number): Promise<Buffer | null> {
    if (k >= this.records) return null;
    const n = this.block.length / this.recordBytes;
    if (k < this.first || k >= this.first + n) {
      this.first = k;
      this.block = await this.files.read(this.name, k * this.recordBytes, Math.min(BLOCK_RECORDS, this.records - k) * this.recordBytes);
    }
    const o = (k - this.first) * this.recordBytes;
    return this.block.subarray(o, o + this.recordBytes);
  }
}

export interface ProjectionProblem {
  file: string;
  message: string;
}

export class ProjectionChecker {
  private readonly problems: ProjectionProblem[] = [];
  private readonly idx: RecordReader | null;
  private readonly crc: RecordReader | null;
  private frame = 0;
  private crcNext = 0;
  private crcOffset = 0;
  private idxBad = false;
  private crcBad = false;

  private constructor(
    private readonly files: ProjectionFiles,
    idxSize: number | null,
    crcSize: number | null,
  ) {
    this.idx = idxSize === null ? null : new RecordReader(files, INDEX_FILE_NAME, INDEX_RECORD_BYTES, idxSize);
    if (idxSize !== null && idxSize % INDEX_RECORD_BYTES !== 0) this.fail('idx', INDEX_FILE_NAME, `${idxSize} bytes is not whole records of ${INDEX_RECORD_BYTES}`);
    this.crc = crcSize === null ? null : new RecordReader(files, CRC_FILE_NAME, CRC_RECORD_BYTES, crcSize);
    if (crcSize !== null && crcSize % CRC_RECORD_BYTES !== 0) this.fail('crc', CRC_FILE_NAME, `${crcSize} bytes is not whole records of ${CRC_RECORD_BYTES}`);
  }

  static async open(files: ProjectionFiles): Promise<ProjectionChecker> {
    return new ProjectionChecker(files, await files.size(INDEX_FILE_NAME), await files.size(CRC_FILE_NAME));
  }

  private fail(which: 'idx' | 'crc' | 'meta', file: string, message: string): void {
    if (which === 'idx') {
      if (this.idxBad) return;
      this.idxBad = true;
    } else if (which === 'crc') {
      if (this.crcBad) return;
      this.crcBad = true;
    }
    this.problems.push({ file, message });
  }

  /** The entry line of the next frame of the log (`corrupt`: a damaged frame, whose seqs the scan only infers). */
  async check(e: EntryLine, corrupt = false): Promise<void> {
    const k = this.frame++;
    if (this.idx !== null && !this.idxBad) {
      const rec = await this.idx.at(k);
      const want = indexRecords([e]);
      // Fewer records than frames: a stale index (a crash before its append), which pages never
      // use (they need it whole) and the writer drops: not a failure.
      if (rec === null) this.idxBad = true;
      else if (corrupt ? !rec.subarray(8, 16).equals(want.subarray(8, 16)) || !rec.subarray(24, 28).equals(want.subarray(24, 28)) : !rec.equals(want)) this.fail('idx', INDEX_FILE_NAME, `record ${k} does not describe the frame at offset ${e.offset} (seq ${e.seq})`);
    }
    if (this.crc !== null && !this.crcBad) {
      // Records name a subset of the frames, in file order.
      const rec = await this.crc.at(this.crcNext);
      if (rec === null) return;
      const offset = rec.readUInt32LE(0) + rec.readUInt32LE(4) * 2 ** 32;
      if (offset < e.offset || offset < this.crcOffset) this.fail('crc', CRC_FILE_NAME, `record ${this.crcNext} names offset ${offset}, where no frame starts`);
      else if (offset === e.offset) {
        if (rec.readUInt32LE(8) !== e.length) this.fail('crc', CRC_FILE_NAME, `record ${this.crcNext} gives the frame at offset ${offset} ${rec.readUInt32LE(8)} bytes, it has ${e.length}`);
        this.crcOffset = offset;
        this.crcNext++;
      }
    }
  }

  /** What failed (nothing when every projection checks out). */
  async finish(): Promise<ProjectionProblem[]> {
    // Only an index pages would use (one record per frame) can mislead them; a stale one of
    // another size is dropped by the writer. Checksum records past the indexed frames are a
    // crash's leftovers the writer cuts; row metadata of another size it removes.
    if (this.idx !== null && this.idx.records !== this.frame) this.problems.splice(0, this.problems.length, ...this.problems.filter((p) => p.file !== INDEX_FILE_NAME));
    await this.checkMeta();
    return this.problems;
  }

  private async checkMeta(): Promise<void> {
    const size = await this.files.size(META_FILE_NAME);
    if (size === null || this.crc === null) return;
    const n = this.crc.records;
    if (size !== n * META_RECORD_BYTES) return;
    const meta = new RecordReader(this.files, META_FILE_NAME, META_RECORD_BYTES, size);
    let chain = 0;
    for (let k = 0; k < n; k++) {
      const m = (await meta.at(k)) as Buffer;
      const c = (await this.crc.at(k)) as Buffer;
      // As frame-meta-file.ts writes it: from the previous chain field on (none for the first).
      const prev = Buffer.alloc(4);
      prev.writeUInt32LE(chain, 0);
      const want = k === 0 ? crc32(m.subarray(0, 36), 0) : crc32(Buffer.concat([prev, m.subarray(0, 36)]), chain);
      if (m.readUInt32LE(36) !== want || m.readUInt32LE(32) !== c.readUInt32LE(12)) {
        this.fail('meta', META_FILE_NAME, `record ${k} does not hold (its chain or the CRC it names)`);
        return;
      }
      chain = want;
    }
  }
}
