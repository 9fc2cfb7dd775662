/**
 * What error lines show of the input (core/excerpt.ts): quoted, cut, and
 * never a raw control character, invalid UTF-8, bidi or zero-width
 * character, whatever the input.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EXCERPT_CHARS, jsonErrorReason, quoteInput, quoteValue, safeLine, showToken } from '../src/core/excerpt.js';

const UNSAFE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\uFFFD]/u;

describe('quoteInput', () => {
  it.each([
    ['plain text', 'hello', '"hello"'],
    ['quotes and backslashes', 'a"b\\c', '"a\\"b\\\\c"'],
    ['controls', 'a\u0000b\nc\td\u001b[31m\u007f\u0085', '"a\\x00b\\nc\\td\\x1b[31m\\x7f\\x85"'],
    ['bidi and zero-width characters', 'a\u202eb\u200bc\ufeff', '"a\\u202eb\\u200bc\\ufeff"'],
    ['a lone surrogate', 'x\ud800y', '"x\\ud800y"'],
    ['letters of any script stay', 'héllo 世界 🎉', '"héllo 世界 🎉"'],
  ])('a string with %s', (_what, input, want) => {
    expect(quoteInput(input)).toBe(want);
  });

  it.each([
    ['invalid UTF-8 bytes as \\xNN', Buffer.from([0x7b, 0xff, 0xfe, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xc0, 0xaf, 0xed, 0xa0, 0x80]), '"{\\xff\\xfeé€\\xc0\\xaf\\xed\\xa0\\x80"'],
    ['a sequence cut at the end', Buffer.from([0x61, 0xe2, 0x82]), '"a\\xe2\\x82"'],
    ['four-byte characters', Buffer.from('🎉', 'utf8'), '"🎉"'],
  ])('bytes: %s', (_what, input, want) => {
    expect(quoteInput(input)).toBe(want);
  });

  it('cuts long input and says how long it was', () => {
    expect(quoteInput('x'.repeat(100))).toBe(`"${'x'.repeat(EXCERPT_CHARS)}"... (100 chars)`);
    expect(quoteInput(Buffer.alloc(5000, 0x41), 10)).toBe('"AAAAAAAAAA"... (5000 bytes)');
    expect(quoteInput('x'.repeat(EXCERPT_CHARS))).toBe(`"${'x'.repeat(EXCERPT_CHARS)}"`);
  });

  it('never lets an unsafe character through and stays short, for any bytes or string', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)), fc.string({ unit: 'binary', maxLength: 300 })), (input) => {
        const q = quoteInput(input);
        expect(q).not.toMatch(UNSAFE);
        expect(q.length).toBeLessThanOrEqual(2 + EXCERPT_CHARS * 10 + 30);
      }),
      { numRuns: 500 },
    );
  });
});

describe('quoteValue, showToken, safeLine, jsonErrorReason', () => {
  it('names values: strings quoted, others as short JSON', () => {
    expect(quoteValue('a\u0007')).toBe('"a\\x07"');
    expect(quoteValue(7)).toBe('7');
    expect(quoteValue(undefined)).toBe('undefined');
    expect(quoteValue({ k: 'x'.repeat(100) })).toMatch(/^"\{\\"k\\":\\"x+"\.\.\. \(\d+ chars\)$/);
    expect(showToken('user/message')).toBe('user/message');
    expect(showToken(12)).toBe('12');
    expect(showToken('two words')).toBe('"two words"');
  });

  it('safeLine makes one line without controls', () => {
    expect(safeLine('a\nb\r\n  c\u001b[2J\u0007')).toBe('a b c\\x1b[2J\\x07');
  });

  it('jsonErrorReason drops the raw input V8 quotes', () => {
    const reason = (text: string): string => {
      try {
        JSON.parse(text);
      } catch (err) {
        return jsonErrorReason(err);
      }
      throw new Error('parsed');
    };
    const r = reason('{"a":\u0001\u001b[31m garbage garbage garbage');
    expect(r).toBe('unexpected character "\\x01"');
    expect(reason('{"a":1}x')).toBe('unexpected data after the JSON value at position 7');
    expect(reason('{"a":')).toBe('unexpected end of JSON input');
    for (const t of ['\u001b[31m', '{\u0000}', '[1,\u202e', '"\ud800']) expect(reason(t)).not.toMatch(UNSAFE);
  });
});
