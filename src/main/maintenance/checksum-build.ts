/**
 * The checksum projections (frames.crc2, frames.meta) for a log no
 * SessionWriter wrote frame by frame: an imported log, or one reindexed.
 * Pure: frames in, records out; the commands write them.
 *
 * A checksum record tells the page path that a frame is exactly what the
 * writer wrote for a validated record, so it may skip per-byte validation
 * and read the writer's layout (trusted-frame-scanner.ts, binary-frame.ts).
 * A frame gets one here only where its own bytes allow that claim: it
 * decoded, its record passed validateRecord, and its bytes are byte for
 * byte what this service's writer writes for that record (JSON.stringify
 * plus a newline, or encodeBinaryFrame; a packable chunk event in
 * chunkEvent's layout, the only one the writer gives those). Any other
 * frame (another writer's formatting, a delta event in a foreign key order,
 * a record MessagePack would alter, a damaged frame) gets none and is
 * validated in full by every page, as before: the projection can make
 * pages faster, never different.
 */
import { chunkEvent, packableChunk } from '../../core/chunk-codec.js';
import type { SessionEvent } from '../../core/types.js';
import { chainCrcRecords, CRC_RECORD_BYTES, type CrcLink } from '../../streams/frame-crc-file.js';
import { metaRecords, type MetaLink } from '../../streams/frame-meta-file.js';
import { decodeFrame, encodeFrame, type FrameEncoding } from '../../streams/frame-codec.js';
import type { PositionalReader } from '../../streams/positional-reader.js';
import { validateRecord } from '../../core/chunk-codec.js';

/** The bytes the writer writes for a validated `record` in `encoding` (header or storage record). */
export function writerFrame(record: unknown, encoding: FrameEncoding): Buffer {
  const r = record as SessionEvent;
  const p = typeof r === 'object' && r !== null && r.type === 'assistant/chunk' ? packableChunk(r) : null;
  return encodeFrame(p === null ? record : chunkEvent(p.key, r.seq, r.time, p.member), encoding);
}

/** Whether `frame` is what the writer writes for `record` (decoded from it and validated). */
export function isWriterFrame(frame: Uint8Array, record: unknown, encoding: FrameEncoding): boolean {
  const w = writerFrame(record, encoding);
  return w.length === frame.length && w.equals(frame);
}

/** Records for the frames fed in, in file order; batches contiguous frames into one chained call. */
export class ChecksumBuilder {
  private crcLink: CrcLink | null = null;
  private metaLink: MetaLink = { chain: null, key: null };
  /** Contiguous writer frames not yet turned into records. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private pendingStart = 0;
  private readonly crcOut: Buffer[] = [];
  private readonly metaOut: Buffer[] = [];
  /** Frames given records, and frames passed over. */
  recorded = 0;
  skipped = 0;

  /**
   * The frame at log offset `offset` (its bytes, copied if kept), and its
   * validated record, or null when it did not decode or validate.
   */
  frame(bytes: Uint8Array, offset: number, record: unknown, encoding: FrameEncoding): void {
    if (record === null || !isWriterFrame(bytes, record, encoding)) {
      this.flushPending();
      // The next recorded frame does not follow a recorded one: it continues no block.
      this.metaLink = { chain: this.metaLink.chain, key: null };
      this.skipped++;
      return;
    }
    if (this.pending.length > 0 && this.pendingStart + this.pendingBytes !== offset) this.flushPending();
    if (this.pending.length === 0) this.pendingStart = offset;
    this.pending.push(Buffer.from(bytes));
    this.pendingBytes += bytes.length;
    this.recorded++;
    if (this.pendingBytes >= 1024 * 1024) this.flushPending();
  }

  private flushPending(): void {
    if (this.pending.length === 0) return;
    const bytes = Buffer.concat(this.pending);
    const lengths = this.pending.map((b) => b.length);
    const { records, link } = chainCrcRecords(bytes, this.pendingStart, lengths, this.crcLink);
    const crcs = lengths.map((_, i) => records.readUInt32LE(i * CRC_RECORD_BYTES + 12));
    const meta = metaRecords(bytes, lengths, crcs, this.metaLink);
    this.crcOut.push(records);
    this.metaOut.push(meta.records);
    this.crcLink = link;
    this.metaLink = meta.link;
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** Records made since the last take (checksum records, and the row metadata beside them, record for record). */
  take(): { crc: Buffer; meta: Buffer } {
    this.flushPending();
    const out = { crc: Buffer.concat(this.crcOut), meta: Buffer.concat(this.metaOut) };
    this.crcOut.length = 0;
    this.metaOut.length = 0;
    return out;
  }

  /** Records ready to write without waiting for the frames still pending (bounded memory for long logs). */
  takeReady(): { crc: Buffer; meta: Buffer } {
    const out = { crc: Buffer.concat(this.crcOut), meta: Buffer.concat(this.metaOut) };
    this.crcOut.length = 0;
    this.metaOut.length = 0;
    return out;
  }
}

const READ_BLOCK = 1024 * 1024;

/**
 * Feed every frame of log bytes [0, end) to `builder`, read in blocks
 * through `source`, calling `drain` between blocks with the records ready.
 * Frames that do not decode or validate are fed as such (no record); at a
 * fault that hides the next frame's start (torn, bad magic) the scan stops,
 * and later frames get no record.
 */
export async function feedLog(source: Pick<PositionalReader, 'read'>, end: number, builder: ChecksumBuilder, drain: (crc: Buffer, meta: Buffer) => Promise<void>): Promise<void> {
  let buf: Buffer = Buffer.alloc(0);
  let bufStart = 0;
  let pos = 0;
  let readPos = 0;
  let first = true;
  while (pos < end) {
    const at = pos - bufStart;
    const f = decodeFrame(buf, at, pos, Math.min(buf.length, end - bufStart));
    if (!f.ok && f.reason === 'torn' && readPos < end) {
      const keep = buf.subarray(at);
      const block = await source.read(readPos, Math.min(Math.max(READ_BLOCK, keep.length), end - readPos));
      if (block.length === 0) break;
      buf = keep.length === 0 ? block : Buffer.concat([keep, block]);
      bufStart = pos;
      readPos += block.length;
      const ready = builder.takeReady();
      if (ready.crc.length > 0) await drain(ready.crc, ready.meta);
      continue;
    }
    if (!f.ok && (f.length === undefined || f.reason === 'torn')) break;
    const length = f.ok ? f.length : (f.length as number);
    let record: unknown = null;
    if (f.ok) {
      try {
        // The header is kept as it is; every other frame must be a valid storage record.
        record = first ? f.record : validateRecord(f.record);
      } catch {
        record = null;
      }
    }
    builder.frame(buf.subarray(at, at + length), pos, record, f.ok ? f.encoding : 'jsonl');
    first = false;
    pos += length;
  }
  const rest = builder.take();
  if (rest.crc.length > 0) await drain(rest.crc, rest.meta);
}
