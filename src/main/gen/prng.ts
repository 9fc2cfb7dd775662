/**
 * The project's one seeded PRNG (mulberry32): `gen` (Rng), and the load
 * harness and the fault suites (mulberry32()), whose runs replay from their
 * seed. Generated sessions must be byte-identical for a seed on every
 * machine and Node version, so nothing in the generator may use Math.random
 * or the clock.
 */

/** Mix a (seed, stream) pair into a 32-bit state; seeds use all 53 bits. */
export function mixSeed(seed: number, stream: number): number {
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 4294967296) >>> 0;
  let h = Math.imul(lo ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(hi + 0x7f4a7c15, 0xc2b2ae35) ^ Math.imul(stream + 1, 0x27d4eb2f);
  // murmur3 finalizer: spreads every input bit over the state.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const HEX = '0123456789abcdef';

export class Rng {
  private s: number;

  constructor(state: number) {
    this.s = state >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** Integer in [lo, hi], log-uniform: most values small, a long tail of large ones. */
  logInt(lo: number, hi: number): number {
    const a = Math.log(lo);
    const b = Math.log(hi + 1);
    return Math.min(hi, Math.floor(Math.exp(a + this.next() * (b - a))));
  }

  chars(n: number, alphabet = ALNUM): string {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(this.next() * alphabet.length)];
    return s;
  }

  /** A UUID-shaped id (v4 layout), as dsh gives messages. */
  uuid(): string {
    const h = (n: number): string => this.chars(n, HEX);
    return `${h(8)}-${h(4)}-4${h(3)}-${this.pick(['8', '9', 'a', 'b'])}${h(3)}-${h(12)}`;
  }
}

/**
 * mulberry32 as a plain function: uniform numbers in [0, 1) from a 32-bit
 * seed (`seed >>> 0`), the same sequence as `new Rng(seed).next()`. A run
 * that prints its seed can be replayed exactly.
 */
export function mulberry32(seed: number): () => number {
  const rng = new Rng(seed >>> 0);
  return () => rng.next();
}
