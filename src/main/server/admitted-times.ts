/**
 * When each request in flight was admitted (admission.ts), oldest first. A Map from a running
 * key to the time, set on admission and deleted on release, had ~16 live entries and a steady
 * stream of deletions: V8's ordered hash table then rehashed into a freshly allocated table every
 * few requests (0.5% of the main thread's CPU at 16 connections: OrderedHashTable Rehash,
 * Allocate and Shrink under tryAcquire). Admissions come in time order, so the times are an
 * array in that order, a release marks its own, and the oldest in flight is the first not marked.
 */
export class AdmittedTimes {
  private readonly times: number[] = [];
  private readonly released: boolean[] = [];
  /** The first time not released (index into the arrays). */
  private head = 0;
  /** The key of the arrays' first element. */
  private base = 0;

  /** Adds an admission at time `t`; its key for release(). */
  add(t: number): number {
    this.times.push(t);
    this.released.push(false);
    return this.base + this.times.length - 1;
  }

  /** The admission of `key` is over (once per key). */
  release(key: number): void {
    this.released[key - this.base] = true;
    const n = this.times.length;
    while (this.head < n && this.released[this.head] === true) this.head++;
    if (this.head === n) {
      // None in flight: start over (the arrays keep their room).
      this.base += n;
      this.times.length = 0;
      this.released.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > n) {
      // Drop the released prefix now and then (amortized O(1) a request).
      this.times.splice(0, this.head);
      this.released.splice(0, this.head);
      this.base += this.head;
      this.head = 0;
    }
  }

  /** The time of the oldest admission in flight, or undefined when none is. */
  oldest(): number | undefined {
    return this.head < this.times.length ? this.times[this.head] : undefined;
  }
}
