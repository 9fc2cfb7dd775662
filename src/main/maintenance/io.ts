/**
 * Small streaming I/O helpers for maintenance: a line splitter over any
 * stream of byte chunks (bounded by the longest line), a line reader over a
 * stored object (through the storage seam), and a buffered writer of
 * blocks. Nothing here holds a whole object.
 */
import type { RandomReader, StorageBackend } from '../../storage/backend.js';

const NEWLINE = 0x0a;
export const IO_BLOCK_BYTES = 1024 * 1024;

/**
 * Split a stream of chunks into lines (without the newline). The last line
 * is yielded with `final: true` when the input does not end with a newline.
 * A line longer than `maxLine` bytes throws.
 */
export class LineSplitter {
  private carry: Buffer[] = [];
  private carryLen = 0;
  constructor(private readonly maxLine: number) {}

  /** Lines completed by `chunk`, in order. */
  push(chunk: Uint8Array): Buffer[] {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const out: Buffer[] = [];
    let s = 0;
    for (;;) {
      const nl = buf.indexOf(NEWLINE, s);
      if (nl === -1) break;
      if (this.carryLen > 0) {
        this.carry.push(buf.subarray(s, nl));
        out.push(Buffer.concat(this.carry));
        this.carry = [];
        this.carryLen = 0;
      } else {
        out.push(buf.subarray(s, nl));
      }
      s = nl + 1;
    }
    if (s < buf.length) {
      // Copy: the caller may reuse its chunk buffer.
      this.carry.push(Buffer.from(buf.subarray(s)));
      this.carryLen += buf.length - s;
      if (this.carryLen > this.maxLine) throw new Error(`line longer than ${this.maxLine} bytes`);
    }
    return out;
  }

  /** The unterminated last line, if any. */
  end(): Buffer | null {
    if (this.carryLen === 0) return null;
    const b = Buffer.concat(this.carry);
    this.carry = [];
    this.carryLen = 0;
    return b;
  }
}

/** Pull lines of a stored object one at a time, in order (for comparing a sidecar with a scan). */
export class ObjectLineReader {
  private lines: Buffer[] = [];
  private idx = 0;
  private pos = 0;
  private eof = false;
  private readonly splitter: LineSplitter;
  private readonly size: number;
  /** Byte offset (in the object) of the next line `next()` returns. */
  offset = 0;
  private constructor(
    private readonly reader: RandomReader,
    limit: number,
    maxLine: number,
  ) {
    this.size = Math.min(reader.size, limit);
    this.splitter = new LineSplitter(maxLine);
  }

  /** Reads the object's first `limit` bytes (default: all of it); ENOENT when it does not exist. */
  static async open(storage: StorageBackend, key: string, maxLine = 1024 * 1024, limit = Infinity): Promise<ObjectLineReader> {
    return new ObjectLineReader(await storage.openReader(key), limit, maxLine);
  }

  /** The next line and whether it was newline-terminated; null at the end. */
  async next(): Promise<{ line: Buffer; start: number; terminated: boolean } | null> {
    for (;;) {
      if (this.idx < this.lines.length) {
        const line = this.lines[this.idx++] as Buffer;
        const start = this.offset;
        this.offset += line.length + 1;
        return { line, start, terminated: true };
      }
      if (this.eof) {
        const rest = this.splitter.end();
        if (rest === null) return null;
        const start = this.offset;
        this.offset += rest.length;
        return { line: rest, start, terminated: false };
      }
      const n = Math.min(IO_BLOCK_BYTES, this.size - this.pos);
      if (n <= 0) {
        this.eof = true;
        continue;
      }
      const buf = await this.reader.read(this.pos, n);
      if (buf.length === 0) {
        this.eof = true;
        continue;
      }
      this.pos += buf.length;
      this.lines = this.splitter.push(buf);
      this.idx = 0;
    }
  }

  async close(): Promise<void> {
    await this.reader.close();
  }
}

/** Where a BufferedWriter's blocks go, in order (a Replacement). */
export interface BlockSink {
  write(data: Uint8Array): Promise<void>;
}

/** Appends to a sink through a buffer, flushing every IO_BLOCK_BYTES. */
export class BufferedWriter {
  private parts: Buffer[] = [];
  private pending = 0;
  /** Bytes written (or buffered) so far. */
  length = 0;
  constructor(readonly sink: BlockSink) {}

  async write(data: Buffer | string): Promise<void> {
    const b = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    this.parts.push(b);
    this.pending += b.length;
    this.length += b.length;
    if (this.pending >= IO_BLOCK_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending === 0) return;
    const buf = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts);
    this.parts = [];
    this.pending = 0;
    await this.sink.write(buf);
  }
}
