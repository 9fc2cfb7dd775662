/**
 * fast-check arbitraries for session logs that exercise the paging and
 * packing rules: chunk runs of every length and kind (tool calls with and
 * without name, name or id changing mid-run, negative and huge time gaps),
 * counted and uncounted messages with small and huge `sourceEventSeqs`
 * groups, unknown event types, extra keys, non-packable chunks.
 */
import fc from 'fast-check';
import type { SessionEvent } from '../../src/main/core/types.js';
import type { Batch } from './session-builder.js';

type Segment =
  | { t: 'run'; kind: 'text' | 'reasoning' | 'tool'; len: number; turn: number; step: number; index: number; named: boolean; renameAt: number; reIdAt: number; dts: number[] }
  | { t: 'msg'; type: 'user/message' | 'assistant/message'; op: 'absent' | 'append' | 'replace' | 'other'; src: 'none' | 'recent' | 'huge' | 'junk' }
  | { t: 'other'; type: string; extra: boolean }
  | { t: 'odd-chunk'; variant: number };

const dtArb = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0, max: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: -1000, max: -1 }) },
  { weight: 1, arbitrary: fc.constantFrom(2 ** 52, -(2 ** 52), Number.MAX_SAFE_INTEGER) },
);

const segmentArb: fc.Arbitrary<Segment> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('run' as const),
      kind: fc.constantFrom('text' as const, 'reasoning' as const, 'tool' as const),
      len: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 5, max: 80 })),
      turn: fc.integer({ min: 0, max: 1 }),
      step: fc.integer({ min: 0, max: 1 }),
      index: fc.integer({ min: 0, max: 1 }),
      named: fc.boolean(),
      renameAt: fc.integer({ min: -1, max: 10 }),
      reIdAt: fc.integer({ min: -1, max: 10 }),
      dts: fc.array(dtArb, { minLength: 1, maxLength: 8 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('msg' as const),
      type: fc.constantFrom('user/message' as const, 'assistant/message' as const),
      op: fc.constantFrom('absent' as const, 'append' as const, 'append' as const, 'replace' as const, 'other' as const),
      src: fc.constantFrom('none' as const, 'recent' as const, 'recent' as const, 'huge' as const, 'junk' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('other' as const), type: fc.constantFrom('tool/call', 'tool/result', 'step/start', 'vendor/unknown', 'text-chunk'), extra: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('odd-chunk' as const), variant: fc.integer({ min: 0, max: 3 }) }) },
);

export function materialize(segments: readonly Segment[]): SessionEvent[] {
  const out: SessionEvent[] = [];
  let time = 1_700_000_000_000;
  const push = (e: Omit<SessionEvent, 'seq' | 'time'> & Record<string, unknown>, dt = 1) => {
    time += dt;
    out.push({ ...e, seq: out.length, time } as SessionEvent);
  };
  for (const s of segments) {
    if (s.t === 'run') {
      for (let k = 0; k < s.len; k++) {
        let chunk: Record<string, unknown>;
        if (s.kind === 'tool') {
          chunk = { type: 'tool-call-delta', index: s.index, id: k >= s.reIdAt && s.reIdAt >= 0 ? 'call-b' : 'call-a' };
          if (s.named) chunk.name = k >= s.renameAt && s.renameAt >= 0 ? 'write' : 'bash';
          chunk.argumentsDelta = k % 7 === 3 ? '' : `{"k":${k}}`;
        } else {
          chunk = { type: s.kind === 'text' ? 'text-delta' : 'reasoning-delta', index: s.index, text: k % 5 === 4 ? 'ünï "q"\n' : `t${k}` };
        }
        const dt = s.dts[k % s.dts.length] as number;
        // Keep absolute times safe integers; the gap itself may still be unsafe (the run must then break).
        const next = time + dt;
        push({ type: 'assistant/chunk', data: { turn: s.turn, step: s.step, chunk } }, Number.isSafeInteger(next) && Math.abs(next) < 2 ** 53 - 1 ? dt : 1);
      }
    } else if (s.t === 'msg') {
      const e: Record<string, unknown> = { type: s.type, data: { content: [{ type: 'text', text: `${s.type} ${out.length}` }] } };
      const seq = out.length;
      if (s.src === 'recent') e.sourceEventSeqs = [Math.max(0, seq - 3), Math.max(0, seq - 1)];
      else if (s.src === 'huge') e.sourceEventSeqs = Array.from({ length: seq }, (_, i) => i).filter((i) => i % 2 === 0 || i > seq - 5);
      else if (s.src === 'junk') e.sourceEventSeqs = [-4, 1.5, 'x', seq + 10];
      if (s.op === 'append') e.surfaceOp = 'append';
      else if (s.op === 'replace') e.surfaceOp = 'replace';
      else if (s.op === 'other') e.surfaceOp = 'prepend';
      push(e as never);
    } else if (s.t === 'other') {
      const e: Record<string, unknown> = { type: s.type, data: { n: out.length } };
      if (s.extra) e.ignorable = true;
      push(e as never);
    } else {
      const variants = [
        { type: 'assistant/chunk', data: { turn: 0, step: 0, chunk: { type: 'block-start', index: 0, blockType: 'text' } } },
        { type: 'assistant/chunk', data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: 'x', extra: 1 } } },
        { type: 'assistant/chunk', data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: 'x' } }, ignorable: true },
        { type: 'assistant/chunk', data: { turn: 0.5, step: 0, chunk: { type: 'text-delta', index: 0, text: 'x' } } },
      ];
      push(variants[s.variant] as never);
    }
  }
  return out;
}

export const eventsArb: fc.Arbitrary<SessionEvent[]> = fc.array(segmentArb, { minLength: 0, maxLength: 40 }).map(materialize);

export const batchesArb: fc.Arbitrary<Batch[]> = fc.array(
  fc.record({ size: fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 9, max: 200 })), format: fc.constantFrom('jsonl' as const, 'binary' as const) }),
  { minLength: 1, maxLength: 12 },
);
