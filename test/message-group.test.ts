/**
 * A message's group read from its bytes (streams/message-group.ts) is the
 * one JSON.parse and the paging rule give (core/page-rule.ts countedGroup),
 * on any valid JSON text of a message event: keys in any order, repeated
 * keys (the last wins), the keys nested where they do not count, values of
 * every kind, numbers in every form, escapes and whitespace.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countedGroup } from '../src/core/page-rule.js';
import type { SessionEvent } from '../src/core/types.js';
import { messageGroup } from '../src/streams/message-group.js';

/** A JSON number token in some form JSON allows. */
const numberToken = fc.oneof(
  fc.nat({ max: 2000 }).map(String),
  fc.integer({ min: -50, max: -1 }).map(String),
  fc.constantFrom('0', '-0', '1.0', '2.5', '1e2', '3E0', '0.0', '12e-1', '9007199254740993', '9007199254740991', '-0.0'),
);
/** Any JSON value as text (strings with quotes, brackets, escapes and the key names inside). */
const valueText: fc.Arbitrary<string> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    numberToken,
    fc.constantFrom('true', 'false', 'null', '"append"', '"app\\u0065nd"', '"replace"', '"\\"surfaceOp\\":[1]"', '"[1,2]"', '"a\\\\"', '"]"', '"sourceEventSeqs"'),
    fc.string().map((s) => JSON.stringify(s)),
    fc.array(tie('v'), { maxLength: 4 }).map((xs) => `[${xs.join(',')}]`),
    fc.array(fc.tuple(fc.constantFrom('surfaceOp', 'sourceEventSeqs', 'x', 'seq'), tie('v')), { maxLength: 3 }).map((kv) => `{${kv.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  ),
})).v;
const sources = fc.oneof(
  fc.array(fc.oneof({ weight: 6, arbitrary: fc.nat({ max: 2000 }).map(String) }, { weight: 1, arbitrary: valueText }), { maxLength: 8 }).map((xs) => `[${xs.join(',')}]`),
  valueText,
);
const surface = fc.oneof(fc.constantFrom('"append"', '"replace"', '"app\\u0065nd"', 'null', '"Append"'), valueText);
const ws = fc.constantFrom('', ' ', '\n ', '\t');

/** A message event's members (type and seq fixed; others in any order, repeated or not). */
const members = fc.tuple(
  fc.constantFrom('user/message', 'assistant/message'),
  fc.nat({ max: 3000 }),
  fc.array(
    fc.oneof(
      fc.tuple(fc.constant('sourceEventSeqs'), sources),
      fc.tuple(fc.constant('surfaceOp'), surface),
      fc.tuple(fc.constantFrom('data', 'time', 'x'), valueText),
    ),
    { maxLength: 6 },
  ),
);

function text([type, seq, rest]: [string, number, [string, string][]], sp: string): string {
  const all: [string, string][] = [['type', JSON.stringify(type)], ['seq', String(seq)], ...rest];
  return `{${sp}${all.map(([k, v]) => `${JSON.stringify(k)}${sp}:${sp}${v}`).join(`${sp},${sp}`)}${sp}}`;
}

function check(line: string, seq: number): void {
  // Hostile bytes around the frame: a read past its ends would show.
  const bytes = Buffer.concat([Buffer.from('"[1,]{'), Buffer.from(line), Buffer.from('"]}9,')]);
  const expected = countedGroup(JSON.parse(line) as SessionEvent) ?? -1;
  expect(messageGroup(bytes, 6, 6 + Buffer.byteLength(line), seq, true), line).toBe(expected);
}

describe('messageGroup', () => {
  it('agrees with JSON.parse and the paging rule on any message text', () => {
    fc.assert(
      fc.property(members, ws, (m, sp) => {
        check(text(m, sp), m[1]);
      }),
      { numRuns: 3000 },
    );
  });

  it('reads arrays of plain integers of any length and spacing as JSON.parse does (read backwards up to 15 digits, forwards past that)', () => {
    const digits = fc.oneof(fc.nat({ max: 99 }), fc.nat(), fc.maxSafeNat(), fc.constantFrom(0, 10 ** 14, 10 ** 15 - 1, 10 ** 15, 10 ** 15 + 7, 2 ** 53 - 1, 2 ** 53, 2 ** 53 + 2)).map(String);
    const bigs = fc.constantFrom('9007199254740993', '90071992547409930', '100000000000000000000', '0');
    const arr = fc.tuple(fc.array(fc.tuple(fc.oneof({ weight: 5, arbitrary: digits }, { weight: 1, arbitrary: bigs }), ws, ws), { maxLength: 12 }), ws).map(([xs, end]) => `[${xs.map(([d, a, b]) => `${a}${d}${b}`).join(',')}${end}]`);
    fc.assert(
      fc.property(fc.constantFrom('user/message', 'assistant/message'), fc.nat({ max: 2 ** 40 }), arr, fc.boolean(), ws, (type, seq, sources, last, sp) => {
        const tail = last ? `,"surfaceOp":"append","sourceEventSeqs":${sp}${sources}${sp}}` : `,"sourceEventSeqs":${sources},${sp}"surfaceOp":"append"}`;
        check(`{"type":"${type}","seq":${seq},"time":1,"data":{"x":[1]}${tail}`, seq);
      }),
      { numRuns: 3000 },
    );
  });

  it('reads the writer\'s layout of real messages (keys after the body, hundreds of chunk seqs)', () => {
    const seqs = Array.from({ length: 445 }, (_, k) => 4_564_466 + k);
    const e = { type: 'assistant/message', seq: 4_564_911, time: 1, data: { turn: 1, message: { content: [{ type: 'text', text: 'a "quoted" ] [ text' }] } }, sourceEventSeqs: seqs, surfaceOp: 'append' };
    check(JSON.stringify(e), e.seq);
    check(JSON.stringify({ ...e, sourceEventSeqs: [...seqs].reverse() }), e.seq);
    check(JSON.stringify({ ...e, surfaceOp: 'replace' }), e.seq);
    check(JSON.stringify({ type: 'user/message', seq: 7, time: 1, data: { sourceEventSeqs: [1], surfaceOp: 'replace' }, surfaceOp: 'append' }), 7);
    check(JSON.stringify({ type: 'user/message', seq: 7, time: 1, data: { sourceEventSeqs: [1] } }), 7);
    check('{"type":"user/message","seq":9,"sourceEventSeqs":[2],"sourceEventSeqs":[5, 8 ],"surfaceOp":"replace","surfaceOp":"append"}', 9);
    check('{"type":"user/message","seq":9,"sourceEventSeqs":[-0],"time":1}', 9);
    check('{"type":"user/message","seq":9,"sourceEventSeqs":[4.0,"3",[1],{"a":2}],"time":1}', 9);
  });
});
