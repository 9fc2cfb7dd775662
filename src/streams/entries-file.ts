/**
 * Positional, bounded reads of an entry sidecar: the last or first line, a
 * binary search by seq over the file's bytes, and a backward walk in blocks.
 * Nothing here reads the whole file, and every byte read is counted so tests
 * can prove that normal paths stay bounded. The reads go through a
 * positional reader of the storage backend (a local file's are synchronous
 * page-cache reads: small, a few KiB or a 64 KiB block, ~20 a page).
 */
import type { EntryLine } from '../core/types.js';
import type { PositionalReader } from './positional-reader.js';
import { keepShape } from '../core/shape-keeper.js';
import { ByteLineBlock, parseEntry, parseEntryBytes } from './entry-codec.js';

export const ENTRY_BLOCK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

/** Process-wide count of entry-sidecar bytes read, for the bounded-read guard tests. */
export const entryReadStats = { bytes: 0, reads: 0 };

export class EntryFormatError extends Error {
  constructor(
    readonly byteOffset: number,
    reason: string,
  ) {
    super(`entry sidecar line at byte ${byteOffset}: ${reason}`);
    this.name = 'EntryFormatError';
  }
}

/** A parsed entry and where its line sits in the sidecar. */
export interface LocatedEntry {
  entry: EntryLine;
  /** Byte offset of the line start. */
  start: number;
  /** Byte offset just after its newline. */
  end: number;
}

export class EntriesFile {
  /** Bytes of the sidecar this reader trusts (whole lines only). */
  readonly size: number;

  /** Reads up to `size` bytes (defaults to the reader's size) of the sidecar behind `reader`, which it closes. */
  constructor(
    private readonly reader: PositionalReader,
    size?: number,
  ) {
    this.size = size ?? reader.size;
  }

  async close(): Promise<void> {
    await this.reader.close();
  }

  private async read(pos: number, len: number): Promise<Buffer> {
    const n = Math.max(0, Math.min(len, this.size - pos));
    const buf = n === 0 ? Buffer.alloc(0) : await this.reader.read(pos, n);
    entryReadStats.bytes += buf.length;
    entryReadStats.reads++;
    return buf;
  }

  private parseAt(buf: Uint8Array, s: number, e: number, start: number): EntryLine {
    const fast = parseEntryBytes(buf, s, e);
    if (fast !== null) return fast;
    return this.parseText(Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('utf8', s, e), start);
  }

  private parseText(text: string, start: number): EntryLine {
    const e = parseEntry(text);
    if (typeof e === 'string') throw new EntryFormatError(start, e);
    return e;
  }

  /** The same sidecar read only up to `size` (a line boundary); shares the reader (close one of them). */
  prefix(size: number): EntriesFile {
    return new EntriesFile(this.reader, Math.min(size, this.size));
  }

  /**
   * The bytes after the last newline (a line without its end) and where they
   * start, reading back at most `maxBytes`; null when no newline lies within
   * them (and the file is longer than that). Start 0: no complete line at all.
   */
  async partialLastLine(maxBytes = 64 * 1024): Promise<{ start: number; bytes: Buffer } | null> {
    const from = Math.max(0, this.size - maxBytes);
    const b = await this.read(from, this.size - from);
    const nl = b.lastIndexOf(NEWLINE);
    if (nl === -1 && from > 0) return null;
    return { start: from + nl + 1, bytes: b.subarray(nl + 1) };
  }

  /** Whether the sidecar ends with a complete line. */
  async endsWithNewline(): Promise<boolean> {
    if (this.size === 0) return true;
    const b = await this.read(this.size - 1, 1);
    return b[0] === NEWLINE;
  }

  /** The first line, or null when empty. */
  async first(): Promise<LocatedEntry | null> {
    if (this.size === 0) return null;
    let len = 4096;
    for (;;) {
      const b = await this.read(0, len);
      const nl = b.indexOf(NEWLINE);
      if (nl !== -1) return { entry: this.parseAt(b, 0, nl, 0), start: 0, end: nl + 1 };
      if (b.length < len) throw new EntryFormatError(0, 'first line has no newline');
      len *= 4;
    }
  }

  /** The line that ends at byte `end` (a line boundary), or null at the start. */
  async lineEndingAt(end: number): Promise<LocatedEntry | null> {
    if (end <= 0) return null;
    let len = 1024;
    for (;;) {
      const from = Math.max(0, end - len);
      const b = await this.read(from, end - from);
      // b ends with the newline of our line (end is a boundary); search before it.
      const nl = b.lastIndexOf(NEWLINE, b.length - 2);
      if (nl !== -1 || from === 0) {
        const start = nl === -1 ? 0 : from + nl + 1;
        return { entry: this.parseAt(b, start - from, b.length - 1, start), start, end };
      }
      len *= 4;
    }
  }

  /** The last complete line, or null when empty. */
  async last(): Promise<LocatedEntry | null> {
    return this.lineEndingAt(this.size);
  }

  /** The first complete line starting at or after byte `pos`. */
  private async lineAtOrAfter(pos: number): Promise<LocatedEntry | null> {
    let start = pos;
    if (pos > 0) {
      // Skip to just after the previous newline.
      let p = pos - 1;
      for (;;) {
        const b = await this.read(p, 512);
        if (b.length === 0) return null;
        const nl = b.indexOf(NEWLINE);
        if (nl !== -1) {
          start = p + nl + 1;
          break;
        }
        p += b.length;
      }
    }
    if (start >= this.size) return null;
    let len = 512;
    for (;;) {
      const b = await this.read(start, len);
      const nl = b.indexOf(NEWLINE);
      if (nl !== -1) return { entry: this.parseAt(b, 0, nl, start), start, end: start + nl + 1 };
      if (b.length < len) throw new EntryFormatError(start, 'line has no newline');
      len *= 4;
    }
  }

  /**
   * The line of the frame holding `seq` (the last entry whose seq <= `seq`),
   * by binary search over bytes: O(log size) small reads.
   */
  async findBySeq(seq: number): Promise<LocatedEntry | null> {
    let lo = 0;
    let hi = this.size;
    let best: LocatedEntry | null = null;
    // Invariant: every line starting before lo has seq <= target (best holds the last seen),
    // every line starting at or after hi has seq > target.
    while (lo < hi) {
      const mid = lo + Math.floor((hi - lo) / 2);
      const line = await this.lineAtOrAfter(mid);
      if (line === null || line.start >= hi) {
        hi = mid;
        continue;
      }
      if (line.entry.seq <= seq) {
        best = line;
        lo = line.end;
      } else {
        hi = mid;
      }
    }
    if (best !== null) {
      // Several frames can share a seq (count 0 header); take the last one at or before seq.
      return best;
    }
    return null;
  }

  /** A backward walk over whole lines ending at byte `end`. */
  backwardFrom(end: number): BackwardEntries {
    return new BackwardEntries((pos, len) => this.read(pos, len), end, (text, start) => this.parseText(text, start));
  }

  /** Entries of the byte range [start, end) (line boundaries), in order. */
  async readRange(start: number, end: number): Promise<LocatedEntry[]> {
    const out: LocatedEntry[] = [];
    let pos = start;
    let carry: Buffer = Buffer.alloc(0);
    let carryStart = start;
    while (pos < end) {
      const block = await this.read(pos, Math.min(ENTRY_BLOCK_BYTES, end - pos));
      if (block.length === 0) break;
      const buf = carry.length === 0 ? block : Buffer.concat([carry, block]);
      let s = 0;
      for (;;) {
        const nl = buf.indexOf(NEWLINE, s);
        if (nl === -1) break;
        out.push({ entry: this.parseAt(buf, s, nl, carryStart + s), start: carryStart + s, end: carryStart + nl + 1 });
        s = nl + 1;
      }
      carry = buf.subarray(s);
      carryStart += s;
      pos += block.length;
    }
    if (carry.length > 0) throw new EntryFormatError(carryStart, 'line has no newline');
    return out;
  }
}

/**
 * Reads entry lines backwards in blocks of ENTRY_BLOCK_BYTES. `prevBlock()`
 * yields the lines of the next block down, in file order, parsed lazily.
 */
export class BackwardEntries {
  private pos: number;
  private tail: Buffer = Buffer.alloc(0);

  constructor(
    private readonly read: (pos: number, len: number) => Promise<Buffer>,
    end: number,
    private readonly slow: (text: string, fileOffset: number) => EntryLine,
  ) {
    this.pos = end;
    keepShape(this);
  }

  /** Byte offset of the lowest line returned so far. */
  get position(): number {
    return this.pos + this.tail.length;
  }

  async prevBlock(): Promise<ByteLineBlock | null> {
    for (;;) {
      if (this.pos === 0 && this.tail.length === 0) return null;
      const from = Math.max(0, this.pos - ENTRY_BLOCK_BYTES);
      const block = this.pos === 0 ? Buffer.alloc(0) : await this.read(from, this.pos - from);
      const buf = this.tail.length === 0 ? block : block.length === 0 ? this.tail : Buffer.concat([block, this.tail]);
      this.pos = from;
      // Lines fully inside buf: those after its first newline (all of them at the file start).
      const firstNl = from === 0 ? -1 : buf.indexOf(NEWLINE);
      if (from !== 0 && (firstNl === -1 || firstNl === buf.length - 1)) {
        this.tail = buf;
        continue;
      }
      const bodyStart = firstNl + 1;
      this.tail = from === 0 ? Buffer.alloc(0) : buf.subarray(0, bodyStart);
      const starts: number[] = [];
      const ends: number[] = [];
      let s = bodyStart;
      while (s < buf.length) {
        const nl = buf.indexOf(NEWLINE, s);
        const lineEnd = nl === -1 ? buf.length : nl;
        starts.push(s);
        ends.push(lineEnd);
        s = lineEnd + 1;
      }
      if (starts.length > 0) return new ByteLineBlock(buf, starts, ends, from, this.slow);
    }
  }
}
