/**
 * Page planning from the entry sidecar alone (SPEC section 5), pure: given a
 * backward source of entry lines starting at the frame that holds `end - 1`,
 * walk back counting messages and return the byte range of `[cut, end)`.
 * It never sees a payload and reads only as many lines as the page covers;
 * most lines are only asked for their seq and whether they are counted.
 */
import { addClaim, claimWords, frameClaim } from './frame-claim.js';
import type { ResolvedParams } from './page-rule.js';
import { keepShape } from './shape-keeper.js';
import type { EntryLine } from './types.js';

/** A block of entry lines in file order, parsed on demand. */
export interface EntryLines {
  readonly length: number;
  entry(k: number): EntryLine;
  seq(k: number): number;
  /** Offset of line k's frame in the log. */
  offset(k: number): number;
  /** Group start when line k is a counted message. */
  group(k: number): number | undefined;
  /** Line k is the sidecar's first line (the session header's entry). */
  isFirst(k: number): boolean;
  /**
   * Line k's seq, frame offset and group start (-1 when not a counted
   * message) into `into[0]`, `into[1]`, `into[2]`: what the walk reads of
   * every line, in one call (Walker.takeOne says why).
   */
  fields(k: number, into: Float64Array): void;
}

/** Entry lines walked backwards: each call yields the next block down; null at the start. */
export interface BackwardEntrySource {
  prevBlock(): Promise<EntryLines | null>;
}

/** Frames of a seq range: contiguous in the log, from `first` to `last`. */
export interface FrameSpan {
  first: EntryLine;
  last: EntryLine;
  /** Number of frames, first and last included. */
  count: number;
  /** Stored bytes: last.offset + last.length - first.offset. */
  bytes: number;
  /** Frames strictly between first and last, in file order, where the span may be cut for parallel decoding. */
  splits: EntryLine[];
  /** For each split, how many of the span's frames come before it. */
  splitFrames: number[];
  /**
   * Stored bytes of the span's one-event frames (events, not rows: they
   * decode at a higher cost per byte, see core/slice-cuts.ts), and for each
   * split those of the frames before it.
   */
  eventBytes: number;
  splitEventBytes: number[];
  /**
   * What the plan claims of its frames, for the workers to check
   * (core/frame-claim.ts): the digest of every frame of the span, and for
   * each split the digest of the frames from it to the last.
   */
  digest: number;
  splitDigests: number[];
}

export interface PagePlan {
  throughSeq: number;
  fromSeq: number;
  /** Exclusive. */
  toSeq: number;
  hasMore: boolean;
  /** Null for an empty page. */
  span: FrameSpan | null;
}

/** Every how many lines the planner parses one fully as a split candidate. */
export const SPLIT_EVERY = 32;

/** Where takeOne has each line's fields put (it runs to completion: one for all walkers). */
const line = new Float64Array(3);
/** The same bytes as 32-bit words: the claim is hashed from them (core/frame-claim.ts wordsClaim, written out in takeOne). */
const lineWords = new Int32Array(line.buffer);

/** Lines a walker starts with room for (a typical page's walk), and the most it keeps room for between walks. */
const FIRST_ROOM = 1024;
const KEPT_ROOM = 32768;
/** Walkers idle between walks, for the next walk to reuse (walkerFor), at most this many. */
const IDLE_MAX = 8;
const idle: Walker[] = [];

/**
 * Walks lines downwards from the source, remembering only what the plan
 * needs. Its per-line state is in typed arrays it keeps between walks (a
 * walker goes back to `idle` when finished): a tail page's walk loads
 * ~15,000 lines, and growing fresh arrays for them was the main thread's
 * largest allocation per page (docs/benchmarks.md, "same, second round
 * (fourteenth session)"). One walker serves one walk at a time: walks
 * interleave at their awaits (one per connection), and each takes its own
 * from walkerFor.
 */
class Walker {
  private source: BackwardEntrySource | null = null;
  private block: EntryLines | null = null;
  private k = 0;
  /** Where the lowest loaded line is (the cursor may sit on the header line below it). */
  private lowBlock: EntryLines | null = null;
  private lowK = 0;
  private exhausted = false;
  /** How many lines are loaded. */
  loaded = 0;
  /** Group start of each loaded line (newest first), -1 when not counted: elements [0, loaded). */
  private groups = new Float64Array(FIRST_ROOM);
  lowSeq = Number.POSITIVE_INFINITY;
  last: EntryLine | null = null;
  /**
   * Split candidates, newest first: elements [0, splitCount). For each, how
   * many lines were loaded when it was (itself included), the digest of the
   * claims loaded so far (core/frame-claim.ts) and the stored bytes of the
   * one-event frames loaded so far (that split included).
   */
  private splitCount = 0;
  private readonly splits: EntryLine[] = [];
  private splitDepths = new Float64Array(FIRST_ROOM / SPLIT_EVERY);
  private splitDigests = new Float64Array(FIRST_ROOM / SPLIT_EVERY);
  private splitEventBytes = new Float64Array(FIRST_ROOM / SPLIT_EVERY);
  /** Digest of the claims of the lines loaded so far. */
  digest = 0;
  /**
   * Stored bytes of the one-event frames loaded so far. A frame's count and
   * length are the differences of its seq and offset from the frame above it
   * (loaded just before), so no line is parsed for them.
   */
  eventBytes = 0;
  private aboveSeq = 0;
  private aboveOffset = 0;

  constructor() {
    keepShape(this);
    // The arrays a long walk replaces (grown, finish), stored once more now: V8 takes a field written
    // only by its initializer for a constant, and code compiled on that assumption (walkPage, with
    // `group` inlined) was discarded ("code dependencies") by the first walk that outgrew
    // FIRST_ROOM lines. In `serve` that was the planner's last warm-up pass, after the page-path
    // pages' short walks had the walk compiled: the serve-start probe in test/optimized-code.test.ts.
    this.groups = new Float64Array(FIRST_ROOM);
    this.splitDepths = new Float64Array(FIRST_ROOM / SPLIT_EVERY);
    this.splitDigests = new Float64Array(FIRST_ROOM / SPLIT_EVERY);
    this.splitEventBytes = new Float64Array(FIRST_ROOM / SPLIT_EVERY);
  }

  /** Ready to walk `source` from its start. */
  begin(source: BackwardEntrySource): this {
    this.source = source;
    return this;
  }

  /** Group start of the i-th line loaded (newest first), -1 when not counted; i < loaded. */
  group(i: number): number {
    return this.groups[i] as number;
  }

  /**
   * Load the next line down from the current block: true, false once the
   * walk reached the header, null when the next block must be fetched first
   * (loadOne). Synchronous on purpose: a tail page walks ~15,000 lines, and
   * an await per line cost more than the walk itself.
   */
  takeOne(): boolean | null {
    if (this.exhausted) return false;
    const b = this.block;
    if (b === null || this.k === 0) return null;
    const k = --this.k;
    if (b.isFirst(k)) {
      // The header frame: the walk reached the start of the log.
      this.exhausted = true;
      return false;
    }
    // One call for the line's three fields, not one each: the walk meets two kinds of block
    // (index records, sidecar lines; the planner's warm-up runs both), and with three
    // two-way calls V8 spent its inlining budget on them and called the claim's hash
    // out of line, 15,000 times a tail page (docs/benchmarks.md, issue 13).
    b.fields(k, line);
    const seq = line[0] as number;
    const offset = line[1] as number;
    const g = line[2] as number;
    const n = this.loaded;
    if (n === this.groups.length) this.groups = grown(this.groups);
    this.groups[n] = g;
    this.loaded = n + 1;
    this.lowSeq = seq;
    if (claimWords) {
      // wordsClaim(lineWords) written out (its loop's three rounds of one fmix each): called out
      // of line once a line, the hash was ~15% of a typical page's walk, the walk ~8-10% of the
      // main thread's CPU at 16 connections (a micro-benchmark of 644-line walks: 25.5 -> 22.2 ns
      // a line). The same bits: test/planner-walkers.test.ts sums frameClaim over the lines.
      let h = (lineWords[0] as number) ^ Math.imul(lineWords[1] as number, 0x9e3779b1);
      h ^= h >>> 16;
      h = Math.imul(h, 0x85ebca6b);
      h ^= h >>> 13;
      h = Math.imul(h, 0xc2b2ae35);
      h ^= h >>> 16;
      h ^= (lineWords[2] as number) ^ Math.imul(lineWords[3] as number, 0x27d4eb2f);
      h ^= h >>> 16;
      h = Math.imul(h, 0x85ebca6b);
      h ^= h >>> 13;
      h = Math.imul(h, 0xc2b2ae35);
      h ^= h >>> 16;
      h ^= (lineWords[4] as number) ^ Math.imul(lineWords[5] as number, 0x165667b1);
      h ^= h >>> 16;
      h = Math.imul(h, 0x85ebca6b);
      h ^= h >>> 13;
      h = Math.imul(h, 0xc2b2ae35);
      h ^= h >>> 16;
      this.digest = addClaim(this.digest, h >>> 0);
    } else this.digest = addClaim(this.digest, frameClaim(seq, offset, g));
    this.lowBlock = b;
    this.lowK = k;
    if (this.last === null) {
      const last = b.entry(k);
      this.last = last;
      if (last.count === 1) this.eventBytes += last.length;
    } else {
      if (this.aboveSeq - seq === 1) this.eventBytes += this.aboveOffset - offset;
      if ((n + 1) % SPLIT_EVERY === 0) {
        const j = this.splitCount;
        if (j === this.splitDepths.length) {
          this.splitDepths = grown(this.splitDepths);
          this.splitDigests = grown(this.splitDigests);
          this.splitEventBytes = grown(this.splitEventBytes);
        }
        this.splits[j] = b.entry(k);
        this.splitDepths[j] = n + 1;
        this.splitDigests[j] = this.digest;
        this.splitEventBytes[j] = this.eventBytes;
        this.splitCount = j + 1;
      }
    }
    this.aboveSeq = seq;
    this.aboveOffset = offset;
    return true;
  }

  async loadOne(): Promise<boolean> {
    for (;;) {
      const took = this.takeOne();
      if (took !== null) return took;
      const b = await (this.source as BackwardEntrySource).prevBlock();
      if (b === null) {
        this.exhausted = true;
        return false;
      }
      this.block = b;
      this.k = b.length;
    }
  }

  /** Load lines until the lowest one holds `seq`. */
  async loadDownTo(seq: number): Promise<void> {
    while (this.lowSeq > seq) {
      const took = this.takeOne() ?? (await this.loadOne());
      if (!took) return;
    }
  }

  /** The lowest loaded line. */
  low(): EntryLine {
    return (this.lowBlock as EntryLines).entry(this.lowK);
  }

  /**
   * The span walked; then the walk's state is let go and this walker goes
   * back to `idle` (its arrays kept unless a long walk grew them past
   * KEPT_ROOM: an idle walker must not hold memory that grows with the
   * largest page ever asked for).
   */
  finish(): FrameSpan | null {
    const span = this.span();
    this.source = this.block = this.lowBlock = this.last = null;
    this.k = this.lowK = 0;
    this.exhausted = false;
    this.loaded = 0;
    this.lowSeq = Number.POSITIVE_INFINITY;
    this.splits.fill(null as unknown as EntryLine, 0, this.splitCount);
    this.splitCount = 0;
    this.digest = this.eventBytes = this.aboveSeq = this.aboveOffset = 0;
    if (this.groups.length > KEPT_ROOM) {
      this.groups = new Float64Array(FIRST_ROOM);
      this.splits.length = 0;
      this.splitDepths = new Float64Array(FIRST_ROOM / SPLIT_EVERY);
      this.splitDigests = new Float64Array(FIRST_ROOM / SPLIT_EVERY);
      this.splitEventBytes = new Float64Array(FIRST_ROOM / SPLIT_EVERY);
    }
    if (idle.length < IDLE_MAX) idle.push(this);
    return span;
  }

  private span(): FrameSpan | null {
    if (this.last === null) return null;
    const first = this.low();
    const last = this.last;
    const count = this.loaded;
    const splits: EntryLine[] = [];
    const splitFrames: number[] = [];
    const splitDigests: number[] = [];
    const splitEventBytes: number[] = [];
    for (let j = this.splitCount - 1; j >= 0; j--) {
      const e = this.splits[j] as EntryLine;
      if (e.offset <= first.offset || e.offset >= last.offset) continue;
      splits.push(e);
      // Loaded newest first: the frames below it are those loaded after it.
      splitFrames.push(count - (this.splitDepths[j] as number));
      splitDigests.push(this.splitDigests[j] as number);
      splitEventBytes.push(this.eventBytes - (this.splitEventBytes[j] as number));
    }
    return { first, last, count, bytes: last.offset + last.length - first.offset, splits, splitFrames, eventBytes: this.eventBytes, splitEventBytes, digest: this.digest, splitDigests };
  }
}

/**
 * What a walk calls once (span) or once in 32 lines (a block's entry: the split candidates), so
 * that V8 marks it hot only on the second or third real page and compiles it on a helper thread
 * beside that page's decoding workers (`--trace-opt`): the planner's warm-up has them compiled
 * on its own thread (main/warmup/planner-warmup.ts).
 */
export const WALK_ONCE_A_PAGE: readonly ((...args: never[]) => unknown)[] = [Walker.prototype['span']];

/** `a`'s elements in an array of twice its length. */
function grown(a: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> {
  const b = new Float64Array(2 * a.length);
  b.set(a);
  return b;
}

/** A walker for a walk of `source`: an idle one when there is one. */
function walkerFor(source: BackwardEntrySource): Walker {
  return (idle.pop() ?? new Walker()).begin(source);
}

/**
 * The page's plan. The walk itself is walkPage, which takes the parameters
 * as numbers: V8 gives the objects resolvePageParams makes more than one
 * map over a process's life (small-integer seqs in the warm-up's first
 * pages, heap numbers once seqs are read from files), and the first real
 * page's walk, optimized for the warm-up's, deoptimized at its entry on its
 * parameters' map ("wrong map") and walked its ~15,000 lines unoptimized
 * (docs/benchmarks.md, "same (tenth session)"). Here such a check costs
 * nothing to redo.
 */
export function planPage(p: ResolvedParams, source: BackwardEntrySource): Promise<PagePlan> {
  return walkPage(p.throughSeq, p.end, p.maxMessages, p.maxBytes ?? NO_MAX_BYTES, source);
}

/** walkPage's `maxBytes` when the page has no byte bound. */
const NO_MAX_BYTES = -1;

/** planPage's walk; `maxBytes` NO_MAX_BYTES: no byte bound. */
export async function walkPage(throughSeq: number, end: number, maxMessages: number, maxBytes: number, source: BackwardEntrySource): Promise<PagePlan> {
  if (end <= 0) return { throughSeq, fromSeq: 0, toSeq: 0, hasMore: false, span: null };
  const w = walkerFor(source);
  let cut = end;
  let counted = 0;
  let stopped = false;
  for (let i = 0; ; i++) {
    if (i === w.loaded && !(w.takeOne() ?? (await w.loadOne()))) break;
    const g = w.group(i);
    if (g < 0) continue;
    if (g < cut) cut = g;
    counted++;
    if (counted >= maxMessages) {
      stopped = true;
      break;
    }
    if (maxBytes !== NO_MAX_BYTES) {
      // Stored bytes of the frames covering [cut, end): they are contiguous.
      await w.loadDownTo(cut);
      const last = w.last as EntryLine;
      if (last.offset + last.length - w.low().offset > maxBytes) {
        stopped = true;
        break;
      }
    }
  }
  if (!stopped) cut = 0;
  await w.loadDownTo(cut);
  return { throughSeq, fromSeq: cut, toSeq: end, hasMore: cut > 0, span: w.finish() };
}

/**
 * The frames holding events [from, to), for reads by seq range (follow
 * catch-up). `source` starts at the frame holding `to - 1`.
 */
export async function planRange(from: number, to: number, source: BackwardEntrySource): Promise<FrameSpan | null> {
  if (to <= from) return null;
  const w = walkerFor(source);
  await w.loadOne();
  await w.loadDownTo(from);
  return w.finish();
}
