/**
 * JIT warm-up for the main thread's half of the page path: plan pages over
 * a synthetic entry sidecar held in memory, so the first real page of a
 * fresh process does not walk its sidecar interpreted (measured: a cold
 * plan of a 15k-frame tail page took ~60 ms, a warm one ~15 ms).
 */
import { encodeEntry } from '../../streams/entry-codec.js';
import { INDEX_ENTRY, INDEX_RECORD_BYTES, indexBackward, indexRecords } from '../../streams/frame-index-file.js';
import { BackwardEntries } from '../../streams/entries-file.js';
import { ByteLineBlock, parseEntryBytes } from '../../streams/entry-codec.js';
import { neverOptimize, optimizeOnNextCall, tierOf, type Tier } from '../../workers/optimization-status.js';
import { planPage, WALK_ONCE_A_PAGE, walkPage } from '../../core/page-planner.js';
import { checkPlan, spanFits } from '../../core/plan-check.js';
import { resolvePageParams } from '../../core/page-rule.js';
import type { EntryLine } from '../../core/types.js';

/**
 * The header frame's length: the frames after it lie past 2^31, so their
 * offsets are heap numbers, as a large real log's are read from its frame
 * index (code that only saw small ones deoptimized on the first real plan).
 */
const HEAD_LENGTH = 2 ** 31 + 4096;

/**
 * An entry sidecar of `frames` frames and its frame index, built a block of
 * lines at a time: the lines and entries of the whole sidecar held at once
 * (20,000 frames' worth, as before) outlived young-generation collections
 * and grew this thread's young generation for good (docs/benchmarks.md,
 * "Start-up and idle memory").
 */
function syntheticSidecar(frames: number): { bytes: Buffer; index: Buffer; lastSeq: number; logBytes: number } {
  const head: EntryLine = { v: 1, seq: 0, count: 0, offset: 0, length: HEAD_LENGTH, kind: 'session', schema: 1 };
  const byteParts: Buffer[] = [Buffer.from(encodeEntry(head))];
  const indexParts: Buffer[] = [indexRecords([head])];
  let seq = 0;
  let offset = HEAD_LENGTH;
  for (let i = 0; i < frames; ) {
    const lines: string[] = [];
    const entries: EntryLine[] = [];
    for (const stop = Math.min(frames, i + 256); i < stop; i++) {
      const counted = i % 40 === 0;
      const count = counted ? 1 : 1 + (i % 37);
      const e: EntryLine = { v: 1, seq, count, offset, length: 60 + count * 11, kind: counted ? 'assistant/message' : 'text-chunks', schema: 1 };
      if (counted) e.group = Math.max(0, seq - 30);
      lines.push(encodeEntry(e));
      entries.push(e);
      seq += count;
      offset += e.length;
    }
    byteParts.push(Buffer.from(lines.join('')));
    indexParts.push(indexRecords(entries));
  }
  return { bytes: Buffer.concat(byteParts), index: Buffer.concat(indexParts), lastSeq: seq - 1, logBytes: offset };
}

/** Whether detachOnce has run on this thread. */
let detached = false;

/**
 * Detaches one empty ArrayBuffer, once a thread, before any warm-up compiles the planner. The
 * first ArrayBuffer an isolate detaches invalidates V8's ArrayBufferDetaching protector, and every
 * optimized function compiled while it held is discarded ("code dependencies"): its typed-array
 * reads were compiled without a detached check, walkPage's Float64Arrays among them. On this thread
 * the first detach is otherwise page-task.ts's own (when this thread loads the decoder for small
 * slices, at the start of a page-path warm-up) or, with no page-path warm-up, the first page task
 * whose buffers are moved to a worker (worker-pool.ts runSlice): the first real page, which then
 * walked unoptimized while V8 compiled the walk again. Code compiled after this one carries the
 * check and outlives every later detach. (The workers detach before their JIT warm-up:
 * workers/page-task.ts.) Node 20's V8 has no ArrayBuffer.prototype.transfer: a transferring
 * structured clone detaches it.
 */
export function detachOnce(): void {
  if (detached) return;
  detached = true;
  const probe = new ArrayBuffer(0);
  structuredClone(probe, { transfer: [probe] });
}

/** Kept between two warm-ups (`keep`): a second one reuses it instead of building it again. */
let sidecar: ReturnType<typeof syntheticSidecar> | null = null;

/** Frames of the synthetic sidecar: a walk of up to 400 messages covers all of them (16,000 lines were no better than more rounds over fewer). */
const FRAMES = 6_000;

/**
 * The last bounds the rounds checked their plans against, alive for the life of the process: the
 * plan check's optimized code checks for this object's map too (V8 holds such maps only weakly:
 * see keepLineShapes), and a dead one discarded it at the first full collection.
 */
let keptBounds: { indexedLength: number; nextSeq: number } | null = null;

async function planOver(kept: ReturnType<typeof syntheticSidecar>, first: number, rounds: number): Promise<void> {
  const { bytes, index, lastSeq, logBytes } = kept;
  // What the page service checks each plan against (core/plan-check.ts): the synthetic log's, which every plan fits.
  const bounds = { indexedLength: logBytes, nextSeq: lastSeq + 1 };
  keptBounds = bounds;
  const records = index.length / INDEX_RECORD_BYTES;
  const readRecords = (first: number, n: number) => index.subarray(first * INDEX_RECORD_BYTES, (first + n) * INDEX_RECORD_BYTES);
  const read = async (pos: number, len: number) => bytes.subarray(pos, Math.min(bytes.length, pos + len));
  const slow = (): EntryLine => {
    throw new Error('synthetic sidecar lines are canonical');
  };
  for (let r = first; r < first + rounds; r++) {
    const p = resolvePageParams({ maxMessages: r % 2 === 0 ? 400 : 50, ...(r % 3 === 0 ? { maxBytes: 200_000 } : {}) }, lastSeq);
    // Both planners: the JSONL sidecar walk and the binary frame index walk.
    checkPlan(await planPage(p, new BackwardEntries(read, bytes.length, slow)), bounds);
    checkPlan(await planPage(p, indexBackward(readRecords, records - 1)), bounds);
  }
}

/** The planner's hot functions: the walk (its loop is in walkPage, under planPage) and what it asks of each sidecar line. */
const WATCHED = [walkPage, ByteLineBlock.prototype.fields] as const;
/**
 * What the pass after the page path's pages watches: planPage only. The rounds compile planPage
 * with `fields` inlined into it, so `fields` alone is seldom compiled: watched, such a pass ran all
 * its 30 rounds (~70 ms of the main thread, on the path to ready) in every traced start
 * (docs/benchmarks.md, "start, second round"). It is now the only pass of a page-path warm-up
 * (the one before the pages was thrown away by them: "ready (tenth session)").
 */
const WATCHED_AGAIN = [walkPage] as const;
/** Rounds before asking V8 (the first ones gather feedback over both walks and every page shape). */
const MIN_ROUNDS = 3;
/** Wall time the rounds and the waits for the compiles may take, at most (a heavily loaded machine still gets ready). */
const BUDGET_MS = 1500;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Rounds until V8 runs the watched functions optimized (optimization-status.ts),
 * at most `rounds`; while one of them is compiling, wait instead of running
 * another round. At start-up the compile threads are shared with the page
 * workers' large decode loops: the planner's compiles queued behind them, and
 * the 30 fixed rounds ran mostly unoptimized code meanwhile: guided, the two
 * warm-ups cost this thread ~100-200 ms less CPU, CPU the workers' warm-up
 * needed (docs/benchmarks.md, "Issue 12 start-up: the warm-up's session built
 * at build time, the planner's rounds guided by V8"). Without V8's answer,
 * the fixed rounds as before.
 */
async function planUntilOptimized(
  kept: ReturnType<typeof syntheticSidecar>,
  rounds: number,
  tier: (f: (...args: never[]) => unknown) => Tier | null,
  again: boolean,
  optimize: (f: (...args: never[]) => unknown) => boolean,
): Promise<number> {
  const t0 = performance.now();
  const watched = again ? WATCHED_AGAIN : WATCHED;
  let r = 0;
  while (r < rounds && performance.now() - t0 < BUDGET_MS) {
    if (r >= MIN_ROUNDS) {
      const tiers = watched.map((f) => tier(f as (...args: never[]) => unknown));
      if (tiers.every((t) => t === 'optimized')) return r;
      if (tiers.includes('compiling')) {
        await pause(2);
        continue;
      }
      // Not marked by V8 after the rounds that gathered its feedback: asked for now, compiled at
      // the next round's call on this thread, instead of rounds until V8 marks it itself (the
      // pass after the page path's pages was 65-77 ms of this thread on the path to ready,
      // traced; docs/benchmarks.md, "ready (eleventh session)").
      watched.forEach((f, i) => {
        if (tiers[i] === 'not-optimized') optimize(f as (...args: never[]) => unknown);
      });
    }
    await planOver(kept, r, 1);
    r++;
  }
  return r;
}

/**
 * The three-frame sidecar the last walk is over, built once, first: built at
 * the end of every warm-up, that call came after V8 had marked
 * syntheticSidecar hot (the large sidecar's loop) and set off its compile, a
 * warm-up-only function whose ~100 ms of helper-thread CPU and main-thread
 * finishing landed in the first real page (traced).
 */
let tiny: ReturnType<typeof syntheticSidecar> | null = null;

/**
 * One sidecar line of each shape the fast line parser makes (with a message group and
 * without), alive for the life of the process. A line gets its `group` by a map transition,
 * which V8 holds only weakly: when no line of that shape was alive at the store's closing
 * collection, the map died and took the planner's optimized code with it ("weak objects"),
 * and the first real page compiled planPage again beside its plan: in 7 of 8 traced `serve`
 * starts, 0 of 4 with these kept (docs/benchmarks.md, issue 12 start-up). The lines of a
 * plan live only while it runs; the kept walker (core/shape-keeper.ts) holds its last line
 * only, of one shape.
 */
let keptLines: EntryLine[] | null = null;

async function keepLineShapes(): Promise<void> {
  if (keptLines !== null) return;
  keptLines = [];
  const shapes: EntryLine[] = [
    { v: 1, seq: 5, count: 1, offset: HEAD_LENGTH + 9000, length: 71, kind: 'assistant/message', schema: 1, group: 2 },
    { v: 1, seq: 6, count: 3, offset: HEAD_LENGTH + 9071, length: 93, kind: 'text-chunks', schema: 1 },
  ];
  for (const e of shapes) {
    // The line without its newline, as a sidecar block hands it to the parser.
    const line = Buffer.from(encodeEntry(e));
    const parsed = parseEntryBytes(line, 0, line.length - 1);
    if (parsed !== null) keptLines.push(parsed);
  }
  // And the frame index's lines of both shapes (streams/frame-index-file.ts entry: a message's line
  // gets its group by a transition too). The plan check's loop (spanFits), optimized at the end of
  // the warm-up, checks for their maps: without these its code was discarded ("weak objects") at
  // the first full collection, on the second or third real page, and compiled again on pages 8-10.
  const index = indexRecords(shapes);
  const block = await indexBackward((first, n) => index.subarray(first * INDEX_RECORD_BYTES, (first + n) * INDEX_RECORD_BYTES), shapes.length - 1).prevBlock();
  for (let k = 0; k < (block?.length ?? 0); k++) keptLines.push((block as NonNullable<typeof block>).entry(k));
}

/**
 * Returns the rounds run over the large sidecar; `tier`: V8's answer (a test's stand-in).
 * `again`: the pass after the page path's pages, about planPage only (WATCHED_AGAIN).
 */
export async function warmUpPlanner(
  rounds = 30,
  keep = false,
  tier: (f: (...args: never[]) => unknown) => Tier | null = tierOf,
  again = false,
  optimize: (f: (...args: never[]) => unknown) => boolean = tier === tierOf ? optimizeOnNextCall : () => false,
): Promise<number> {
  detachOnce();
  // Warm-up-only code: its loop's compile (on-stack replacement, 16-43 ms of a helper thread) was
  // never used, and took CPU from the workers' warm-up and once from the first real page.
  if (tiny === null) neverOptimize(syntheticSidecar);
  tiny ??= syntheticSidecar(3);
  const kept = sidecar ?? syntheticSidecar(FRAMES);
  sidecar = keep ? kept : null;
  const ran = await planUntilOptimized(kept, rounds, tier, again, optimize);
  await keepLineShapes();
  // The plan check's loop (spanFits), compiled on this thread at its next call (the walk below), from the feedback
  // of the rounds and of the page path's real plans. Called once a page, V8 marked it on the fifth
  // real page and compiled it on a helper thread during the sixth (3-20 ms of TurboFan, traced in
  // every fresh process), CPU taken from the page workers on two cores (docs/benchmarks.md,
  // "same, second round (eleventh session)").
  if (tier(spanFits) === 'not-optimized') optimize(spanFits);
  // Likewise the walk's span() and the index lines' entry(): marked hot on the second or third
  // real page and compiled on a helper thread beside it (traced in every fresh process,
  // docs/benchmarks.md "same, second round (fourteenth session)"); compiled at the tiny walk below.
  if (!keep) for (const f of [...WALK_ONCE_A_PAGE, INDEX_ENTRY]) if (tier(f) === 'not-optimized') optimize(f);
  // The planner's kept instances (core/shape-keeper.ts) hold the last reader's closure, and
  // with it this sidecar, until the first real plan: leave them holding a tiny one instead.
  // Its walk is round 1's (50 messages, no byte bound): round 0's byte bound walked the tiny
  // sidecar down to its head line, a path (and values) the rounds over the large one never
  // took, and planPage deoptimized there ("wrong map") just after they had it optimized. In
  // `serve` it was compiled again from that feedback and then discarded at the store's closing
  // collection ("weak objects") in 5 of 6 traced starts: the first real page compiled it again
  // (docs/benchmarks.md, issue 12 start-up, the planner's last walk).
  if (!keep) {
    await planOver(tiny, 1, 1);
    // That walk still deoptimized walkPage now and then ("wrong map", in 2 of 14 traced
    // processes): the first real page then walked unoptimized while V8 compiled the walk again
    // on a helper thread beside it (12-20 ms of TurboFan, CPU the page workers needed on two
    // cores; docs/benchmarks.md, "same (thirteenth session)"). Compiled again here, on this
    // thread, from feedback that now holds the tiny walk too, and that walk run once more so
    // the kept instances still hold the tiny sidecar: ~11-17 ms, only in a start where it happened.
    if (tier(walkPage) === 'not-optimized' && optimize(walkPage)) await planOver(tiny, 1, 1);
  }
  return ran;
}
