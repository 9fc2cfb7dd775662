/**
 * A message's group read from its bytes (streams/message-group.ts) must be
 * the group a full parse gives: checked on random message events with the
 * group keys anywhere (last, first, nested in data, inside strings,
 * duplicated, of every JSON type), on the shapes hosts write, and on shapes
 * the byte reader leaves to the parse.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { messageGroup, parsedGroup } from '../src/streams/message-group.js';

const TOKENS = ['"surfaceOp"', '"sourceEventSeqs"', ',"surfaceOp":"append"}', ',"sourceEventSeqs":[1,2]', '":"append"', ']', '[0', '\\', '"'];
/** Strings that hold the keys' tokens (JSON.stringify escapes their quotes). */
const tricky = fc.oneof(fc.string(), fc.constantFrom(...TOKENS), fc.array(fc.constantFrom(...TOKENS, 'x', '1', ','), { maxLength: 6 }).map((a) => a.join('')));
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    tricky,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(tricky, fc.constantFrom('surfaceOp', 'sourceEventSeqs')), tie('v'), { maxKeys: 3 }),
  ),
})).v;
const sourceSeq = fc.oneof(fc.nat({ max: 2000 }), fc.integer({ min: -5, max: -1 }), fc.double({ noNaN: true }), fc.constant(2 ** 53), fc.constant(1e21), fc.string(), fc.constant(null));

function frame(e: Record<string, unknown>): { b: Buffer; start: number; end: number } {
  // Inside a larger buffer, as a slice is: the frame's own bounds, newline excluded.
  const b = Buffer.from(`xx${JSON.stringify(e)}\n`);
  return { b, start: 2, end: b.length - 1 };
}

describe('message group from the tail of the bytes', () => {
  it('equals the full parse whenever it decides, wherever and whatever the keys are', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('user/message', 'assistant/message'),
        fc.nat({ max: 5000 }),
        value,
        fc.option(fc.oneof(fc.constant('append'), fc.constant('replace'), value), { nil: undefined }),
        fc.option(fc.oneof(fc.array(fc.nat({ max: 5000 }), { maxLength: 5 }), fc.array(sourceSeq, { maxLength: 5 }), value), { nil: undefined }),
        fc.array(fc.tuple(fc.oneof(tricky, fc.constantFrom('surfaceOp', 'sourceEventSeqs')), value), { maxLength: 2 }),
        fc.boolean(),
        (type, seq, data, surfaceOp, sources, extra, extraFirst) => {
          const e: Record<string, unknown> = { type, seq, time: 1, data };
          const more = () => {
            for (const [k, v] of extra) if (!['type', 'seq'].includes(k)) e[k] = v;
          };
          if (extraFirst) more();
          if (sources !== undefined) e.sourceEventSeqs = sources;
          if (surfaceOp !== undefined) e.surfaceOp = surfaceOp;
          if (!extraFirst) more();
          const { b, start, end } = frame(e);
          const full = parsedGroup(b, start, end);
          expect(messageGroup(b, start, end, seq, true)).toBe(full);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('decides the shapes hosts write: sourceEventSeqs of plain seqs, then surfaceOp append, last', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('user/message', 'assistant/message'),
        fc.nat({ max: 1_000_000 }),
        fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.array(fc.string(), { maxLength: 3 }))),
        fc.option(fc.array(fc.nat({ max: 1_000_000 }), { maxLength: 60 }), { nil: undefined }),
        fc.boolean(),
        (type, seq, data, sources, append) => {
          const e: Record<string, unknown> = { type, seq, time: 1_783_002_009_221, data };
          if (sources !== undefined) e.sourceEventSeqs = sources;
          if (append) e.surfaceOp = 'append';
          const { b, start, end } = frame(e);
          expect(messageGroup(b, start, end, seq, true)).toBe(Math.min(seq, ...(sources ?? [])));
          expect(parsedGroup(b, start, end)).toBe(Math.min(seq, ...(sources ?? [])));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('reads the shapes a tail-only reader could not settle', () => {
    const cases: [Record<string, unknown>, number][] = [
      // not counted
      [{ type: 'user/message', seq: 9, time: 1, data: {}, surfaceOp: 'replace' }, -1],
      // surfaceOp earlier, not last: parse
      [{ type: 'user/message', seq: 9, time: 1, surfaceOp: 'append', data: {} }, 9],
      // a source that is no seq is ignored by the rule: parse
      [{ type: 'user/message', seq: 9, time: 1, data: {}, sourceEventSeqs: [3, -1, 1.5], surfaceOp: 'append' }, 3],
      // sourceEventSeqs also nested in data: parse
      [{ type: 'user/message', seq: 9, time: 1, data: { sourceEventSeqs: [0] }, sourceEventSeqs: [4], surfaceOp: 'append' }, 4],
    ];
    for (const [e, group] of cases) {
      const { b, start, end } = frame(e);
      expect(messageGroup(b, start, end, e.seq as number, true)).toBe(group);
    }
  });
});
