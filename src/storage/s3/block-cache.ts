/**
 * The readers' bounded cache of remote bytes: fixed-size blocks of
 * immutable objects (segments and tail objects never change once written,
 * so a block never goes stale and needs no invalidation), least recently
 * used first out, bounded in bytes. A read's missing blocks of one object
 * are fetched with one ranged GET covering all of them (coalesced), and a
 * block already being fetched is awaited, not fetched twice.
 */

import type { ObjectCheck } from './segment-file.js';

/** Bytes [start, end) of an object; `check`: how the fetch verifies them (checked-reads.ts). */
export type RangeFetch = (name: string, start: number, end: number, check?: ObjectCheck) => Promise<Buffer>;

export const DEFAULT_BLOCK_BYTES = 256 * 1024;
export const DEFAULT_CACHE_BYTES = 128 * 1024 * 1024;

/** A cached block: bytes of an object from `from` (the last block of an extent may be short). */
interface Block {
  from: number;
  buf: Buffer;
}

export class BlockCache {
  /** Insertion order is recency order (a hit is moved to the end). */
  private readonly blocks = new Map<string, Block>();
  private readonly pending = new Map<string, Promise<Block>>();
  private bytes = 0;
  hits = 0;
  misses = 0;

  constructor(
    private readonly fetch: RangeFetch,
    readonly blockBytes = DEFAULT_BLOCK_BYTES,
    readonly maxBytes = DEFAULT_CACHE_BYTES,
  ) {}

  get size(): number {
    return this.bytes;
  }

  /**
   * Bytes [at, at + len) of immutable object `name` (which holds at least
   * that many), within the extent [lo, hi) the caller owns. Blocks are laid
   * from the extent's start and never cross its ends: an index section's
   * blocks hold no byte of the log beside it, and two sections of one
   * object never share (or fight over) a block.
   */
  async read(name: string, at: number, len: number, lo = 0, hi = Number.POSITIVE_INFINITY, check?: ObjectCheck): Promise<Buffer> {
    if (len <= 0) return Buffer.alloc(0);
    const B = this.blockBytes;
    const end = at + len;
    const first = Math.floor((at - lo) / B);
    const got = await Promise.all(this.blocksOf(name, at, len, lo, hi, check));
    const out = Buffer.allocUnsafe(len);
    let filled = 0;
    for (let i = 0; i < got.length; i++) {
      const blk = got[i] as Block;
      const s = Math.max(at, blk.from);
      const e = Math.min(end, blk.from + blk.buf.length);
      if (e <= s) break;
      blk.buf.copy(out, s - at, s - blk.from, e - blk.from);
      filled = e - at;
      if (e < Math.min(end, lo + (first + i + 1) * B)) break;
    }
    return filled === len ? out : out.subarray(0, filled);
  }

  /**
   * Start fetching the missing blocks of bytes [at, at + len) (as `read`
   * would, one GET per run of missing blocks) without waiting for them or
   * copying them out: a later read of those bytes finds them cached or in
   * flight. Failures are left to that read.
   */
  prefetch(name: string, at: number, len: number, lo = 0, hi = Number.POSITIVE_INFINITY, check?: ObjectCheck): void {
    if (len <= 0) return;
    for (const p of this.blocksOf(name, at, len, lo, hi, check)) if (p instanceof Promise) p.catch(() => undefined);
  }

  /** The blocks covering [at, at + len): cached ones, and promises of those in flight or fetched now. */
  private blocksOf(name: string, at: number, len: number, lo: number, hi: number, check: ObjectCheck | undefined): (Block | Promise<Block>)[] {
    const B = this.blockBytes;
    const end = at + len;
    const first = Math.floor((at - lo) / B);
    const last = Math.floor((end - 1 - lo) / B);
    const parts: (Block | Promise<Block>)[] = [];
    let runStart = -1;
    const key = (b: number) => `${name}@${lo}#${b}`;
    const covers = (blk: Block, b: number) => blk.from + blk.buf.length >= Math.min(end, lo + (b + 1) * B);
    const fetchRun = (from: number, upTo: number) => {
      // One GET for the run of missing blocks [from, upTo), within the extent.
      const start = lo + from * B;
      const stop = Math.min(lo + upTo * B, hi);
      const whole = this.fetch(name, start, stop, check);
      for (let b = from; b < upTo; b++) {
        const k = key(b);
        const bs = lo + b * B;
        const p = whole.then((buf) => {
          const blk: Block = { from: bs, buf: Buffer.from(buf.subarray(bs - start, Math.min(bs + B, stop) - start)) };
          if (this.pending.get(k) === p) this.pending.delete(k);
          this.put(k, blk);
          return blk;
        });
        p.catch(() => {
          if (this.pending.get(k) === p) this.pending.delete(k);
        });
        this.pending.set(k, p);
        parts[b - first] = p;
      }
    };
    const flush = (upTo: number) => {
      if (runStart !== -1) fetchRun(runStart, upTo);
      runStart = -1;
    };
    for (let b = first; b <= last; b++) {
      const hit = this.blocks.get(key(b));
      if (hit !== undefined && covers(hit, b)) {
        flush(b);
        this.blocks.delete(key(b));
        this.blocks.set(key(b), hit);
        this.hits++;
        parts[b - first] = hit;
        continue;
      }
      const wait = this.pending.get(key(b));
      if (wait !== undefined) {
        flush(b);
        const bb = b;
        // Fetched for a shorter extent end (a tail object's member cut since): fetch it again if short.
        parts[b - first] = wait.then((blk) => (covers(blk, bb) ? blk : this.fetchOne(name, bb, lo, hi, check)));
        continue;
      }
      this.misses++;
      if (runStart === -1) runStart = b;
    }
    flush(last + 1);
    return parts;
  }

  private async fetchOne(name: string, b: number, lo: number, hi: number, check?: ObjectCheck): Promise<Block> {
    const from = lo + b * this.blockBytes;
    const blk: Block = { from, buf: await this.fetch(name, from, Math.min(from + this.blockBytes, hi), check) };
    this.put(`${name}@${lo}#${b}`, blk);
    return blk;
  }

  private put(key: string, blk: Block): void {
    if (blk.buf.length > this.maxBytes) return;
    const old = this.blocks.get(key);
    if (old !== undefined) {
      // Keep the wider of two partial blocks.
      if (old.buf.length > blk.buf.length && old.from <= blk.from && old.from + old.buf.length >= blk.from + blk.buf.length) return;
      this.bytes -= old.buf.length;
    }
    this.blocks.delete(key);
    this.blocks.set(key, blk);
    this.bytes += blk.buf.length;
    for (const [k, b] of this.blocks) {
      if (this.bytes <= this.maxBytes) break;
      this.blocks.delete(k);
      this.bytes -= b.buf.length;
    }
  }

  clear(): void {
    this.blocks.clear();
    this.bytes = 0;
  }
}
