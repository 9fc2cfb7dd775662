/**
 * The readers' bounded cache of remote bytes: fixed-size blocks of
 * immutable objects (segments and tail objects never change once written,
 * so a block never goes stale and needs no invalidation), least recently
 * used first out, bounded in bytes. A read's missing blocks of one object
 * are fetched with one ranged GET covering all of them (coalesced), and a
 * block already being fetched is awaited, not fetched twice.
 */

export type RangeFetch = (name: string, start: number, end: number) => Promise<Buffer>;

export const DEFAULT_BLOCK_BYTES = 256 * 1024;
export const DEFAULT_CACHE_BYTES = 128 * 1024 * 1024;

export class BlockCache {
  /** Insertion order is recency order (a hit is moved to the end). */
  private readonly blocks = new Map<string, Buffer>();
  private readonly pending = new Map<string, Promise<Buffer>>();
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

  /** Bytes [at, at + len) of immutable object `name` (which holds at least that many). */
  async read(name: string, at: number, len: number): Promise<Buffer> {
    if (len <= 0) return Buffer.alloc(0);
    const B = this.blockBytes;
    const first = Math.floor(at / B);
    const last = Math.floor((at + len - 1) / B);
    const parts: (Buffer | Promise<Buffer>)[] = [];
    let runStart = -1;
    const flush = (upTo: number) => {
      if (runStart === -1) return;
      const from = runStart;
      runStart = -1;
      // One GET for the run of missing blocks [from, upTo).
      const whole = this.fetch(name, from * B, upTo * B);
      for (let b = from; b < upTo; b++) {
        const key = `${name}#${b}`;
        const p = whole.then((buf) => {
          const block = Buffer.from(buf.subarray((b - from) * B, (b - from + 1) * B));
          this.pending.delete(key);
          this.put(key, block);
          return block;
        });
        p.catch(() => this.pending.delete(key));
        this.pending.set(key, p);
        parts[b - first] = p;
      }
    };
    for (let b = first; b <= last; b++) {
      const key = `${name}#${b}`;
      const hit = this.blocks.get(key);
      if (hit !== undefined) {
        flush(b);
        this.blocks.delete(key);
        this.blocks.set(key, hit);
        this.hits++;
        parts[b - first] = hit;
        continue;
      }
      const wait = this.pending.get(key);
      if (wait !== undefined) {
        flush(b);
        parts[b - first] = wait;
        continue;
      }
      this.misses++;
      if (runStart === -1) runStart = b;
    }
    flush(last + 1);
    const got = await Promise.all(parts);
    const out = Buffer.allocUnsafe(len);
    let filled = 0;
    for (let i = 0; i < got.length; i++) {
      const blockStart = (first + i) * B;
      const block = got[i] as Buffer;
      const from = Math.max(at, blockStart) - blockStart;
      const to = Math.min(at + len, blockStart + block.length) - blockStart;
      if (to <= from) break;
      block.copy(out, filled, from, to);
      filled += to - from;
    }
    return filled === len ? out : out.subarray(0, filled);
  }

  private put(key: string, block: Buffer): void {
    if (block.length > this.maxBytes) return;
    const old = this.blocks.get(key);
    if (old !== undefined) this.bytes -= old.length;
    this.blocks.delete(key);
    this.blocks.set(key, block);
    this.bytes += block.length;
    for (const [k, b] of this.blocks) {
      if (this.bytes <= this.maxBytes) break;
      this.blocks.delete(k);
      this.bytes -= b.length;
    }
  }

  clear(): void {
    this.blocks.clear();
    this.bytes = 0;
  }
}
