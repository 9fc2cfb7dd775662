/**
 * The non-packable-event fast path agrees with JSON.parse + validateEvent:
 * whatever it accepts parses, validates, has the seq and time it read, and
 * can never join a packed run (so copying its bytes is safe).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packableChunk, validateEvent } from '../src/core/chunk-codec.js';
import type { SessionEvent } from '../src/core/types.js';
import { scanJsonlEvent } from '../src/streams/jsonl-event-scanner.js';
import { countedGroup } from '../src/core/page-rule.js';
import { messageGroup } from '../src/streams/message-group.js';

const typeArb = fc.constantFrom('user/message', 'assistant/message', 'user/messages', 'tool/result', 'assistant/chunk', 'text-chunks', 'session', '', 'vendor/x', 'a\\"b');
const chunkArb = fc.oneof(
  fc.record({ type: fc.constantFrom('text-delta', 'reasoning-delta'), index: fc.integer({ min: 0, max: 3 }), text: fc.string() }),
  fc.record({ type: fc.constantFrom('block-start', 'block-end', 'usage', 'finish'), index: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ type: fc.constant('tool-call-delta'), index: fc.nat(3), id: fc.string(), argumentsDelta: fc.string() }),
);
const eventArb = fc.record(
  {
    type: typeArb,
    seq: fc.oneof(fc.nat(), fc.constant(-1), fc.constant(1.5)),
    time: fc.oneof(fc.integer({ min: -1e12, max: 2e12 }), fc.constant(2 ** 60)),
    data: fc.oneof(fc.record({ turn: fc.nat(3), step: fc.nat(3), chunk: chunkArb }), fc.jsonValue()),
    surfaceOp: fc.constantFrom('append', 'replace'),
    sourceEventSeqs: fc.array(fc.nat(), { maxLength: 5 }),
  },
  { requiredKeys: ['type', 'data'] },
);

function mutate(line: string, at: number, op: number, ch: string): string {
  const i = at % Math.max(1, line.length);
  if (op === 0) return line.slice(0, i) + line.slice(i + 1);
  if (op === 1) return line.slice(0, i) + ch + line.slice(i);
  return line.slice(0, i) + ch + line.slice(i + 1);
}

function check(line: string, trusted = false): void {
  // Hostile bytes around the line: a read past its end would show.
  const bytes = Buffer.concat([Buffer.from('}]"x'), Buffer.from(line), Buffer.from('"delta\\u{')]);
  const got = scanJsonlEvent(bytes, 4, 4 + Buffer.byteLength(line), trusted);
  if (got === null) return;
  const parsed = JSON.parse(line) as SessionEvent;
  const e = validateEvent(parsed);
  expect({ seq: got.seq, time: got.time }).toEqual({ seq: e.seq, time: e.time });
  // The message group the page path derives from the flags is the one the parsed event has.
  expect(got.message ? messageGroup(bytes, 4, 4 + Buffer.byteLength(line), got.seq, got.groupKeys) : -1).toBe(countedGroup(e) ?? -1);
  expect(['text-chunks', 'reasoning-chunks', 'tool-call-chunks']).not.toContain(e.type);
  expect(packableChunk(e)).toBeNull();
}

describe('scanJsonlEvent', () => {
  it('accepts only lines that parse, validate and can never be packed', () => {
    fc.assert(
      fc.property(eventArb, (e) => {
        check(JSON.stringify(e));
        check(JSON.stringify(e, null, 1).replace(/\n/g, ' '));
        // As the writer writes a valid event (type, seq and time first), read by the trusted path.
        const { type, seq, time, ...rest } = e as Record<string, unknown>;
        let valid = true;
        try {
          validateEvent(e);
        } catch {
          valid = false;
        }
        if (valid) check(JSON.stringify({ type, seq, time, ...rest }), true);
      }),
      { numRuns: 2000 },
    );
  });

  it('never accepts a damaged line that JSON.parse or validateEvent would reject', () => {
    fc.assert(
      fc.property(eventArb, fc.nat(), fc.integer({ min: 0, max: 2 }), fc.constantFrom('"', '\\', '{', '}', ',', ':', '\u0001', 'x', '1', ' ', '\n'), (e, at, op, ch) => {
        check(mutate(JSON.stringify(e), at, op, ch));
      }),
      { numRuns: 3000 },
    );
  });

  it('accepts plain events and non-delta chunks, and declines deltas', () => {
    const line = (o: unknown) => Buffer.from(JSON.stringify(o));
    const user = line({ type: 'user/message', seq: 3, time: 9, data: { text: 'hi' }, surfaceOp: 'append' });
    expect(scanJsonlEvent(user, 0, user.length)).toEqual({ seq: 3, time: 9, message: true, groupKeys: true });
    const start = line({ type: 'assistant/chunk', seq: 4, time: 9, data: { turn: 0, step: 0, chunk: { type: 'block-start', index: 0 } } });
    expect(scanJsonlEvent(start, 0, start.length)).toEqual({ seq: 4, time: 9, message: false, groupKeys: false });
    const delta = line({ type: 'assistant/chunk', seq: 5, time: 9, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: 'x' } } });
    expect(scanJsonlEvent(delta, 0, delta.length)).toBeNull();
    const escaped = Buffer.from('{"type":"assistant/chunk","seq":5,"time":9,"data":{"turn":0,"step":0,"chunk":{"type":"text\\u002ddelta","index":0,"text":"x"}}}');
    expect(scanJsonlEvent(escaped, 0, escaped.length)).toBeNull();
  });
});
