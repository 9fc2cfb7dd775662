/**
 * Piscina task: decode one slice of a page. Reads the slice's byte range
 * `{session, start, end}` with one positional read (or takes the bytes the
 * task brought), decodes only those frames (JSONL or binary, checksum
 * verified, rows validated exactly), checks seq continuity against the entry
 * sidecar's plan, cuts rows at the page edges and hands back the packed,
 * serialized slice as a moved ArrayBuffer.
 *
 * JSONL frames take byte-scanning fast paths: frames that match the
 * writer's checksums the leanest (trusted-frame-scanner.ts), others the
 * validating scanners (jsonl-row-scanner.ts, jsonl-event-scanner.ts).
 * Binary frames are transcoded to the same JSON bytes and read alike
 * (binary-frame.ts).
 * Everything else, and any frame the scanners decline, is decoded in full.
 */
import type { Piscina as PiscinaClass } from 'piscina';
import { requireCjs } from './cjs.js';
import { readSlice } from '../storage/worker-reads.js';
import { decodeRecordFrame, frameBounds } from '../streams/frame-codec.js';
import { scanJsonlRow } from '../streams/jsonl-row-scanner.js';
import { continuedRow, OTHER_LAYOUT, scanTrustedFrame, TRUSTED_EVENT, TRUSTED_READERS, TRUSTED_ROW, trustedEventSeq, trustedRow } from '../streams/trusted-frame-scanner.js';
import { scanJsonlEvent, type RawEvent } from '../streams/jsonl-event-scanner.js';
import { CHANGED, CrcCursor } from '../streams/frame-crc-file.js';
import type { RunKey } from '../core/chunk-codec.js';
import { ARENA_HEADER_ROOM, newEncoderSinks, SliceEncoder, type EncoderSinks } from './slice-encoder.js';
import { ByteSink } from '../core/byte-sink.js';
import { stringEnd } from '../core/json-bytes.js';
import { collectGarbage } from './full-gc.js';
import { collectWhenGrown, heapCollected } from './heap-bound.js';
import { afterLoopTurn } from './loop-turn.js';
import { optimizeOnNextCall, tierOf, type Tier } from './optimization-status.js';
import { CODING_NONE, decodeTask, sliceTask, type BatchResult, type CompressTask, type PageCoder, type SliceBatch, type SliceFault, type SliceResult, type SliceTask } from './slice-protocol.js';
import { codeBytes, codeSlice, pageCoder } from './slice-compress.js';
import { addClaim, frameClaim, NO_CLAIM } from '../core/frame-claim.js';
import { knownDigest, rememberDigest, UNKNOWN_DIGEST } from './claim-memo.js';
import { GROUP_READERS, isMessageTypeAt, messageGroup } from '../streams/message-group.js';
import { binary, BINARY_READ, BINARY_WRONG_SEQ, binaryFrame } from './binary-frame.js';
import { whole, WHOLE_BAD, WHOLE_WRONG_SEQ, wholeFrame } from './whole-frame.js';

const { Piscina, workerData } = requireCjs('piscina') as { Piscina: typeof PiscinaClass; workerData: unknown };

/** The sinks every task of this worker builds in. */
const sinks = newEncoderSinks();

/**
 * The worker's arena, reused from task to task (fresh memory costs a page
 * fault per 4 KB on first touch): the slice's bytes, then the sinks'
 * regions, so every copy from a frame into a sink is a copyWithin
 * (core/byte-sink.ts), then room for a result header. Room is reserved
 * generously: pages never touched cost no memory, and a sink that outgrows
 * its region moves out.
 *
 * A large slice's result is a new arena itself (slice-encoder.ts finish):
 * copying megabytes into a fresh buffer cost a page fault per 4 KB and a
 * pass over the bytes. The arena then goes with the result, and the main
 * thread hands consumed results back with later tasks (`task.arena`).
 * Once the worker holds an arena, a large result is copied instead into a
 * buffer of its size that goes round (runPageTask).
 */
let arena = Buffer.allocUnsafe(0);
/** A consumed result smaller than the arena, handed back: the next large result is copied into it (runPageTask). */
let spareOut: ArrayBuffer | null = null;
/**
 * Large slices from this size are copied out once the worker holds an arena (runPageTask);
 * smaller ones (a short page's, the page-path warm-up's) still go out as their small arena,
 * so an idle worker holds none of it (issue 12's idle memory).
 */
const COPY_OUT_BYTES = 1024 * 1024;
/** A handed-back buffer is kept for results (spareOut) only up to this many times the slice's bytes (a result is about 1x). */
const SPARE_OUT_MAX = 2;
/** No spare yet: the large result's copy gets a fresh buffer with room to be used again. */
const NO_SPARE = new ArrayBuffer(0);
/** An arena larger than this, or a sink that grew out of it past KEEP_BYTES, is dropped after a task, so one huge page does not pin its memory. */
const KEEP_ARENA_BYTES = 64 * 1024 * 1024;
const KEEP_BYTES = 8 * 1024 * 1024;

/** Room for a slice of `len` bytes and the sinks that decode it: the slice's region (valid until the next task). */
export function arenaFor(len: number): Buffer {
  const need = arenaBytes(len);
  if (arena.length < need) arena = takeFirstArena(len, need) ?? Buffer.allocUnsafeSlow(need);
  // (An arena replaced since, by a handed-back one or a larger one, is not it.)
  if (touchedArena !== null && arena !== touchedArena) touchedArena = null;
  // The first arena's sinks go where its warm-up touched them (prepareFirstArena: laid out for
  // the read bytes it was made for, which a shorter slice leaves partly unused); any other
  // arena's right after the slice.
  const laidOutFor = arena === touchedArena ? Math.max(len, touchedFor) : len;
  const { body, dt, members, headDt, headMembers } = arenaLayout(laidOutFor);
  const slice = arena.subarray(0, len);
  let at = laidOutFor;
  const place = (sink: ByteSink, room: number) => {
    sink.place(arena, at, room, slice);
    at += room;
  };
  place(sinks.body, body);
  place(sinks.dt, dt);
  place(sinks.members, members);
  place(sinks.headDt, headDt);
  place(sinks.headMembers, headMembers);
  return slice;
}

/** The bytes of an arena for a slice of `len` bytes (as arenaFor sizes one). */
export function arenaBytes(len: number): number {
  return arenaLayout(len).need;
}

/** The arena's regions for a slice of `len` bytes: the slice's own first, then each sink's room; `need` in all. */
function arenaLayout(len: number): { body: number; dt: number; members: number; headDt: number; headMembers: number; need: number } {
  const body = len + 4096;
  // A binary row's gaps take two or three bytes each as JSON where they took one: half the slice.
  const dt = (len >>> 1) + 1024;
  const members = len + 1024;
  // The head run (open at the slice's start, settled inside it) is short but for rare
  // slices; those move it out. Room reserved, even untouched, counts in V8's external
  // memory, whose growth schedules garbage collections.
  const headDt = (len >>> 6) + 1024;
  const headMembers = (len >>> 4) + 4096;
  return { body, dt, members, headDt, headMembers, need: len + body + dt + members + headDt + headMembers + ARENA_HEADER_ROOM };
}

/**
 * An arena for a slice of up to `readBytes` bytes whose read region (its first `readBytes`) and
 * sinks' first parts the warm-up touched (prepareFirstArena), for the first large slice: reading
 * a slice into fresh memory cost a page fault per 4 KiB, ~775 a worker on the 5M tail page, on
 * the cold page's critical path (docs/benchmarks.md, "tail (seventeenth session)"), and writing
 * its sections ~430-600 more ("tailcpu (eighteenth session)"). Null once taken, or when none.
 */
let firstArena: typeof arena | null = null;
/** The first arena once taken, while it is this worker's arena, and the read bytes it was laid out and touched for. */
let touchedArena: typeof arena | null = null;
let touchedFor = 0;

/**
 * How much of each sink's region the warm-up touches in the first arena, as a share of its read
 * bytes: the first pages of what a long session's tail slice writes in each (on the 5M session's
 * tail page, slices of 2.9-3.4 MB wrote body 0-20% of their bytes, gaps 13-16%, members 42-54%).
 * Their faults came after the read's (~430-600 a worker, on the cold page's critical path); each
 * share is resident while idle, so the shares are below what such a slice writes (issue 12's idle
 * bound), not above: the rest of a sink's writes fault as before.
 */
const TOUCHED_SHARE = { body: 0.1, dt: 0.1, members: 0.4 } as const;

/**
 * Allocate and touch the first arena (the JIT warm-up's last step, before ready): its read region
 * and the first part of the body, gaps and members sinks' regions (TOUCHED_SHARE) are touched,
 * so only they are resident; the rest of the sinks' room is reserved, as in any arena.
 */
export function prepareFirstArena(readBytes: number): void {
  firstArena = touchedArena = null;
  touchedFor = 0;
  if (!(readBytes > 0)) return;
  const a = Buffer.allocUnsafeSlow(arenaBytes(readBytes));
  a.fill(0, 0, readBytes);
  const { body, dt } = arenaLayout(readBytes);
  const touch = (at: number, share: number) => a.fill(0, at, at + Math.floor(share * readBytes));
  touch(readBytes, TOUCHED_SHARE.body);
  touch(readBytes + body, TOUCHED_SHARE.dt);
  touch(readBytes + body + dt, TOUCHED_SHARE.members);
  firstArena = a;
  touchedFor = readBytes;
}

/**
 * The first arena, for a slice of `len` bytes that needs `need`, when it is still there, fits, and
 * the slice is large (one that would go out as its arena: a small page's would take the whole
 * reserve to the main thread). Given once: it then goes with the result, or stays as the arena.
 */
function takeFirstArena(len: number, need: number): typeof arena | null {
  const a = firstArena;
  if (a === null || len < COPY_OUT_BYTES || a.length < need) return null;
  firstArena = null;
  touchedArena = a;
  return a;
}

/** Let go of the arena (it went out as a result, or is too large to keep): the sinks keep small buffers of their own until the next task. */
function dropArena(): void {
  if (arena === touchedArena) touchedArena = null;
  arena = Buffer.allocUnsafe(0);
  for (const s of Object.values(sinks)) s.release();
}

/** The slice's bytes in the arena: read from its source, or copied from the task when it brought them. */
function sliceBytes(task: SliceTask): Buffer {
  const buf = arenaFor(task.end - task.start);
  if (task.bytes === undefined) return readSlice(task.source, task.session, task.start, task.end, buf, task.incarnation);
  buf.set(task.bytes.subarray(0, buf.length));
  return task.bytes.length >= buf.length ? buf : buf.subarray(0, task.bytes.length);
}

/**
 * Decode `bytes` as the worker does, from its arena (the JIT warm-up, and
 * tests of this path); `inPlace`: let the result be the arena itself.
 */
export function decodeInArena(task: SliceTask, bytes: Uint8Array, inPlace = false): SliceResult {
  const buf = arenaFor(bytes.length);
  buf.set(bytes);
  const result = decodeSlice(decodeTask(task), buf, 0, sinks, inPlace ? arena : null);
  keepSmallCursor();
  if (result === arena.buffer) dropArena();
  return result;
}

const NO_BYTES = new Uint8Array(0);

/**
 * A checksum cursor over nothing, as its class's kept instance (core/shape-keeper.ts)
 * in place of the task's, which holds the slice's checksum records (17 bytes a frame).
 */
function keepSmallCursor(): void {
  new CrcCursor(undefined, NO_BYTES, 0);
}

function corrupt(offset: number, fromSeq: number, toSeq: number, why: string, kind: SliceFault['error']['kind'] = 'frame'): SliceFault {
  return { error: { code: 'corrupt_range', message: `events [${fromSeq}, ${toSeq}) cannot be read: ${why}`, reason: why, offset, fromSeq, toSeq, kind } };
}

/** Where decodeSlice is (the frame it reads), for a fault the decoder itself raised. */
let atOffset = 0;
let atSeq = 0;

const BRACE = 0x7b;
const NEWLINE = 0x0a;
const MAGIC0 = 0x53; // 'S' of SPF2

/** `resultArena`: the buffer `into` was placed in, when the result may be that buffer itself (see arenaFor). */
/** `code`: the whole page's coder (slice-compress.ts pageCoder), which the encoder uses as it writes the page. */
export function decodeSlice(task: SliceTask, bytes: Buffer, readMs = 0, into: EncoderSinks = newEncoderSinks(), resultArena: Buffer | null = null, out: ArrayBuffer | null = null, code: PageCoder | null = pageCoder(task)): SliceResult {
  const enc = new SliceEncoder(into, task.pageHead);
  enc.bytesRead = bytes.length;
  const crcs = new CrcCursor(task.crcs, bytes, task.start, task.meta);
  // The block of the previous frame when it was a trusted row (or a delta event read as one):
  // a row its metadata marks as continuing that block is read from the metadata, not scanned.
  let prevKey: RunKey | null = null;
  let pos = 0;
  let seq = task.firstSeq;
  // The plan's claims about these frames, as found in them (core/frame-claim.ts); or, when these
  // very bytes gave them before (claim-memo.ts: pinned by a CRC over the whole slice computed just
  // now), as they were found then.
  const known = knownDigest(task.start, task.end, task.firstSeq, task.endSeq, crcs.seed, crcs.pin);
  const hash = known === UNKNOWN_DIGEST;
  let claims = hash ? 0 : known;
  const len = task.end - task.start;
  if (bytes.length < len) return corrupt(task.start + bytes.length, seq, task.endSeq, `log ends at byte ${task.start + bytes.length}, before the indexed end ${task.end}`);
  while (pos < len) {
    const offset = task.start + pos;
    atOffset = offset;
    atSeq = seq;
    const block = prevKey;
    prevKey = null;
    let length: number;
    if (bytes[pos] === BRACE) {
      // Bytes the writer wrote and nobody changed since need no per-byte validation,
      // and their length is known without looking for the newline.
      length = crcs.trustedLength(offset);
      // Its bytes are proven not the writer's: a changed byte is never served, even one that still parses.
      if (length === CHANGED) {
        // Named precisely when it no longer decodes either.
        const f = decodeRecordFrame(bytes, pos, offset, len);
        return corrupt(offset, seq, task.endSeq, f.ok ? 'the frame does not match the checksum its writer recorded' : f.message);
      }
      const trusted = length > 0 && pos + length <= len && bytes[pos + length - 1] === NEWLINE;
      if (!trusted) {
        const b = frameBounds(bytes, pos, offset, len);
        if (!b.ok) return corrupt(offset, seq, task.endSeq, b.message);
        length = b.length;
      }
      // The writer's own layout (trusted-frame-scanner.ts), else the general scanners.
      let layout = OTHER_LAYOUT;
      if (trusted) {
        const m = block === null ? -1 : crcs.continuingRow();
        const known = m >= 0 && continuedRow(bytes, pos, pos + length - 1, block as RunKey, crcs.metaTime0(m), crcs.metaDtSum(m), crcs.metaCount(m), crcs.metaDtStart(m), crcs.metaDtEnd(m));
        layout = known ? TRUSTED_ROW : scanTrustedFrame(bytes, pos, pos + length - 1);
        if (layout === TRUSTED_ROW) prevKey = trustedRow.key;
      }
      const raw = layout === TRUSTED_ROW ? trustedRow : layout === OTHER_LAYOUT ? scanJsonlRow(bytes, pos, pos + length - 1, trusted) : null;
      if (raw !== null) {
        const count = raw.n;
        if (raw.seq0 !== seq) return corrupt(offset, seq, seq + count, `frame holds seq ${raw.seq0}, the entry sidecar says ${seq}`);
        const from = Math.max(task.fromSeq - raw.seq0, 0);
        const to = Math.min(task.toSeq - raw.seq0, count);
        if (from < to) enc.rawRow(raw, from, to);
        if (hash) claims = addClaim(claims, frameClaim(seq, offset, -1));
        seq += count;
        pos += length;
        enc.frames++;
        continue;
      }
      // An event that joins no run: its bytes are copied as they are.
      const ev = layout === TRUSTED_EVENT ? null : scanJsonlEvent(bytes, pos, pos + length - 1, trusted);
      const evSeq = layout === TRUSTED_EVENT ? trustedEventSeq() : ev === null ? -1 : ev.seq;
      if (evSeq >= 0) {
        if (evSeq !== seq) return corrupt(offset, seq, seq + 1, `frame holds seq ${evSeq}, the entry sidecar says ${seq}`);
        if (seq >= task.fromSeq && seq < task.toSeq) enc.rawEvent(bytes, pos, pos + length - 1);
        if (hash) {
          // Its message group: by its type token (after `{"type":"` in the trusted layout), else as the scanner read it.
          const message = layout === TRUSTED_EVENT ? isMessageTypeAt(bytes, pos + 9) : (ev as RawEvent).message;
          // (A trusted message may have the group keys: message-group.ts looks for them itself.)
          const groupKeys = message && (layout === TRUSTED_EVENT || (ev as RawEvent).groupKeys);
          claims = addClaim(claims, frameClaim(seq, offset, message ? messageGroup(bytes, pos, pos + length - 1, seq, groupKeys) : -1));
        }
        seq += 1;
        pos += length;
        enc.frames++;
        continue;
      }
    }
    if (bytes[pos] === MAGIC0) {
      // Transcoded to the JSON bytes of its record and read as those (binary-frame.ts).
      const r = binaryFrame(bytes, pos, offset, len, seq, task, crcs, enc, block);
      if (r === BINARY_READ) {
        prevKey = binary.key;
        if (hash) claims = addClaim(claims, binary.claim);
        seq += binary.count;
        pos += binary.length;
        enc.frames++;
        continue;
      }
      if (r === BINARY_WRONG_SEQ) return corrupt(offset, seq, seq + binary.count, `frame holds seq ${binary.first}, the entry sidecar says ${seq}`);
    }
    // Anything else: decoded in full (whole-frame.ts).
    const w = wholeFrame(bytes, pos, offset, len, seq, task, enc);
    if (w === WHOLE_BAD) return corrupt(offset, seq, task.endSeq, whole.message);
    if (w === WHOLE_WRONG_SEQ) return corrupt(offset, seq, seq + whole.count, `frame holds seq ${whole.first}, the entry sidecar says ${seq}`);
    if (hash) claims = addClaim(claims, whole.claim);
    seq += whole.count;
    pos += whole.length;
    enc.frames++;
  }
  if (seq !== task.endSeq) return corrupt(task.end, seq, task.endSeq, `frames end at seq ${seq}, the entry sidecar says ${task.endSeq}`);
  // Called on every slice (the warm-up's too), so that the call is no new path on the first real page.
  rememberDigest(task.start, task.end, task.firstSeq, task.endSeq, crcs.seed, crcs.pin, claims, task.digest);
  // Every frame is sound and where the plan said: now the plan's seqs, offsets and message
  // groups, which shaped the page, must be the frames' own.
  // Both compares run on every task: the JIT warm-up's tasks carry no claim, and a compare that
  // never ran before decodeSlice was optimized deoptimized it on the first page that checks one.
  const disagrees = claims !== task.digest;
  if (task.digest !== NO_CLAIM && disagrees) return corrupt(task.start, task.firstSeq, task.endSeq, 'the index the page was planned from disagrees with these frames (seqs, offsets or message groups)', 'claim');
  return enc.finish(readMs, resultArena, out, code);
}

/**
 * Whether to warm the binary path: `flag` is the pool's shared answer (0 not yet given, 1
 * JSONL only, 2 binary too; worker-pool.ts); null while there is none and `wait` is false. Not
 * given within BINARY_ANSWER_WAIT_MS (a store still listing a large catalog, a pool nobody
 * answers for): yes, as every worker did before.
 */
function needsBinary(flag: Int32Array | undefined, wait: boolean): boolean | null {
  if (flag === undefined) return true;
  if (Atomics.load(flag, 0) === 0) {
    if (!wait) return null;
    Atomics.wait(flag, 0, 0, BINARY_ANSWER_WAIT_MS);
  }
  return Atomics.load(flag, 0) !== 1;
}

/** How long a worker whose JSONL warm-up is done waits for the store's answer (it serves nothing meanwhile: it is not yet online). */
const BINARY_ANSWER_WAIT_MS = 2000;

// Optimize the hot decode path before the first real task (see jit-warmup.ts).
// Piscina starts the worker by loading this module, so this runs at pool start, not per page.
// First detach one ArrayBuffer, as every task's Piscina.move() will: V8 drops all
// optimized code that assumed no buffer is ever detached the first time one is,
// which otherwise threw the whole warm-up away at the end of the first task.
{
  const probe = new ArrayBuffer(8);
  structuredClone(probe, { transfer: [probe] });
}
// Through the arena, as tasks decode (its copy paths are the ones to optimize). On when the
// pool says so (StoreOptions.warmUp.jit); never when this module is loaded outside a pool.
// The warm-up's arena is then let go: idle, it held ~5 MB a worker, and a big first page needs a larger one anyway;
// and its garbage is collected now, not when the old generation next reaches its limit (full-gc.ts).
const started = workerData as { jitWarmUp?: boolean; jitBudgetMs?: number; firstReadBytes?: number; binaryWarmUp?: Int32Array; warmupLogs?: { jsonl?: Uint8Array; binary?: Uint8Array } } | undefined;
if (started?.jitWarmUp === true) {
  // Loaded only here: the warm-up's synthetic logs come from the generator and the writer's
  // encoders, modules a thread that never warms up (the main thread's small slices, the one-shot
  // `page` command's in-thread pool) has no use for.
  const [{ warmUpJit, LOGS_PLAN }, { decodeWarmupLogs }] = await Promise.all([import('./jit-warmup.js'), import('./warmup-logs.js')]);
  // Until V8 says the decode loop runs optimized code (optimization-status.ts), not a fixed number of rounds.
  // Then the small per-frame methods it calls without inlining (jit-warmup.ts warmUpHelpers).
  // The binary logs only when the store has binary sessions: the pool's answer (worker-pool.ts
  // decideBinaryWarmUp), looked at before each round, waited for once the JSONL rounds are
  // done, and taken as yes when none comes.
  // Its logs from the build's copy, which the pool read, when that checks out (warmup-logs.ts), else made there.
  await warmUpJit(decodeInArena, () => tierOf(decodeSlice), started.jitBudgetMs, tierOf, (wait) => needsBinary(started.binaryWarmUp, wait), (kind) => decodeWarmupLogs(started.warmupLogs?.[kind], LOGS_PLAN), () => optimizeOnNextCall(decodeSlice), optimizeOnNextCall);
  dropArena();
  // Last, and after the arena above is let go: the first large slice's arena, its read region and its sinks' first parts touched (warm-up options' workerReadBytes).
  prepareFirstArena(started.firstReadBytes ?? 0);
  collectGarbage();
  heapCollected();
}

/**
 * Where this thread's decode loop is in V8's tiers (optimization-status.ts), for the main thread's
 * small slices (main/small-slice-pool.ts: decoded there only once it runs optimized); and a request
 * to V8 to optimize it at its next call (the main thread's decoder warm-up: warmup/page-path-warmup.ts).
 */
export const decoderTier = (): Tier | null => tierOf(decodeSlice);

/**
 * The task shape's fields as wide as any real task makes them, before this thread's loop is
 * optimized: seqs, offsets and claim digests past 2^31 (heap numbers, as a large log's are read
 * from its frame index), records as Buffers and as plain Uint8Arrays or none, with and without a
 * page head. Traced: the main thread's loop, warmed on the build's small session (small integers
 * only), deoptimized on the first real typical page at its first read of the task ("wrong map":
 * a field of the task's shape had widened, and with it its map). The workers' warm-up does the
 * same with its synthetic logs' bases (jit-warmup.ts SEQ_BASE).
 */
export function widenTaskShape(): void {
  const b = Buffer.alloc(16);
  for (const [crcs, head] of [[b, ''], [new Uint8Array(16), 'x'], [undefined, '']] as const) {
    const t = sliceTask('file:', 'x', 2 ** 33, 2 ** 33 + 1, 2 ** 32, 2 ** 32 + 1, 2 ** 32, 2 ** 32 + 1);
    t.crcs = crcs;
    t.meta = crcs;
    t.digest = 2 ** 31 + 3;
    t.inPlace = head === '';
    t.pageHead = head;
    decodeTask(t);
  }
}

export const optimizeDecoder = (): boolean => optimizeOnNextCall(decodeSlice, true);

/**
 * The functions the decode loop calls per frame or per run that V8 compiles on their own (too
 * large to inline, or past the loop's inlining budget). The main thread's warm-up stops once the
 * loop is optimized; traced, its typical pages at ready then ran these unoptimized and V8
 * compiled 2-6 of them during each of the first pages, on a helper thread beside the page (1.5-17
 * ms of its CPU a page: docs/benchmarks.md, "ready, second round (eleventh session)").
 */
const FRAME_HELPERS = [
  ...TRUSTED_READERS,
  continuedRow,
  isMessageTypeAt,
  ...GROUP_READERS,
  stringEnd,
  CrcCursor.prototype.continuingRow,
  SliceEncoder.prototype.rawRow,
  SliceEncoder.prototype.rawEvent,
  // (Private: reached through the prototype, as V8 sees them.)
  SliceEncoder.prototype['extend'],
  SliceEncoder.prototype['gapBytes'],
  SliceEncoder.prototype['memberBytes'],
  ByteSink.prototype.int,
  ByteSink.prototype.reserve,
  // Not ByteSink#bytes nor SliceEncoder#record: asked for, each deoptimized on the first real
  // typical page ("insufficient type feedback": the warm-up's pages never take some of their
  // paths) and was compiled again beside it, in 3 of 3 traced starts.
] as ((...args: never[]) => unknown)[];

/**
 * Asks V8 to optimize, concurrently at its next call, each of FRAME_HELPERS not optimized or
 * being compiled yet (the main thread's decoder warm-up, with the loop: their feedback is the
 * warm-up pages' own). One inlined into the loop's optimized code is never called again, and its
 * request is never acted on: harmless. Returns how many were asked for.
 */
export function optimizeFrameHelpers(): number {
  let asked = 0;
  for (const f of FRAME_HELPERS) if (tierOf(f) === 'not-optimized' && optimizeOnNextCall(f, true)) asked++;
  return asked;
}

/** One task, the result not yet marked to be moved (the in-thread pool's entry: main/inline-pool.ts). */
export function runPageTask(task: SliceTask | CompressTask): SliceResult {
  // Bytes to compress, no slice to decode (slice-compress.ts).
  if ('compress' in task) return codeBytes(task.compress, task.coding, task.level) as SliceResult;
  const len = task.end - task.start;
  // A consumed result handed back: our arena from now on when larger, else the next large
  // result's buffer when it is of a result's size (a larger one, another worker's arena, would
  // take its whole reserve along with every result: it is let go instead).
  if (task.arena !== undefined) {
    if (task.arena.byteLength > arena.length) arena = Buffer.from(task.arena);
    else if (task.arena.byteLength <= SPARE_OUT_MAX * len && (spareOut === null || task.arena.byteLength > spareOut.byteLength)) spareOut = task.arena;
  }
  const held = arena;
  // An empty slice reads nothing (the pool's warm-up sends these).
  const t0 = performance.now();
  const bytes = len > 0 ? sliceBytes(task) : Buffer.alloc(0);
  // A large result is the arena itself only when this worker held none before the task (its
  // first large page: moving it costs nothing). Otherwise its sections are copied into a buffer
  // of their size that goes round (spareOut), also when the arena had to grow for this task: the
  // main thread then takes in the result's bytes, not the arena's reserve, ~3.6x the slice's
  // bytes, which V8 counts as external memory against the old generation's limit (moved in and
  // out each page, two 12 MB arenas had marking start beside nearly every 5M tail page:
  // docs/benchmarks.md, issue 13, "same (twelfth session)").
  const large = task.inPlace === true;
  const copyOut = large && len >= COPY_OUT_BYTES;
  // A small whole page (SliceTask.pageHead) is written into a handed-back result when there is one:
  // the main thread hands consumed small pages back (store/body-pool.ts spares), so the buffers go
  // round instead of each page bringing the main thread fresh external memory, which V8 counts
  // toward a full collection (every ~64 MB: ~8 a second at 16 random pages in flight,
  // docs/benchmarks.md "ready (thirteenth session)").
  const wholeOut = !large && task.pageHead !== '' && spareOut !== null;
  const out = copyOut && held.length > 0 ? (spareOut ?? NO_SPARE) : wholeOut ? spareOut : null;
  if (out !== null) spareOut = null;
  let result: SliceResult;
  const coder = pageCoder(task);
  try {
    result = decodeSlice(decodeTask(task), bytes, performance.now() - t0, sinks, large && out === null ? arena : null, out, coder);
  } catch (err) {
    // A frame only the decoder trips on (a stack overflow on deep nesting, say): that page
    // fails with the frame's range; this worker, its thread and its buffers carry on.
    for (const s of Object.values(sinks)) s.reset(KEEP_BYTES);
    return corrupt(atOffset, atSeq, task.endSeq, `the decoder failed on the frame at offset ${atOffset}: ${(err as Error)?.message ?? String(err)}`, 'decoder');
  }
  keepSmallCursor();
  // Too small for this page (finishPage took a fresh buffer): kept for the next.
  if (wholeOut && result !== out) spareOut = out;
  // The output coding: the slice's sections compressed here, where they were built (slice-compress.ts).
  if (task.coding !== CODING_NONE && coder?.used !== true && result instanceof ArrayBuffer) result = codeSlice(result, task.coding, task.level, result === arena.buffer ? len : 0);
  if (result === arena.buffer || arena.length > KEEP_ARENA_BYTES) {
    dropArena();
  } else {
    // The result is a copy: the sinks and the arena are free for the next task.
    for (const s of Object.values(sinks)) s.reset(KEEP_BYTES);
  }
  return result;
}

/** A batch's tasks one after the other, each answered as if it had come alone (main/slice-batches.ts). */
export function runBatch(b: SliceBatch): BatchResult {
  const results = b.batch.map((t): SliceResult | string => {
    try {
      return runPageTask(t);
    } catch (err) {
      return (err as Error)?.message ?? String(err);
    }
  });
  return { results };
}

/**
 * Piscina's entry: one task or a batch; the worker's old generation is collected here when it has
 * grown (heap-bound.ts), and its answer waits for a turn of its event loop when the compressed
 * output's memory waits for one (loop-turn.ts).
 */
export default function pageTask(task: SliceTask | CompressTask | SliceBatch): SliceResult | BatchResult | Promise<SliceResult | BatchResult> {
  collectWhenGrown();
  return afterLoopTurn(answerOf(task));
}

function answerOf(task: SliceTask | CompressTask | SliceBatch): SliceResult | BatchResult {
  if ('batch' in task) {
    const answer = runBatch(task);
    // Every result buffer moves with the one answer, none copied.
    const moved = answer.results.filter((r): r is ArrayBuffer => r instanceof ArrayBuffer);
    return Piscina.move({ [Piscina.transferableSymbol]: moved, [Piscina.valueSymbol]: answer } as never) as unknown as BatchResult;
  }
  const result = runPageTask(task);
  return (result instanceof ArrayBuffer ? Piscina.move(result) : result) as SliceResult;
}
