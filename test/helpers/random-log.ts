/**
 * Random session logs for property tests, shared by every engineer.
 *
 * - `eventStreamArb(opts)`: random logical event streams that hit every edge
 *   of the packing rule (SPEC section 2) and the paging rule (section 5).
 * - `randomLogArb()`: a stream plus append-batch boundaries and a frame
 *   encoding per batch.
 * - `writeRandomLog(spec)`: writes it through the real SessionWriter into a
 *   temp data dir; `randomLog(seed)` does both from a fast-check seed.
 *
 * Mixing encodings in one log: the encoding of new frames is the writer's
 * `format`, fixed while a writer is open. To switch, the helper closes the
 * writer and reopens the session with `SessionWriter.open(..., {format})`,
 * the writer's own supported way to change the encoding of later frames
 * (SPEC section 3 allows both encodings in one file). So every frame of a
 * random log is still written, packed and indexed by the production writer.
 *
 * Strings include lone UTF-16 surrogates and data objects may hold an own
 * `__proto__` key: MessagePack cannot keep those, so the writer of a binary
 * session stores such records as JSONL frames (see docs/decisions.md).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { SessionEvent } from '../../src/core/types.js';
import { SessionWriter } from '../../src/main/session-writer.js';
import type { StorageBackend } from '../../src/storage/backend.js';
import type { FrameEncoding } from '../../src/streams/frame-codec.js';

const MAX = Number.MAX_SAFE_INTEGER;

/** A time step: a number, or a jump to the far end of the safe range (the gap itself is then not safe). */
export type Gap = number | 'flip';

export const gapArb: fc.Arbitrary<Gap> = fc.oneof(
  { weight: 10, arbitrary: fc.integer({ min: 0, max: 40 }) },
  { weight: 2, arbitrary: fc.integer({ min: -1000, max: -1 }) },
  { weight: 1, arbitrary: fc.constantFrom(2 ** 52, -(2 ** 52), 2 ** 40) },
  { weight: 1, arbitrary: fc.constant('flip' as const) },
);

function step(time: number, g: Gap): number {
  if (g === 'flip') return time >= 0 ? -(MAX - 7) : MAX - 7;
  const next = time + g;
  return Number.isSafeInteger(next) ? next : time - g;
}

/** Member strings: empty, token-sized, multi-byte, and lone surrogates (binary sessions write those as JSONL frames). */
const memberArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('', ' the', 'x', '{"', '\n', ' café', ' 文件', '"}', '\\', 'half \ud83d', '\udc00') },
  { weight: 2, arbitrary: fc.string({ maxLength: 6, unit: 'grapheme' }) },
);

const smallValueArb = fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.boolean(), fc.constant(null), fc.constant(2 ** 53 - 1), fc.constant(1.5));
const dataArb = fc.dictionary(fc.constantFrom('a', 'b', 'text', 'meta', 'k', '__proto__'), smallValueArb, { maxKeys: 3, noNullPrototype: true });

export type RunMutation = 'none' | 'name' | 'drop-name' | 'add-name' | 'id' | 'index' | 'step' | 'turn' | 'kind';

/** A stretch of chunk deltas, with an optional change of run key partway. */
export interface RunPiece {
  t: 'run';
  kind: 'text' | 'reasoning' | 'tool';
  turn: number;
  step: number;
  index: number;
  id: string;
  name: string | null;
  members: string[];
  gaps: Gap[];
  mutateAt: number;
  mutate: RunMutation;
}

export type SourceShape = 'none' | 'back' | 'huge' | 'junk';

export interface MessagePiece {
  t: 'msg';
  type: 'user/message' | 'assistant/message';
  /** 'absent' and 'append' count (SPEC section 5); the others do not. */
  op: 'absent' | 'append' | 'replace' | 'replace-object' | 'other';
  src: SourceShape;
  back: number[];
}

export interface OtherPiece {
  t: 'other';
  /** tool/result, step/start, an unknown type, an event with extra keys, or a non-packable chunk variant. */
  variant: number;
  data: Record<string, unknown>;
}

export type Piece = RunPiece | MessagePiece | OtherPiece;

const runArb: fc.Arbitrary<RunPiece> = fc.record({
  t: fc.constant('run' as const),
  kind: fc.constantFrom('text' as const, 'reasoning' as const, 'tool' as const),
  turn: fc.integer({ min: 0, max: 1 }),
  step: fc.integer({ min: 0, max: 1 }),
  index: fc.integer({ min: 0, max: 1 }),
  id: fc.constantFrom('call_a', 'call_b'),
  name: fc.constantFrom(null, 'bash', 'read'),
  // Runs of 1, 2, 3 and many.
  members: fc.oneof(fc.array(memberArb, { minLength: 1, maxLength: 3 }), fc.array(memberArb, { minLength: 4, maxLength: 60 })),
  gaps: fc.array(gapArb, { minLength: 1, maxLength: 6 }),
  mutateAt: fc.integer({ min: 0, max: 8 }),
  mutate: fc.constantFrom<RunMutation>('none', 'none', 'none', 'name', 'drop-name', 'add-name', 'id', 'index', 'step', 'turn', 'kind'),
});

const messageArb: fc.Arbitrary<MessagePiece> = fc.record({
  t: fc.constant('msg' as const),
  type: fc.constantFrom('user/message' as const, 'assistant/message' as const),
  op: fc.constantFrom('absent' as const, 'append' as const, 'append' as const, 'replace' as const, 'replace-object' as const, 'other' as const),
  src: fc.constantFrom<SourceShape>('none', 'back', 'back', 'huge', 'junk'),
  back: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }),
});

/** Number of OtherPiece variants (see otherEvent). */
export const OTHER_VARIANTS = 12;

const otherArb: fc.Arbitrary<OtherPiece> = fc.record({
  t: fc.constant('other' as const),
  variant: fc.integer({ min: 0, max: OTHER_VARIANTS - 1 }),
  data: dataArb,
});

export const pieceArb: fc.Arbitrary<Piece> = fc.oneof({ weight: 6, arbitrary: runArb }, { weight: 3, arbitrary: messageArb }, { weight: 2, arbitrary: otherArb });

export interface StreamOptions {
  /** Seqs 0, 1, 2, … (a valid log). When false, seqs start anywhere and have gaps (codec tests only). */
  contiguous?: boolean;
  maxPieces?: number;
}

/** Seq increments for non-contiguous streams: mostly +1, sometimes a gap. */
const seqGapArb = fc.oneof({ weight: 12, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constantFrom(2, 3, 1000) });

function chunkData(kind: RunPiece['kind'], turn: number, stepNo: number, index: number, id: string, name: string | null, member: string): unknown {
  if (kind === 'tool') {
    const chunk: Record<string, unknown> = { type: 'tool-call-delta', index, id };
    if (name !== null) chunk.name = name;
    chunk.argumentsDelta = member;
    return { turn, step: stepNo, chunk };
  }
  return { turn, step: stepNo, chunk: { type: kind === 'text' ? 'text-delta' : 'reasoning-delta', index, text: member } };
}

/** The non-run, non-message events: each a different way of not being a packable chunk. */
function otherEvent(p: OtherPiece, seq: number, time: number): SessionEvent {
  const base = { seq, time };
  const delta = { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: 'x' } };
  switch (p.variant) {
    case 0:
      return { type: 'tool/result', ...base, data: p.data, sourceEventSeqs: seq > 0 ? [seq - 1] : [], surfaceOp: 'append' };
    case 1:
      return { type: 'step/start', ...base, data: { turn: 0, step: 1 } };
    case 2:
      return { type: 'vendor/unknown', ...base, data: p.data };
    case 3:
      return { type: 'turn/end', ...base, data: p.data, ignorable: true, extra: { nested: [1, 'two'] } };
    case 4: // a delta with an extra top-level key
      return { type: 'assistant/chunk', ...base, data: delta, ignorable: true };
    case 5: // an extra key in data
      return { type: 'assistant/chunk', ...base, data: { ...delta, extra: 1 } };
    case 6: // an extra key in the chunk
      return { type: 'assistant/chunk', ...base, data: { turn: 0, step: 0, chunk: { ...delta.chunk, logprob: -1 } } };
    case 7: // a non-string text
      return { type: 'assistant/chunk', ...base, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: 7 } } };
    case 8: // a non-integer index
      return { type: 'assistant/chunk', ...base, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0.5, text: 'x' } } };
    case 9: // block markers are chunks but never packable
      return { type: 'assistant/chunk', ...base, data: { turn: 0, step: 0, chunk: { type: 'block-start', index: 0, blockType: 'text' } } };
    case 10: // a tool delta with a non-string name
      return { type: 'assistant/chunk', ...base, data: { turn: 0, step: 0, chunk: { type: 'tool-call-delta', index: 0, id: 'call_a', name: 3, argumentsDelta: '' } } };
    default: // a delta without data
      return { type: 'assistant/chunk', ...base };
  }
}

function sourceSeqs(m: MessagePiece, seq: number, first: number): unknown[] | undefined {
  switch (m.src) {
    case 'none':
      return undefined;
    case 'back':
      return m.back.map((d) => seq - d).filter((s) => s >= first);
    case 'huge': {
      // A group reaching back to the first event of the log: one message spans all history.
      const out: number[] = [];
      for (let s = first; s < seq; s++) out.push(s);
      return out;
    }
    case 'junk':
      // Entries that cannot name an event: ignored by the group rule.
      return [-1, 1.5, 'x', 2 ** 60, seq + 5];
  }
}

/** Turn pieces into events; `seqGaps[i]` and the start seq/time drive seqs and times. */
export function materialize(pieces: readonly Piece[], opts: { seq0?: number; time0?: number; seqGaps?: readonly number[] } = {}): SessionEvent[] {
  const out: SessionEvent[] = [];
  const first = opts.seq0 ?? 0;
  let seq = first;
  let time = opts.time0 ?? 1_700_000_000_000;
  let n = 0;
  const next = (g: Gap): { seq: number; time: number } => {
    if (n > 0) {
      seq += opts.seqGaps && opts.seqGaps.length > 0 ? (opts.seqGaps[n % opts.seqGaps.length] as number) : 1;
      time = step(time, g);
    }
    n++;
    return { seq, time };
  };
  for (const p of pieces) {
    if (p.t === 'run') {
      for (let k = 0; k < p.members.length; k++) {
        const at = next(p.gaps[k % p.gaps.length] as Gap);
        const changed = p.mutate !== 'none' && k >= p.mutateAt;
        let { kind, turn, step: st, index, id, name } = p;
        if (changed) {
          if (p.mutate === 'name') name = name === 'bash' ? 'read' : 'bash';
          else if (p.mutate === 'drop-name') name = null;
          else if (p.mutate === 'add-name') name = name ?? 'edit';
          else if (p.mutate === 'id') id = id + '_2';
          else if (p.mutate === 'index') index++;
          else if (p.mutate === 'step') st++;
          else if (p.mutate === 'turn') turn++;
          else kind = kind === 'text' ? 'reasoning' : kind === 'reasoning' ? 'text' : 'text';
        }
        out.push({ type: 'assistant/chunk', seq: at.seq, time: at.time, data: chunkData(kind, turn, st, index, id, name, p.members[k] as string) });
      }
    } else if (p.t === 'msg') {
      const at = next(p.back[0] as number);
      const e: SessionEvent = { type: p.type, seq: at.seq, time: at.time, data: { content: [{ type: 'text', text: 'm' }] } };
      const src = sourceSeqs(p, at.seq, first);
      if (src !== undefined) e.sourceEventSeqs = src;
      if (p.op === 'append') e.surfaceOp = 'append';
      else if (p.op === 'replace') e.surfaceOp = 'replace';
      else if (p.op === 'replace-object') e.surfaceOp = { op: 'replace', start: first, end: at.seq };
      else if (p.op === 'other') e.surfaceOp = 'prepend';
      out.push(e);
    } else {
      const at = next(1);
      out.push(otherEvent(p, at.seq, at.time));
    }
  }
  return out;
}

/** Random logical event streams covering every packing and paging edge. */
export function eventStreamArb(opts: StreamOptions = {}): fc.Arbitrary<SessionEvent[]> {
  const pieces = fc.array(pieceArb, { minLength: 0, maxLength: opts.maxPieces ?? 30 });
  if (opts.contiguous ?? true) return pieces.map((p) => materialize(p));
  return fc
    .record({
      pieces,
      seq0: fc.constantFrom(0, 7, 2 ** 40),
      time0: fc.constantFrom(1_700_000_000_000, 0, -5e15, MAX - 100_000),
      seqGaps: fc.array(seqGapArb, { minLength: 1, maxLength: 8 }),
    })
    .map((r) => materialize(r.pieces, r));
}

export interface BatchSpec {
  size: number;
  format: FrameEncoding;
}

export interface RandomLogSpec {
  events: SessionEvent[];
  /** Append batches, in order; sizes are cycled until every event is written. */
  batches: BatchSpec[];
}

export const batchesArb: fc.Arbitrary<BatchSpec[]> = fc.array(
  fc.record({
    // Single events, small batches that cut runs, and large ones that hold whole runs.
    size: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 5, max: 200 })),
    // Runs of one encoding, then a switch: each switch costs a writer reopen.
    format: fc.constantFrom<FrameEncoding>('jsonl', 'jsonl', 'binary', 'binary'),
  }),
  { minLength: 1, maxLength: 8 },
);

export function randomLogArb(opts: Omit<StreamOptions, 'contiguous'> = {}): fc.Arbitrary<RandomLogSpec> {
  return fc.record({ events: eventStreamArb({ ...opts, contiguous: true }), batches: batchesArb });
}

export interface RandomLog {
  dataDir: string;
  id: string;
  events: SessionEvent[];
  /** Remove the temp data dir (only when the helper created it). */
  cleanup(): void;
}

/** Write `spec` through SessionWriter (see the file comment for how encodings are mixed). */
export async function writeRandomLog(spec: RandomLogSpec, opts: { dataDir?: string; storage?: StorageBackend; id?: string; header?: Record<string, unknown> } = {}): Promise<RandomLog> {
  const own = opts.dataDir === undefined && opts.storage === undefined;
  const dataDir = opts.dataDir ?? (own ? mkdtempSync(join(tmpdir(), 'sp-random-log-')) : '');
  // A backend given: the log goes there (dataDir stays '').
  const target = opts.storage ?? dataDir;
  const id = opts.id ?? 'random';
  const formatAt = (i: number): FrameEncoding => (spec.batches[i % spec.batches.length] as BatchSpec).format;
  let format = formatAt(0);
  let writer = await SessionWriter.create(target, id, { type: 'session', version: 1, createdAt: 1_700_000_000_000, ...opts.header, id }, { format, durable: false });
  try {
    let at = 0;
    for (let b = 0; at < spec.events.length; b++) {
      const batch = spec.batches[b % spec.batches.length] as BatchSpec;
      if (batch.format !== format) {
        await writer.close();
        format = batch.format;
        writer = await SessionWriter.open(target, id, { format, durable: false });
      }
      const size = Math.max(1, batch.size);
      await writer.append(spec.events.slice(at, at + size));
      at += size;
    }
  } finally {
    await writer.close();
  }
  return { dataDir, id, events: spec.events, cleanup: () => own && rmSync(dataDir, { recursive: true, force: true }) };
}

/** A random log from a fast-check seed: the same seed gives the same log. */
export async function randomLog(seed: number, opts: { dataDir?: string; id?: string; maxPieces?: number } = {}): Promise<RandomLog> {
  const [spec] = fc.sample(randomLogArb({ maxPieces: opts.maxPieces }), { seed, numRuns: 1 });
  return writeRandomLog(spec as RandomLogSpec, opts);
}
