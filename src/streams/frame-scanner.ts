/**
 * Sequential scan of a byte range of a log, frame by frame, with bounded
 * memory (one block plus the largest frame). Used where a range must be read
 * whole: catching up a stale tail, `reindex`, `doctor --deep`, `repair`.
 * Pages never use this; they read exactly their planned frames.
 */
import type { PositionalReader } from './positional-reader.js';
import { decodeFrame, frameBounds, type DecodedFrame, type FrameFault } from './frame-codec.js';

export const SCAN_BLOCK_BYTES = 1024 * 1024;

export type ScanItem = DecodedFrame | FrameFault;

export interface ScanOptions {
  /** Decode payloads (default true); false only finds frame boundaries. */
  decode?: boolean;
  /** Called with the number of bytes consumed so far, for progress bars. */
  onProgress?: (consumed: number) => void;
}

/**
 * Yield every frame of [start, end) in order. A fault is yielded once; if the
 * fault leaves the frame's length known (bad checksum, bad payload) the scan
 * goes on after it, otherwise (torn, bad magic, oversized) it stops there,
 * since the next frame boundary cannot be trusted.
 */
export async function* scanFrames(source: Pick<PositionalReader, 'read'>, start: number, end: number, opts: ScanOptions = {}): AsyncGenerator<ScanItem> {
  const decode = opts.decode ?? true;
  let buf: Buffer = Buffer.alloc(0);
  let bufStart = start; // file offset of buf[0]
  let pos = start;
  let readPos = start;
  while (pos < end) {
    // Make sure buf holds at least from pos; read another block when a frame needs more.
    const have = bufStart + buf.length;
    const at = pos - bufStart;
    const r = decode ? decodeFrame(buf, at, pos) : frameBounds(buf, at, pos);
    if (r.ok) {
      const length = r.length;
      if (decode) yield r as DecodedFrame;
      else yield { ok: true, offset: pos, length, encoding: r.encoding, schema: 0, record: undefined } as DecodedFrame;
      pos += length;
      opts.onProgress?.(pos - start);
      continue;
    }
    if (r.reason === 'torn' && readPos < end) {
      // Need more bytes: keep the unread part, append a block.
      const keep = buf.subarray(at);
      const want = Math.max(SCAN_BLOCK_BYTES, keep.length);
      const n = Math.min(want, end - readPos);
      const block = await source.read(readPos, n);
      const got = block.length;
      if (got === 0) {
        yield r;
        return;
      }
      buf = keep.length === 0 ? block.subarray(0, got) : Buffer.concat([keep, block.subarray(0, got)]);
      bufStart = pos;
      readPos += got;
      void have;
      continue;
    }
    yield r;
    if (r.length !== undefined && r.reason !== 'torn') {
      pos += r.length;
      continue;
    }
    return;
  }
}
