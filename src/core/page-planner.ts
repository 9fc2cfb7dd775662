/**
 * Page planning from the entry sidecar alone (SPEC section 5), pure: given a
 * backward source of entry lines starting at the frame that holds `end - 1`,
 * walk back counting messages and return the byte range of `[cut, end)`.
 * It never sees a payload and reads only as many lines as the page covers;
 * most lines are only asked for their seq and whether they are counted.
 */
import { addClaim, claimWords, frameClaim, wordsClaim } from './frame-claim.js';
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
/** The same bytes as 32-bit words: the claim is hashed from them (core/frame-claim.ts wordsClaim). */
const lineWords = new Int32Array(line.buffer);

/** Walks lines downwards from the source, remembering only what the plan needs. */
class Walker {
  private block: EntryLines | null = null;
  private k = 0;
  /** Where the lowest loaded line is (the cursor may sit on the header line below it). */
  private lowBlock: EntryLines | null = null;
  private lowK = 0;
  private exhausted = false;
  /** Group start of each loaded line (newest first), -1 when not counted. */
  readonly groups: number[] = [];
  lowSeq = Number.POSITIVE_INFINITY;
  last: EntryLine | null = null;
  /** Split candidates, newest first, and how many lines were loaded when each was (itself included). */
  readonly splits: EntryLine[] = [];
  readonly splitDepths: number[] = [];
  /** Digest of the claims of the lines loaded so far (core/frame-claim.ts), and its value at each split. */
  digest = 0;
  readonly splitDigests: number[] = [];
  /**
   * Stored bytes of the one-event frames loaded so far, and their value at
   * each split (that split included). A frame's count and length are the
   * differences of its seq and offset from the frame above it (loaded just
   * before), so no line is parsed for them.
   */
  eventBytes = 0;
  readonly splitEventBytes: number[] = [];
  private aboveSeq = 0;
  private aboveOffset = 0;

  constructor(private readonly source: BackwardEntrySource) {
    keepShape(this);
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
    this.groups.push(g);
    this.lowSeq = seq;
    this.digest = addClaim(this.digest, claimWords ? wordsClaim(lineWords) : frameClaim(seq, offset, g));
    this.lowBlock = b;
    this.lowK = k;
    if (this.last === null) {
      const last = b.entry(k);
      this.last = last;
      if (last.count === 1) this.eventBytes += last.length;
    } else {
      if (this.aboveSeq - seq === 1) this.eventBytes += this.aboveOffset - offset;
      if (this.groups.length % SPLIT_EVERY === 0) {
        this.splits.push(b.entry(k));
        this.splitDepths.push(this.groups.length);
        this.splitDigests.push(this.digest);
        this.splitEventBytes.push(this.eventBytes);
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
      const b = await this.source.prevBlock();
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

  /** The span walked, and the walk's per-line state let go (this walker is kept alive: core/shape-keeper.ts). */
  finish(): FrameSpan | null {
    const span = this.span();
    this.groups.length = 0;
    this.splits.length = 0;
    this.splitDepths.length = 0;
    this.splitDigests.length = 0;
    this.splitEventBytes.length = 0;
    this.digest = 0;
    this.eventBytes = 0;
    return span;
  }

  private span(): FrameSpan | null {
    if (this.last === null) return null;
    const first = this.low();
    const last = this.last;
    const count = this.groups.length;
    const splits: EntryLine[] = [];
    const splitFrames: number[] = [];
    const splitDigests: number[] = [];
    const splitEventBytes: number[] = [];
    for (let j = this.splits.length - 1; j >= 0; j--) {
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
  const w = new Walker(source);
  let cut = end;
  let counted = 0;
  let stopped = false;
  for (let i = 0; ; i++) {
    if (i === w.groups.length && !(w.takeOne() ?? (await w.loadOne()))) break;
    const g = w.groups[i] as number;
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
  const w = new Walker(source);
  await w.loadOne();
  await w.loadDownTo(from);
  return w.finish();
}
