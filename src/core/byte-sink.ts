/**
 * A growable byte buffer, pure. The page worker builds its whole result by
 * copying byte ranges of the frames it read into sinks like this one: one
 * contiguous buffer instead of a list of tens of thousands of small views,
 * which cost more to allocate, measure and join than the copying itself.
 *
 * A sink may also write into a region of a shared arena (`place`) that holds
 * the bytes it copies from: a copy within one buffer is a `copyWithin`, with
 * no view to create per copy (~60 vs ~190 ns a copy here; a tail page makes
 * ~30,000 of them). Outgrowing its region moves the sink to a buffer of its
 * own, so a region's size only decides how fast, never what is written.
 */

import { writeInt } from './int-digits.js';

/** Copies shorter than this are a JS loop: cheaper than creating a view for TypedArray#set. */
const SHORT_COPY = 48;
/**
 * Copies within the arena shorter than this are a JS loop: a copyWithin costs ~16 ns
 * whatever its length up to hundreds of bytes, the loop ~1.3 ns a byte.
 */
const SHORT_ARENA_COPY = 16;

export class ByteSink {
  buf: Buffer;
  length = 0;
  /** The arena `buf` is a region of, and where in it the region starts (null: a buffer of its own). */
  private arena: Buffer | null = null;
  private base = 0;
  /** The arena's leading region that copies come from (the frames), by identity: no per-copy buffer checks. */
  private source: Uint8Array | null = null;

  constructor(capacity = 256) {
    this.buf = Buffer.allocUnsafe(Math.max(16, capacity));
  }

  /**
   * Write into arena[base, base + capacity) from now on, emptied; `source`
   * is the arena's region from its start that `bytes` will mostly copy from.
   */
  place(arena: Buffer, base: number, capacity: number, source: Uint8Array): void {
    this.buf = arena.subarray(base, base + capacity);
    this.arena = arena;
    this.base = base;
    this.source = source;
    this.length = 0;
  }

  /** Make room for `n` more bytes. */
  reserve(n: number): void {
    const need = this.length + n;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = Buffer.allocUnsafe(cap);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
    this.arena = null;
    this.source = null;
  }

  byte(c: number): void {
    if (this.length === this.buf.length) this.reserve(1);
    this.buf[this.length++] = c;
  }

  /** Bytes src[start, end). */
  bytes(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    if (n <= 0) return;
    this.reserve(n);
    const b = this.buf;
    let at = this.length;
    if (src === this.source && this.arena !== null && n >= SHORT_ARENA_COPY) {
      this.arena.copyWithin(this.base + at, start, end);
    } else if (n < SHORT_COPY) {
      for (let i = start; i < end; i++) b[at++] = src[i] as number;
    } else {
      // A plain Uint8Array view: Buffer#subarray costs several times more to create.
      b.set(new Uint8Array(src.buffer, src.byteOffset + start, n), at);
    }
    this.length += n;
  }

  /** Where its bytes start in `arena`, when it still writes into a region of it; else -1. */
  offsetIn(arena: Buffer): number {
    return this.arena === arena ? this.base : -1;
  }

  /** Everything another sink holds. */
  sink(other: ByteSink): void {
    const n = other.length;
    if (n >= SHORT_COPY && this.arena !== null && other.arena === this.arena) {
      this.reserve(n);
      // Still in the arena after making room: both regions are in one buffer.
      if (this.arena !== null) {
        this.arena.copyWithin(this.base + this.length, other.base, other.base + n);
        this.length += n;
        return;
      }
    }
    this.bytes(other.buf, 0, n);
  }

  /** A string that is known to be ASCII (JSON punctuation, keys, numbers). */
  ascii(s: string): void {
    const n = s.length;
    this.reserve(n);
    const b = this.buf;
    let at = this.length;
    for (let i = 0; i < n; i++) b[at++] = s.charCodeAt(i);
    this.length = at;
  }

  /** Any string, UTF-8 encoded. */
  text(s: string): void {
    this.reserve(s.length * 3);
    this.length += this.buf.write(s, this.length, 'utf8');
  }

  /**
   * `JSON.stringify(s)`'s bytes (a tool call's id or name): a string of printable ASCII with
   * no quote or backslash, which JSON.stringify writes as it is between quotes, byte by byte;
   * any other (and anything not a string) through JSON.stringify, whose call and UTF-8 encode
   * cost several times the copy.
   */
  json(s: string | undefined): void {
    if (typeof s === 'string') {
      const n = s.length;
      this.reserve(n + 2);
      const b = this.buf;
      let at = this.length;
      b[at++] = 0x22;
      let k = 0;
      for (; k < n; k++) {
        const c = s.charCodeAt(k);
        if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) break;
        b[at++] = c;
      }
      if (k === n) {
        b[at++] = 0x22;
        this.length = at;
        return;
      }
    }
    this.text(`${JSON.stringify(s)}`);
  }

  /**
   * A number as `String(v)` spells it (a safe integer's JSON form): its digits written
   * directly, with no string (int-digits.ts); anything else through String.
   */
  int(v: number): void {
    // One digit (most of a row's gaps), as before: one byte.
    if (v >= 0 && v < 10 && (v | 0) === v) {
      this.byte(0x30 + v);
      return;
    }
    if (!Number.isSafeInteger(v)) {
      this.ascii(String(v));
      return;
    }
    // A sign and 16 digits at most.
    this.reserve(17);
    this.length = writeInt(v, this.buf, this.length);
  }

  clear(): void {
    this.length = 0;
  }

  /** Empty it, and give up its buffer if it grew past `max` bytes (a reused sink must not pin one huge page's memory). */
  reset(max: number): void {
    this.length = 0;
    if (this.buf.length > max) this.release();
  }

  /** Let go of its buffer (or arena region), keeping a small one of its own. */
  release(): void {
    this.length = 0;
    this.buf = Buffer.allocUnsafe(256);
    this.arena = null;
    this.source = null;
  }

  /**
   * Its bytes with `before` (UTF-8, `beforeBytes` long) just ahead of them and `after` just
   * behind, as one view of its arena, without copying them: `before` goes over the end of the
   * arena's source region, which must directly precede this sink's region and which the caller
   * no longer reads, `after` into the region's spare room. Null when the sink writes in a buffer
   * of its own, its region does not follow the source, or either does not fit.
   */
  framed(before: string, beforeBytes: number, after: Uint8Array): Buffer | null {
    const arena = this.arena;
    const source = this.source;
    if (arena === null || source === null) return null;
    if (source.byteOffset - arena.byteOffset + source.length !== this.base || beforeBytes > source.length) return null;
    if (this.length + after.length > this.buf.length) return null;
    const start = this.base - beforeBytes;
    if (arena.write(before, start, 'utf8') !== beforeBytes) return null;
    arena.set(after, this.base + this.length);
    return arena.subarray(start, this.base + this.length + after.length);
  }

  /** The bytes written so far (a view; valid until the next write). */
  view(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }

  /** The bytes as a string (short runs and tests only). */
  toString(): string {
    return this.buf.toString('utf8', 0, this.length);
  }
}
