/**
 * Page planning from the entry sidecar alone (SPEC section 5), pure: given a
 * backward source of entry lines starting at the frame that holds `end - 1`,
 * walk back counting messages and return the frames of `[cut, end)`. It
 * never sees a payload and reads only as many entries as the page covers.
 */
import type { ResolvedParams } from './page-rule.js';
import type { EntryLine } from './types.js';

/** Entry lines walked backwards: each call yields the next block down, in file order; null at the start. */
export interface BackwardEntrySource {
  prevBlock(): Promise<EntryLine[] | null>;
}

export interface PagePlan {
  throughSeq: number;
  fromSeq: number;
  /** Exclusive. */
  toSeq: number;
  hasMore: boolean;
  /** The frames holding any event of [fromSeq, toSeq), in file order. */
  frames: EntryLine[];
  /** Their stored bytes. */
  frameBytes: number;
}

export function emptyPlan(throughSeq: number, end: number): PagePlan {
  return { throughSeq, fromSeq: end, toSeq: end, hasMore: end > 0, frames: [], frameBytes: 0 };
}

export async function planPage(p: ResolvedParams, source: BackwardEntrySource): Promise<PagePlan> {
  const end = p.end;
  if (end <= 0) return { ...emptyPlan(p.throughSeq, 0), hasMore: false };

  let block: EntryLine[] = [];
  let exhausted = false;
  // Frames loaded so far, newest first; all of them overlap [cut, end).
  const loaded: EntryLine[] = [];
  let bytes = 0;

  async function loadOne(): Promise<EntryLine | null> {
    while (block.length === 0) {
      if (exhausted) return null;
      const b = await source.prevBlock();
      if (b === null) {
        exhausted = true;
        return null;
      }
      block = b;
    }
    const e = block.pop() as EntryLine;
    if (e.count === 0) {
      // The header frame: the walk reached the start of the log.
      exhausted = true;
      block = [];
      return null;
    }
    loaded.push(e);
    bytes += e.length;
    return e;
  }

  /** Load frames until the lowest one holds `seq`. */
  async function loadDownTo(seq: number): Promise<void> {
    for (;;) {
      const low = loaded[loaded.length - 1];
      if (low !== undefined && low.seq <= seq) return;
      if ((await loadOne()) === null) return;
    }
  }

  let cut = end;
  let counted = 0;
  let stopped = false;
  let w = 0;
  for (;;) {
    if (w === loaded.length && (await loadOne()) === null) break;
    const e = loaded[w++] as EntryLine;
    if (e.group === undefined || e.seq >= end) continue;
    if (e.group < cut) cut = e.group;
    counted++;
    if (counted >= p.maxMessages) {
      stopped = true;
      break;
    }
    if (p.maxBytes !== undefined) {
      await loadDownTo(cut);
      if (bytes > p.maxBytes) {
        stopped = true;
        break;
      }
    }
  }
  if (!stopped) cut = 0;
  await loadDownTo(cut);
  loaded.reverse();
  return { throughSeq: p.throughSeq, fromSeq: cut, toSeq: end, hasMore: cut > 0, frames: loaded, frameBytes: bytes };
}

/**
 * The frames holding events [from, to), for reads by seq range (follow
 * catch-up). `source` starts at the frame holding `to - 1`.
 */
export async function planRange(from: number, to: number, source: BackwardEntrySource): Promise<EntryLine[]> {
  const frames: EntryLine[] = [];
  if (to <= from) return frames;
  for (;;) {
    const block = await source.prevBlock();
    if (block === null) break;
    for (let i = block.length - 1; i >= 0; i--) {
      const e = block[i] as EntryLine;
      if (e.count === 0) return frames.reverse();
      frames.push(e);
      if (e.seq <= from) return frames.reverse();
    }
  }
  return frames.reverse();
}
