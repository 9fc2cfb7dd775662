/**
 * Memory for large page bodies, used again once every holder of a body is
 * done with it. A 4.6 MB body in fresh memory costs ~1,100 page faults
 * (~1.5 ms of the page's assembly); glibc hands a freed one back only after
 * V8 has collected the buffer that held it, which is late and irregular
 * (docs/benchmarks.md, "body (tenth session, 2026-12-03)").
 *
 * Ownership is counted, never guessed: a body taken here has one holder (the
 * caller that gets the page, who gives it up with `PageBuffer.release`), plus
 * one while the prepared-page cache keeps it (`hold` when admitted, `release`
 * when evicted). Only at zero does its memory go back to the free list; a
 * caller that never releases simply leaves it to the collector, like any
 * buffer. The bytes a holder was handed never change while it holds them.
 *
 * The free list is small (a few bodies of the sizes lately built) and is
 * emptied after `idleMs` without a page, so an idle server keeps none.
 */

/**
 * Bodies below this size come from Buffer.allocUnsafe as before. From 64 KiB (where `serve`'s
 * launcher has glibc map every buffer afresh) typical 50-message pages (~170 KB, of varied sizes)
 * came here too, and were no faster over HTTP, with more faults on a server's first pages.
 */
export const BODY_POOL_MIN_BYTES = 256 * 1024;
/** Released bodies kept for reuse at most (pages built at once each hold one), and their bytes. */
const MAX_FREE = 4;
const MAX_FREE_BYTES = 32 * 1024 * 1024;
/** A free buffer is used for a body of at least this share of its size (so a small page does not pin a large one). */
const MIN_FILL = 0.5;
/** New buffers get this much room beyond the body (a session's tail page grows a little with each append). */
const HEADROOM = 1 / 8;
/** Buffers are whole 4 KiB pages. */
const ROUND = 4096;

/**
 * Small whole pages' result buffers (`spareReleaser`) kept, once released, to go back to the workers with
 * later tasks (`takeSpare`): at most this many, and this many bytes. Pages built at once each hold
 * one; 16 in flight over two workers took ~10.
 */
const MAX_SPARES = 16;
const MAX_SPARES_BYTES = 8 * 1024 * 1024;

export class BodyPool {
  /** Buffers no one holds, most recently released last. */
  private readonly free: ArrayBuffer[] = [];
  /** The warm-up's buffer for the first body that fits in it (`prepare`). */
  private prepared: ArrayBuffer | null = null;
  /** Released whole pages' result buffers (spareReleaser, takeSpare). */
  private readonly spares: ArrayBuffer[] = [];
  /** Spares handed back to the workers (tests and benches read this). */
  sparesTaken = 0;
  /** Holders of each buffer handed out. Weak: a body never released is the collector's. */
  private readonly holders = new WeakMap<ArrayBuffer, number>();
  private readonly idle: NodeJS.Timeout;
  /** Bodies built into a released buffer, and into a new one (tests and benches read these). */
  reused = 0;
  fresh = 0;

  constructor(
    /** Bodies from this many bytes come from the pool (page-service.ts writes smaller pages whole in their worker's result). */
    readonly minBytes = BODY_POOL_MIN_BYTES,
    idleMs = 2000,
  ) {
    // Idle: no body released for idleMs (each release starts the wait again).
    this.idle = setTimeout(() => {
      this.free.length = 0;
      this.spares.length = 0;
    }, idleMs);
    this.idle.unref();
  }

  /** An uninitialized buffer of `n` bytes for a body, held once (by the caller that will get the page). */
  take(n: number): Buffer {
    if (n < this.minBytes) return Buffer.allocUnsafe(n);
    let ab: ArrayBuffer | undefined;
    for (let i = this.free.length - 1; i >= 0; i--) {
      const b = this.free[i] as ArrayBuffer;
      if (b.byteLength >= n && n >= b.byteLength * MIN_FILL) {
        ab = b;
        this.free.splice(i, 1);
        break;
      }
    }
    if (ab === undefined && this.prepared !== null && n <= this.prepared.byteLength) {
      ab = this.prepared;
      this.prepared = null;
    }
    if (ab === undefined) {
      ab = Buffer.allocUnsafeSlow(Math.ceil((n * (1 + HEADROOM)) / ROUND) * ROUND).buffer as ArrayBuffer;
      this.fresh++;
    } else this.reused++;
    this.holders.set(ab, 1);
    return Buffer.from(ab, 0, n);
  }

  /**
   * One buffer of `bytes` (whole 4 KiB pages), every page of it touched now, kept for the first
   * body of at most its size: the store's warm-up leaves it for the first large page a process
   * serves, whose body otherwise takes fresh memory and a page fault per 4 KiB in its assembly
   * (~1,150 for a 5M tail page's 4.6 MB, ~1.5 ms of the main thread on the page's critical path:
   * docs/benchmarks.md, "ready (fourteenth session)"). Not let go when idle, unlike released
   * bodies: the first page may come long after the start, and a dropped buffer stays resident
   * until V8 collects it anyway (`serve` idles without collections). Once taken it is a body like
   * any other.
   */
  prepare(bytes: number): void {
    if (bytes < this.minBytes) return;
    const b = Buffer.allocUnsafeSlow(Math.ceil(bytes / ROUND) * ROUND);
    b.fill(0);
    this.prepared = b.buffer as ArrayBuffer;
  }

  /** Bytes kept by `prepare` and not taken yet. */
  get preparedBytes(): number {
    return this.prepared?.byteLength ?? 0;
  }

  /**
   * `release` for the one holder of a small whole page's body, a view of its worker's result buffer
   * (page-service.ts; a page the prepared-page cache does not keep): once called, the buffer is a
   * spare for a later task (`takeSpare`). A buffer moved to a worker and back does not add to V8's
   * external memory, where each fresh result did (page-task.ts). No count and no weak map: a body
   * whose holder never releases is simply the collector's (a WeakMap entry a page cost the in-process
   * bench's pages, which are never released, ~5% at 1 in flight: docs/benchmarks.md, "ready
   * (thirteenth session)").
   */
  spareReleaser(body: Buffer): () => void {
    let ab: ArrayBuffer | null = body.buffer as ArrayBuffer;
    return () => {
      if (ab === null) return;
      this.spares.push(ab);
      ab = null;
      let bytes = this.spares.reduce((a, b) => a + b.byteLength, 0);
      while (this.spares.length > MAX_SPARES || bytes > MAX_SPARES_BYTES) bytes -= (this.spares.shift() as ArrayBuffer).byteLength;
      this.idle.refresh();
    };
  }

  /** A released result buffer of at least `min` and at most `max` bytes, no longer held by anyone, to hand to a worker (moved: it is this caller's). */
  takeSpare(min: number, max: number): ArrayBuffer | undefined {
    for (let i = this.spares.length - 1; i >= 0; i--) {
      const b = this.spares[i] as ArrayBuffer;
      if (b.byteLength >= min && b.byteLength <= max) {
        this.spares.splice(i, 1);
        this.sparesTaken++;
        return b;
      }
    }
    return undefined;
  }

  /** One more holder of `body` (the prepared-page cache); a body not from here is ignored. */
  hold(body: Buffer): void {
    const ab = body.buffer as ArrayBuffer;
    const n = this.holders.get(ab);
    if (n !== undefined) this.holders.set(ab, n + 1);
  }

  /** A holder of `body` is done with it: at the last one its memory may take a later body. */
  release(body: Buffer): void {
    const ab = body.buffer as ArrayBuffer;
    const n = this.holders.get(ab);
    if (n === undefined) return;
    if (n > 1) {
      this.holders.set(ab, n - 1);
      return;
    }
    this.holders.delete(ab);
    this.free.push(ab);
    while (this.free.length > MAX_FREE || this.freeBytes > MAX_FREE_BYTES) this.free.shift();
    this.idle.refresh();
  }

  /** `release` for one holder, callable once (a second call does nothing, so it cannot take another holder's count). */
  releaser(body: Buffer): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.release(body);
    };
  }

  /** Bytes kept free now. */
  get freeBytes(): number {
    return this.free.reduce((a, b) => a + b.byteLength, 0);
  }
}
