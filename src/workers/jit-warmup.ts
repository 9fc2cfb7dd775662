/**
 * JIT warm-up for a page worker, run once when the worker starts. The page
 * path's byte scanners run several times slower before V8 optimizes them, and
 * one large page is not enough iterations for V8 to tier up early. So each
 * worker decodes a small synthetic log (every frame shape: rows of each kind,
 * cut and whole, with and without frame checksums and row metadata; messages; odd chunks;
 * binary frames) plus a small generated session in real batch shapes, a few
 * rounds, before it takes a task. Synthetic data only: no session is read.
 *
 * Measured on the 5M-event tail page (2 workers, fresh process): ~500 ms
 * with no warm-up; ~220 ms with a synthetic warm-up that V8 then threw away
 * (see the ArrayBuffer note in page-task.ts); ~90 ms now. A few rounds of this
 * small log keep the worker's heap small: twenty rounds or a larger log
 * raised the process's peak RSS by 10-20 MB for no further gain.
 */
import { encodeFrame } from '../streams/frame-codec.js';
import { continuesRun, packBatch, sameRunKey, type RunKey } from '../core/chunk-codec.js';
import { sessionBatches } from '../main/gen/session-batches.js';
import { chainCrcRecords, CRC_RECORD_BYTES, CrcCursor } from '../streams/frame-crc-file.js';
import { ByteSink } from '../core/byte-sink.js';
import { metaRecords } from '../streams/frame-meta-file.js';
import { continuedBinaryRow, writeRowGaps, writeRowMembers } from '../streams/msgpack-row.js';
import { SliceEncoder } from './slice-encoder.js';
import { scanTrustedFrame, TRUSTED_READERS } from '../streams/trusted-frame-scanner.js';
import { GROUP_READERS, isMessageTypeAt, messageGroup } from '../streams/message-group.js';

/** Events of the generated warm-up session: enough shapes, little memory. */
const GEN_EVENTS = 2_000;
import type { SessionEvent, StorageRecord } from '../core/types.js';
import { sliceTask, type SliceTask } from './slice-protocol.js';
import type { Tier } from './optimization-status.js';
import type { WarmupWork } from './warmup-logs.js';

/**
 * Where the synthetic log pretends to sit, in seqs and bytes. Real tasks carry
 * offsets and seqs read as float64 from the frame index, which V8 holds as heap
 * numbers, not small integers; a warm-up on small integers only gets code that
 * deoptimizes ("not a Smi") on the first real page, mid-way through its one long
 * decode loop. Values past 2^31 teach the optimizer "any number" from the start.
 */
const SEQ_BASE = 2 ** 32;
const OFFSET_BASE = 2 ** 33;
/**
 * ...yet in a binary frame a real seq is a MessagePack uint16 or uint32 (a seq
 * past 2^32 is packed as a float64), and the seqs read from real frames are
 * small integers: the binary log is also decoded from a small seq base, whose
 * seqs cross 65,536 within it. With only the large base, the first real
 * binary page met those integer widths first and its transcoder deoptimized
 * mid-page (docs/benchmarks.md, "Binary vs JSONL sessions").
 */
const SMALL_SEQ_BASE = 64_000;

function syntheticEvents(seqBase: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  // Times mostly rise, sometimes step back (clock adjustments): negative gaps take their own
  // arithmetic paths in the scanners, and a path first met on a real page deoptimizes there.
  const push = (e: Record<string, unknown>) => out.push({ ...e, seq: seqBase + out.length, time: 1_700_000_000_000 + out.length * 7 - (out.length % 13 === 0 ? 40 : 0) } as SessionEvent);
  for (let turn = 1; turn <= 6; turn++) {
    push({ type: 'user/message', data: { content: [{ type: 'text', text: `question ${turn} with "quotes", \\ and ünïcödé` }] }, surfaceOp: 'append' });
    push({ type: 'assistant/chunk', data: { turn, step: 1, chunk: { type: 'block-start', index: 0, blockType: 'reasoning' } } });
    const first = out.length;
    for (let k = 0; k < 120; k++) push({ type: 'assistant/chunk', data: { turn, step: 1, chunk: { type: 'reasoning-delta', index: 0, text: ` think${k}` } } });
    // Every escape form JSON.stringify writes (\" \\ \n \t \uXXXX) and non-ASCII text, so no
    // branch of the string scanner is first met (and deoptimized) on a real page.
    const odd = [' "q"\n', ' tab\there', ' \u0001ctl', ' back\\slash', ' ünï', ' 😀'];
    for (let k = 0; k < 120; k++) push({ type: 'assistant/chunk', data: { turn, step: 1, chunk: { type: 'text-delta', index: 1, text: k % 9 === 0 ? (odd[k % odd.length] as string) : ` word${k}` } } });
    for (let k = 0; k < 40; k++) push({ type: 'assistant/chunk', data: { turn, step: 1, chunk: { type: 'tool-call-delta', index: 2, id: `call-${turn}`, name: 'bash', argumentsDelta: `{"k":${k}}` } } });
    // Tool calls without a name, and chunks that are not deltas (copied as events).
    for (let k = 0; k < 12; k++) push({ type: 'assistant/chunk', data: { turn, step: 1, chunk: { type: 'tool-call-delta', index: 3, id: `call-x${turn}`, argumentsDelta: `${k}` } } });
    // Deltas of interleaved blocks: runs of one, stored as delta events (chunkEvent's layout). A tail
    // page holds few, so without these the trusted delta scanner was first optimized on a later real
    // page, its compile (~30 ms) competing with the decode for the CPUs.
    for (let k = 0; k < 60; k++) {
      const index = 4 + (k % 2);
      const chunk = k % 3 === 0 ? { type: 'text-delta', index, text: ` w${k}` } : k % 3 === 1 ? { type: 'reasoning-delta', index, text: ` r${k}` } : { type: 'tool-call-delta', index, id: `c${k}`, ...(k % 4 === 0 ? { name: 'bash' } : {}), argumentsDelta: `${k}` };
      push({ type: 'assistant/chunk', data: { turn, step: 1, chunk } });
    }
    push({ type: 'assistant/chunk', data: { turn, step: 1, chunk: { type: 'block-end', index: 1, block: { type: 'text', text: 'word '.repeat(30) } } } });
    push({ type: 'assistant/chunk', data: { turn, step: 1, chunk: { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } } } });
    push({
      type: 'assistant/message',
      data: { turn, step: 1, message: { role: 'assistant', content: [{ type: 'text', text: 'answer '.repeat(20) }] }, usage: { inputTokens: 10, outputTokens: 5 } },
      sourceEventSeqs: Array.from({ length: out.length - first }, (_, i) => seqBase + first + i),
      surfaceOp: 'append',
    });
    push({ type: 'tool/result', data: { turn, step: 1, message: { content: [{ type: 'tool-result', isError: false, content: [{ type: 'text', text: 'ok\n'.repeat(30) }] }] }, meta: null, n: -1.5e3 }, surfaceOp: 'append' });
    // Messages ending in an array or an object (the group walk reads a message's members back from
    // its end), keys out of the writer's usual order, and `true` (every MessagePack literal).
    // (In a host's key order, seq and time after the type: push() puts them last.) The message
    // group walk from the end then meets an object and an array of objects first; the last event's
    // transcoded JSON outgrows the transcoder's reused buffer.
    const at = (k: number) => ({ seq: seqBase + out.length + k, time: 1_700_000_000_000 + out.length * 7 });
    for (const e of [
      { type: 'assistant/message', ...at(0), surfaceOp: 'append', sourceEventSeqs: [seqBase + out.length - 1], data: { turn, step: 2, done: true, message: { role: 'assistant', content: [] } } },
      { type: 'user/message', ...at(1), sourceEventSeqs: [seqBase + out.length], data: { content: [{ type: 'text', text: 'more' }] }, tags: [{ ok: true }] },
      ...(turn === 6 ? [{ type: 'tool/result', ...at(2), data: { turn, step: 2, output: 'y'.repeat(16_000) } }] : []),
    ])
      out.push(e as SessionEvent);
  }
  return out;
}

/**
 * A streamed answer in binary frames, as a tail page holds it: one block of
 * text deltas in short append batches, so nearly every frame is a writer's
 * row continuing the previous one's block (read from its row metadata,
 * msgpack-row.ts continuedBinaryRow). Tokens of every member width 1-12,
 * escapes and non-ASCII among them; gaps past 64 and 128 (each gap width
 * the row loop writes). With its checksum and metadata records, whole.
 */
export function binaryRowWork(rows = BINARY_ROWS): { bytes: Buffer; task: SliceTask } {
  const seqBase = SMALL_SEQ_BASE;
  const tokens = [' a', ' the', ' word', ' token', ' answer', ' streamed', ' stream\n', ' back\\slash', ' "q"', ' ünï', ' longer word', '.', ' 12345678'];
  const events: SessionEvent[] = [];
  let time = 1_700_000_000_000;
  for (let k = 0; k < rows * ROW_MEMBERS; k++) {
    time += k % 17 === 0 ? 200 : k % 5 === 0 ? 90 : k % 7;
    events.push({ type: 'assistant/chunk', seq: seqBase + k, time, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: tokens[k % tokens.length] as string } } } as SessionEvent);
  }
  const records: StorageRecord[] = [];
  for (let i = 0; i < events.length; i += ROW_MEMBERS) records.push(...packBatch(events.slice(i, i + ROW_MEMBERS)));
  const frames = records.map((r) => encodeFrame(r, 'binary'));
  const bytes = Buffer.concat(frames);
  const task = sliceTask('', 'warmup', OFFSET_BASE, OFFSET_BASE + bytes.length, seqBase, seqBase + events.length, seqBase, seqBase + events.length);
  const { crcs, meta } = projections(bytes, frames.map((f) => f.length));
  task.crcs = crcs;
  task.meta = meta;
  return { bytes, task };
}

/**
 * The writer's checksum and row-metadata records for frames laid out from
 * OFFSET_BASE, as a structured clone delivers them to a task: plain
 * Uint8Arrays, not Buffers.
 */
function projections(bytes: Buffer, lengths: number[]): { crcs: Uint8Array; meta: Uint8Array } {
  const crcRecords = chainCrcRecords(bytes, OFFSET_BASE, lengths, null).records;
  const frameCrcs = lengths.map((_, i) => crcRecords.readUInt32LE(i * CRC_RECORD_BYTES + 12));
  return { crcs: new Uint8Array(crcRecords), meta: new Uint8Array(metaRecords(bytes, lengths, frameCrcs, { chain: null, key: null }).records) };
}

/**
 * Rows of binaryRowWork's block: a few decodes of it give its per-row functions the calls V8
 * optimizes after. Short rows: those functions run once a row, and the member loop is optimized
 * by the rounds before (rows of 30 cost this warm-up ~40 ms of a worker's CPU, of 6 ~half).
 */
const BINARY_ROWS = 200;
const ROW_MEMBERS = 6;

/**
 * Frames of the synthetic log in both encodings (binary also from the small seq base), with the
 * tasks that decode them whole and cut: JSONL first, then binary (warmUpJit warms them in that
 * order, the binary ones only when the store has binary sessions).
 */
export function warmupWork(): { bytes: Buffer; tasks: SliceTask[] }[] {
  return [...jsonlWork(), ...binaryWork()];
}

/**
 * What the logs are made from, stated in the build's copy of them (warmup-logs.ts): a copy made
 * from another plan is not used. `maker`: raise it when syntheticEvents or workFrom change what
 * they make (test/warmup-logs checks the build's copy against logs made afresh).
 */
export const LOGS_PLAN = { maker: 1, seqBase: SEQ_BASE, smallSeqBase: SMALL_SEQ_BASE, genEvents: GEN_EVENTS, genTailEvents: 1_000, genSeed: 11, batch: 30 } as const;

/** The JSONL log's work: every store's sessions are written so (the writer's default format). */
export function jsonlWork(): { bytes: Buffer; tasks: SliceTask[] }[] {
  return workFrom(SEQ_BASE, ['jsonl']);
}

/** The binary logs' work (from both seq bases): only a store with binary sessions needs it. */
export function binaryWork(): { bytes: Buffer; tasks: SliceTask[] }[] {
  return [...workFrom(SEQ_BASE, ['binary']), ...workFrom(SMALL_SEQ_BASE, ['binary'])];
}

function workFrom(seqBase: number, encodings: readonly ('jsonl' | 'binary')[]): { bytes: Buffer; tasks: SliceTask[] }[] {
  const events = syntheticEvents(seqBase);
  const records: StorageRecord[] = [];
  // Append batches of 30 events, as a host's write window stores long runs.
  for (let i = 0; i < events.length; i += LOGS_PLAN.batch) records.push(...packBatch(events.slice(i, i + LOGS_PLAN.batch)));
  // Plus a small generated session in a real host's batch shapes (the generator is pure).
  const gen = sessionBatches({ id: 'warmup', events: LOGS_PLAN.genEvents, tailEvents: LOGS_PLAN.genTailEvents, seed: LOGS_PLAN.genSeed });
  for (const batch of gen.batches) records.push(...packBatch(batch.map((e: SessionEvent) => ({ ...e, seq: seqBase + e.seq + events.length }))));
  return encodings.map((encoding) => {
    // The frames alone: the writer's entry lines and frame index (encodeRecords) cost each worker
    // ~30 ms of its start and a compile of code no task runs, and no warm-up task reads them.
    const frames = records.map((r) => encodeFrame(r, encoding));
    const enc = { bytes: Buffer.concat(frames), lengths: frames.map((f) => f.length) };
    const n = seqBase + events.length + GEN_EVENTS;
    const task = (fromSeq: number, toSeq: number, crcs: Uint8Array | undefined, meta: Uint8Array | undefined): SliceTask => {
      const t = sliceTask('', 'warmup', OFFSET_BASE, OFFSET_BASE + enc.bytes.length, seqBase, n, fromSeq, toSeq);
      t.crcs = crcs;
      t.meta = meta;
      return t;
    };
    // With the frame-checksum records and row metadata (the writer's own frames: trusted path, rows
    // read from their metadata), with the checksums only, and without (full validation).
    const { crcs, meta } = projections(enc.bytes, enc.lengths);
    return {
      bytes: enc.bytes,
      tasks: [task(seqBase, n, crcs, meta), task(seqBase + 17, n - 23, crcs, meta), task(seqBase, n, crcs, undefined), task(seqBase, n, undefined, undefined), task(seqBase + 17, n - 23, undefined, undefined)],
    };
  });
}

/**
 * Run keys reach the run-continuation check in many object shapes (keys from
 * each scanner, open runs, with and without id and name). Optimized code that
 * saw only some of them deoptimizes at the first new shape, which on a real
 * page came mid-way through its decode loop. Comparing keys of more shapes than
 * V8 keeps per site (four) first makes the site generic: it never deoptimizes
 * on a shape, and it runs once per block, where the cost does not show.
 * Measured: cold 5M tail page, median of 9 fresh processes, 38 ms with it,
 * 55 ms without.
 */
function generalizeKeyChecks(): void {
  const shapes: RunKey[] = [
    { kind: 'text', turn: 1, step: 1, index: 0 },
    { kind: 'tool', turn: 1, step: 1, index: 0, id: 'a' },
    { kind: 'tool', turn: 1, step: 1, index: 0, id: 'a', name: 'b' },
    { index: 0, kind: 'text', step: 1, turn: 1 },
    { turn: 1, kind: 'reasoning', index: 0, step: 1 },
    { step: 1, index: 0, turn: 1, kind: 'tool', id: 'a' },
  ];
  for (let r = 0; r < 200; r++) {
    for (const a of shapes) {
      for (const b of shapes) {
        const run = { ...a, seq0: 0, time0: 0, lastSeq: 0, lastTime: 0.5, n: 1 };
        sameRunKey(a, b);
        continuesRun(run, b, 1, 1.5);
      }
    }
  }
}

/**
 * Passes over a log (a round is one pass over each log in it) when V8 cannot say whether the
 * decode loop is optimized: seven rounds over three logs, as before the binary logs became
 * optional, so a JSONL-only warm-up does as much decoding in more, shorter rounds.
 */
const PASSES = 21;
/** Rounds before asking: the first gathers the loop's feedback over every frame shape, and V8 marks the loop for optimization only after feedback stable for a while. */
const MIN_ROUNDS = 2;
/**
 * Passes at most when V8 says (twelve rounds over three logs: a loaded machine's helper threads
 * may leave the loop marked but not yet compiled for a while, and twelve JSONL-only rounds, a third
 * of the work, ended before its compile did in a test run at load 8), and the wall-time bounds of
 * each phase (a worker still starts on a machine so loaded that a round takes seconds).
 */
const MAX_PASSES = 36;
const BUDGET_MS = 1000;
const GUIDED_BUDGET_MS = 3000;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Decode the synthetic logs until the page path's functions are optimized:
 * the JSONL log, and the binary logs when `binary` says the store has binary
 * sessions (`binary(false)`: the answer if there is one yet, else null;
 * `binary(true)`: waits for it). An answer given before a round adds the
 * binary logs to the rounds; one given only after them, a second phase. Each phase runs round by round until
 * `tier` (V8's answer for the decode loop, optimization-status.ts) says the
 * loop runs optimized code, pausing while its compile runs on a helper
 * thread (another round would only compete with it for the CPU); without an
 * answer, a fixed number of rounds; within `budgetMs` of wall time.
 * Returns the rounds run (both phases).
 *
 * Why two phases and the second only on demand: the binary logs were two of
 * the three logs every round decoded, and with their own scanners and
 * transcoder (msgpackToJson, binaryFrame, the binary row writers) compiled
 * on V8's helper threads they were about half of a start's CPU before ready
 * (~1 s of 2.9 s) and ~0.5 s of its wall time, in every start, for stores
 * that hold no binary session (docs/benchmarks.md, "start (ninth session)").
 * A second phase deoptimizes the loop once (the first binary frame takes a
 * branch its code never saw) and runs until V8 has compiled it again, now
 * with both formats' feedback: that costs more than binary logs in the rounds
 * from the start (measured), so an answer known early is used early.
 */
export async function warmUpJit(
  decode: (task: SliceTask, bytes: Buffer) => unknown,
  tier: () => Tier | null = () => null,
  budgetMs?: number,
  tierOfHelper?: (f: (...args: never[]) => unknown) => Tier | null,
  binary: (wait: boolean) => boolean | null = () => true,
  built: (kind: 'jsonl' | 'binary') => WarmupWork[] | null = () => null,
  optimize: () => boolean = () => false,
  optimizeHelper: (f: (...args: never[]) => unknown) => boolean = () => false,
): Promise<number> {
  generalizeKeyChecks();
  // The build's copy of the logs when it is there and checks out (warmup-logs.ts), else made here.
  const binaryLogs = () => built('binary') ?? binaryWork();
  const jsonl = built('jsonl') ?? jsonlWork();
  // Known before a round (a store that writes binary, the demo, an operator's setting, or a
  // catalog listed by then): the binary logs join the rounds, so one compile of the loop has
  // both formats' feedback, as when every worker warmed both.
  let withBinary = false;
  const work = [...jsonl];
  const join = () => {
    if (withBinary || binary(false) !== true) return false;
    withBinary = true;
    work.push(...binaryLogs());
    return true;
  };
  let rounds = await roundsUntilOptimized(work, decode, tier, budgetMs, join, optimize);
  // (A caller that gave the loop a wall-time bound of its own gives the helpers the same.)
  if (tierOfHelper !== undefined) {
    await warmUpHelpers(jsonl[0] as { bytes: Buffer; tasks: SliceTask[] }, tierOfHelper, budgetMs ?? HELPER_BUDGET_MS, optimizeHelper);
    await warmUpFrameReaders((jsonl[0] as { bytes: Buffer }).bytes, tierOfHelper, budgetMs ?? HELPER_BUDGET_MS, optimizeHelper);
    await warmUpJsonlRows(decode, jsonl[0] as { bytes: Buffer; tasks: SliceTask[] }, tierOfHelper, budgetMs ?? HELPER_BUDGET_MS, optimizeHelper);
  }
  if (!withBinary) {
    // Told only now, or not at all: asked (and waited for) once.
    if (binary(true) !== true) return rounds;
    rounds += await roundsUntilOptimized(binaryLogs(), decode, tier, budgetMs, undefined, optimize);
  }
  if (tierOfHelper !== undefined) await warmUpBinaryRows(decode, tierOfHelper, budgetMs ?? HELPER_BUDGET_MS, optimizeHelper);
  return rounds;
}

/**
 * Rounds over `work` until V8 says the loop is optimized (or the fixed rounds without an
 * answer), within the budget. `beforeRound` may add to `work` (and says so): the loop is then
 * asked about only after MIN_ROUNDS more, so code compiled from the feedback before is not
 * taken for the end (its first new frame deoptimizes it). `optimize`: asks V8 to optimize the
 * loop at its next call (optimization-status.ts optimizeOnNextCall), used once those rounds have
 * run and V8 has not marked it itself: the next round then runs optimized code, instead of up to
 * 16 more rounds of the same log waiting for V8's own marking (30-60 ms each at start-up).
 */
async function roundsUntilOptimized(
  work: { bytes: Buffer; tasks: SliceTask[] }[],
  decode: (task: SliceTask, bytes: Buffer) => unknown,
  tier: () => Tier | null,
  budgetMs: number | undefined,
  beforeRound: () => boolean = () => false,
  optimize: () => boolean = () => false,
): Promise<number> {
  const t0 = performance.now();
  let guided = tier() !== null;
  const budget = budgetMs ?? (guided ? GUIDED_BUDGET_MS : BUDGET_MS);
  let rounds = 0;
  let passes = 0;
  let ask = MIN_ROUNDS;
  while ((guided ? passes < MAX_PASSES : passes < PASSES) && performance.now() - t0 < budget) {
    if (beforeRound()) ask = rounds + MIN_ROUNDS;
    if (guided && rounds >= ask) {
      const t = tier();
      if (t === 'optimized') break;
      if (t === 'compiling') {
        await pause(2);
        continue;
      }
      guided = t !== null;
      // Not marked by V8 yet: asked for now (compiled at the next round's first call).
      if (guided) optimize();
    }
    for (const w of work) for (const t of w.tasks) decode(t, w.bytes);
    rounds++;
    passes += work.length;
  }
  return rounds;
}

/** Decodes of binaryRowWork between two looks at the tiers, and at most. */
const BINARY_DECODES_PER_LOOK = 4;
const MAX_BINARY_DECODES = 40;

/**
 * The per-row functions of a binary session's page: decoded until V8 says
 * each is optimized (or MAX_BINARY_DECODES, or `budgetMs`). The synthetic
 * logs hold a few hundred rows, enough for the decode loop; the page-path
 * warm-up (warmup/page-path-warmup.ts) then serves pages of a JSONL
 * session with a 20,000-delta message, which makes the JSONL row readers
 * hot and not these. So a fresh process's first binary page ran them
 * unoptimized and compiled them beside its decode (`--trace-opt`:
 * continuedBinaryRow, wholeRow, reserve, continuingRow, in both workers),
 * its decode 2-3x JSONL's (docs/benchmarks.md, "Issue 12, binary rows'
 * members and gaps by table"). Returns whether all are optimized (or their compiles under way).
 */
export async function warmUpBinaryRows(
  decode: (task: SliceTask, bytes: Buffer) => unknown,
  tierOf: (f: (...args: never[]) => unknown) => Tier | null,
  budgetMs = HELPER_BUDGET_MS,
  optimize: (f: (...args: never[]) => unknown) => boolean = () => false,
): Promise<boolean> {
  const w = binaryRowWork();
  const helpers = [continuedBinaryRow, SliceEncoder.prototype.wholeRow, CrcCursor.prototype.continuingRow, ByteSink.prototype.reserve, writeRowMembers, writeRowGaps] as ((...args: never[]) => unknown)[];
  const round = () => {
    for (let k = 0; k < BINARY_DECODES_PER_LOOK; k++) decode(w.task, w.bytes);
  };
  return roundsUntilCompiled(helpers, round, tierOf, budgetMs, optimize, Math.ceil(MAX_BINARY_DECODES / BINARY_DECODES_PER_LOOK));
}

/**
 * After a first look: the helpers V8 has not marked yet are asked to be optimized at their
 * next call (optimization-status.ts optimizeOnNextCall), so the next calls compile them, from
 * the feedback of the calls so far, instead of more looks until V8 marks them (35-130 ms of a
 * worker's start, traced: docs/benchmarks.md, "ready (eleventh session)").
 */
/**
 * The warm-ups' one loop: `round` (calls of `fns` with the receivers and arguments real tasks
 * pass), then a look at V8's tier of each, until all are optimized or being compiled (true), V8
 * cannot say (false), or `budgetMs` or `maxRounds` runs out (false). After each look the compile of
 * those still not optimized is asked for (`optimize`), once their feedback is in.
 */
async function roundsUntilCompiled(
  fns: readonly ((...args: never[]) => unknown)[],
  round: () => void,
  tierOf: (f: (...args: never[]) => unknown) => Tier | null,
  budgetMs: number,
  optimize: (f: (...args: never[]) => unknown) => boolean,
  maxRounds = Infinity,
): Promise<boolean> {
  const t0 = performance.now();
  for (let n = 0; n < maxRounds; n++) {
    round();
    const tiers = fns.map((f) => tierOf(f));
    if (tiers.some((x) => x === null)) return false;
    if (tiers.every(compiledOrCompiling)) return true;
    if (performance.now() - t0 > budgetMs) return false;
    askForCompiles(fns, tiers, optimize);
    if (tiers.includes('compiling')) await pause(2);
  }
  return false;
}

function askForCompiles(helpers: readonly ((...args: never[]) => unknown)[], tiers: readonly (Tier | null)[], optimize: (f: (...args: never[]) => unknown) => boolean): void {
  helpers.forEach((f, i) => {
    if (tiers[i] === 'not-optimized') optimize(f);
  });
}

/**
 * Done for a helper: optimized, or its compile under way on a helper thread, which ends and is
 * installed (at this thread's next JS) without another call of it. Waiting here for the compile
 * to end, queued behind the other isolates' on a loaded machine, kept a worker from ready 10-140 ms
 * after its loop was optimized (docs/benchmarks.md, "ready (tenth session)").
 */
const compiledOrCompiling = (t: Tier | null) => t === 'optimized' || t === 'compiling';

/** Decodes of the JSONL log between two looks at its rows' writer's tier, and at most. */
const JSONL_DECODES_PER_LOOK = 2;
const MAX_JSONL_DECODES = 12;

/**
 * The encoder's writer of a JSONL row (SliceEncoder#rawRow: every row frame of a page), which
 * the decode loop may or may not inline: the rounds stop once the loop is optimized, and in 2 of
 * 13 traced fresh processes V8 compiled rawRow during the first tail page, on a helper thread
 * beside the two workers' decode (8-12 ms; docs/benchmarks.md, "ready, second round (eleventh
 * session)"). Looked at first (no decode when it is optimized or being compiled already); else
 * asked for (the rounds gave it its feedback) and the log's trusted task decoded until V8 says
 * it is compiled or compiling. A writer asked for and still not compiled at the next look is taken as inlined
 * (the loop's optimized code never calls it, so no call would compile it): done. Returns whether
 * the look found it compiled, compiling or inlined, within `budgetMs`.
 */
export async function warmUpJsonlRows(
  decode: (task: SliceTask, bytes: Buffer) => unknown,
  w: { bytes: Buffer; tasks: SliceTask[] },
  tierOf: (f: (...args: never[]) => unknown) => Tier | null,
  budgetMs = HELPER_BUDGET_MS,
  optimize: (f: (...args: never[]) => unknown) => boolean = () => false,
): Promise<boolean> {
  const task = w.tasks.find((x) => x.crcs !== undefined && x.meta !== undefined) as SliceTask;
  const writers = [SliceEncoder.prototype.rawRow] as ((...args: never[]) => unknown)[];
  const asked = new Set<(...args: never[]) => unknown>();
  const t0 = performance.now();
  for (let n = 0; ; ) {
    const tiers = writers.map((f) => tierOf(f));
    if (tiers.some((x) => x === null)) return false;
    if (tiers.every((t, i) => compiledOrCompiling(t) || asked.has(writers[i] as (...args: never[]) => unknown))) return true;
    if (n >= MAX_JSONL_DECODES || performance.now() - t0 > budgetMs) return false;
    // (Its feedback is the rounds' own: every row frame of the log called it.)
    writers.forEach((f, i) => tiers[i] === 'not-optimized' && optimize(f) && asked.add(f));
    if (tiers.includes('compiling')) await pause(2);
    for (let k = 0; k < JSONL_DECODES_PER_LOOK; k++, n++) decode(task, w.bytes);
  }
}

/** Passes over the JSONL log's frames between two looks at the frame readers' tiers. */
const FRAME_READER_PASSES = 4;

/**
 * The per-frame readers the decode loop calls without inlining them: the
 * trusted layout's scanner (scanTrustedFrame: every frame that does not
 * continue the previous one's row, and through it the row, delta and tool
 * identity readers; the delta events' reader, scanTrustedDelta, is compiled
 * on its own: TRUSTED_READERS), the message type check and the message group walk
 * (messageGroup's keysGroup: every message of a page, for the plan's claim,
 * core/frame-claim.ts). The rounds stop once the loop is optimized, and a
 * tail page's messages are few but long, so in 4 of 6 traced fresh
 * processes V8 compiled keysGroup, isMessageTypeAt or scanTrustedFrame
 * during the first real page (`--trace-opt`), on a helper thread beside
 * the two workers' decode: ~6 ms of a third thread's CPU on a two-core
 * machine, the cold tail page's gap to 60c6f60 (docs/benchmarks.md, "same
 * (eleventh session)"). Called here over the JSONL log's own frames (each
 * a writer's frame, as a page's trusted frames are) until V8 says each is
 * optimized or being compiled, within `budgetMs`. Returns whether all are.
 */
export async function warmUpFrameReaders(
  bytes: Buffer,
  tierOf: (f: (...args: never[]) => unknown) => Tier | null,
  budgetMs = HELPER_BUDGET_MS,
  optimize: (f: (...args: never[]) => unknown) => boolean = () => false,
): Promise<boolean> {
  const starts: number[] = [];
  for (let at = 0; at < bytes.length; ) {
    const nl = bytes.indexOf(0x0a, at);
    if (nl < 0) break;
    if (bytes[at] === 0x7b) starts.push(at, nl);
    at = nl + 1;
  }
  const readers = [...TRUSTED_READERS, isMessageTypeAt, ...GROUP_READERS] as ((...args: never[]) => unknown)[];
  const round = () => {
    for (let p = 0; p < FRAME_READER_PASSES; p++) {
      for (let k = 0; k < starts.length; k += 2) {
        const start = starts[k] as number;
        const end = starts[k + 1] as number;
        scanTrustedFrame(bytes, start, end);
        // (Seqs past 2^31, as the decode loop's are: SEQ_BASE.)
        if (isMessageTypeAt(bytes, start + 9)) messageGroup(bytes, start, end, SEQ_BASE + k, true);
      }
    }
  };
  return roundsUntilCompiled(readers, round, tierOf, budgetMs, optimize);
}

/** Calls of each helper between two looks at its tier, and the wall-time bound of the whole. */
const HELPER_CALLS = 2_000;
const HELPER_BUDGET_MS = 200;

/**
 * The small methods the decode loop calls per frame or per run without
 * inlining them (TurboFan spends its inlining budget on the large loop):
 * the row metadata's readers and a sink taking another's bytes. The
 * warm-up's rounds stop once the loop is optimized, when these have run
 * too few times to be optimized themselves; the first real page (thousands
 * of frames) then made them hot, and V8 compiled them on a helper thread
 * beside the decode: 4-8 ms of a third thread's CPU on a two-core machine,
 * in 3 of 4 traced cold tail pages (docs/benchmarks.md, issue 13). Called
 * here, on the warm-up's own cursor and sinks (the receivers and arguments
 * real tasks pass), until V8 says each is optimized or being compiled, within
 * HELPER_BUDGET_MS. Returns whether all are.
 */
export async function warmUpHelpers(
  w: { bytes: Buffer; tasks: SliceTask[] },
  tierOf: (f: (...args: never[]) => unknown) => Tier | null,
  budgetMs = HELPER_BUDGET_MS,
  optimize: (f: (...args: never[]) => unknown) => boolean = () => false,
): Promise<boolean> {
  const t = w.tasks.find((x) => x.crcs !== undefined && x.meta !== undefined) as SliceTask;
  const cursor = new CrcCursor(t.crcs, w.bytes, t.start, t.meta);
  const frames = Math.max(1, (t.crcs as Uint8Array).length / CRC_RECORD_BYTES);
  // Sinks in one arena, as a task places them: a long copy within it, and a short one by bytes.
  const arena = Buffer.allocUnsafe(4096);
  const to = new ByteSink();
  const long = new ByteSink();
  const short = new ByteSink();
  const source = arena.subarray(0, 0);
  to.place(arena, 0, 2048, source);
  long.place(arena, 2048, 1024, source);
  short.place(arena, 3072, 1024, source);
  long.bytes(w.bytes, 0, 200);
  short.bytes(w.bytes, 0, 20);
  const helpers = [cursor.metaTime0, cursor.metaDtSum, cursor.metaDtStart, cursor.metaDtEnd, cursor.metaCount, to.sink];
  const round = () => {
    for (let k = 0; k < HELPER_CALLS; k++) {
      const i = k % frames;
      cursor.metaTime0(i);
      cursor.metaDtSum(i);
      cursor.metaDtStart(i);
      cursor.metaDtEnd(i);
      cursor.metaCount(i);
      to.sink(long);
      to.sink(short);
      to.clear();
    }
  };
  return roundsUntilCompiled(helpers, round, tierOf, budgetMs, optimize);
}
