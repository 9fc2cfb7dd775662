/**
 * Hand-formatted session logs: valid JSON that no JSON.stringify writes.
 * Every record is written by a serializer of its own here, each in a style
 * picked at random: Python's separators (`", "`, `": "`), non-ASCII and
 * letters as `\u` escapes, `\/`, control characters as `\u00XX`. Packed rows
 * of 1-5 members (a run's edge lands anywhere), single deltas, messages and
 * other events, so short runs (1-2 members, written as events) fall inside
 * slices and at their edges alike. Imported with `importSession` (JSONL lines
 * kept byte for byte, or re-encoded as binary frames).
 */
import fc from 'fast-check';
import type { SessionEvent } from '../../src/core/types.js';

export interface Style {
  /** `,` or `, ` between members and elements. */
  comma: string;
  /** `:` or `: ` after keys. */
  colon: string;
  /** Non-ASCII as `\u` escapes (Python's ensure_ascii). */
  nonAscii: boolean;
  /** `/` as `\/`. */
  slash: boolean;
  /** Some ASCII letters as `\u00XX`. */
  letters: boolean;
}

const styleArb: fc.Arbitrary<Style> = fc.record({
  comma: fc.constantFrom(',', ', ', ' ,\t'),
  colon: fc.constantFrom(':', ': ', ' : '),
  nonAscii: fc.boolean(),
  slash: fc.boolean(),
  letters: fc.boolean(),
});

/** The canonical style: what JSON.stringify writes (short escapes for the control characters it has them for). */
export const CANONICAL: Style = { comma: ',', colon: ':', nonAscii: false, slash: false, letters: false };

const hex4 = (c: number) => `\\u${c.toString(16).padStart(4, '0')}`;
const SHORT: Record<string, string> = { '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A JSON string token of `s` in `st`'s style. */
export function jsonString(s: string, st: Style): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const u = s.charCodeAt(i);
    const ch = s[i] as string;
    const hi = u >= 0xd800 && u <= 0xdbff;
    const lo = u >= 0xdc00 && u <= 0xdfff;
    const paired = hi && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff;
    const lonePrev = lo && !(i > 0 && s.charCodeAt(i - 1) >= 0xd800 && s.charCodeAt(i - 1) <= 0xdbff);
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (u < 0x20) out += st.letters || SHORT[ch] === undefined ? hex4(u) : (SHORT[ch] as string);
    else if (ch === '/') out += st.slash ? '\\/' : '/';
    else if ((hi && !paired) || lonePrev) out += hex4(u); // a lone surrogate has no UTF-8: always escaped
    else if (u > 0x7e && st.nonAscii) out += hex4(u);
    else if (st.letters && /[aeiouAE]/.test(ch)) out += hex4(u);
    else out += ch;
  }
  return `${out}"`;
}

/** `v` as JSON in `st`'s style (object keys in their own order). */
export function jsonValue(v: unknown, st: Style): string {
  if (typeof v === 'string') return jsonString(v, st);
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((x) => jsonValue(x, st)).join(st.comma)}]`;
  return `{${Object.entries(v as Record<string, unknown>)
    .map(([k, x]) => `${jsonString(k, st)}${st.colon}${jsonValue(x, st)}`)
    .join(st.comma)}}`;
}

/** Member strings that JSON lets a writer spell many ways. */
const memberArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('é', ' café', '/', 'a/b', '</s>', '"', '\\', '\n', '\t', '\u0001', '\u2028', ' 文件', '😀', 'x', ' the', '{"', '"}', '\ud800', 'end \udc00') },
  { weight: 2, arbitrary: fc.string({ maxLength: 5, unit: 'binary' }) },
);

type Item =
  | { t: 'msg'; type: 'user/message' | 'assistant/message'; text: string; style: Style }
  | { t: 'row'; kind: 'text' | 'reasoning' | 'tool'; index: number; members: string[]; gaps: number[]; style: Style }
  | { t: 'delta'; kind: 'text' | 'reasoning' | 'tool'; index: number; member: string; gap: number; style: Style }
  | { t: 'other'; text: string; style: Style };

const kindArb = fc.constantFrom('text' as const, 'reasoning' as const, 'tool' as const);
const itemArb: fc.Arbitrary<Item> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ t: fc.constant('msg' as const), type: fc.constantFrom('user/message' as const, 'assistant/message' as const), text: memberArb, style: styleArb }) },
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('row' as const),
      kind: kindArb,
      index: fc.integer({ min: 0, max: 1 }),
      members: fc.array(memberArb, { minLength: 1, maxLength: 5 }),
      gaps: fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 4, maxLength: 4 }),
      style: styleArb,
    }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('delta' as const), kind: kindArb, index: fc.integer({ min: 0, max: 1 }), member: memberArb, gap: fc.integer({ min: 0, max: 30 }), style: styleArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('other' as const), text: memberArb, style: styleArb }) },
);

/** A random hand-formatted log of `min`-`max` records after its header. */
export function handFormattedLogArb(min: number, max: number): fc.Arbitrary<Item[]> {
  return fc.array(itemArb, { minLength: min, maxLength: max });
}

function chunk(kind: 'text' | 'reasoning' | 'tool', index: number, member: string): Record<string, unknown> {
  if (kind === 'tool') return { type: 'tool-call-delta', index, id: 'call/é', name: 'bash', argumentsDelta: member };
  return { type: `${kind}-delta`, index, text: member };
}

/** The log's JSONL text (header first) and its logical events. */
export function handFormattedLog(items: readonly Item[], id: string): { text: string; events: SessionEvent[] } {
  const lines = [jsonValue({ type: 'session', version: 1, id, createdAt: 1_700_000_000_000, title: 'hand/formatted é' }, { ...CANONICAL, comma: ', ', colon: ': ', nonAscii: true })];
  const events: SessionEvent[] = [];
  let seq = 0;
  let time = 1_700_000_000_000;
  for (const it of items) {
    switch (it.t) {
      case 'msg': {
        const e = { type: it.type, seq, time, data: { text: it.text, parts: [{ kind: 'text', text: it.text }] } };
        lines.push(jsonValue(e, it.style));
        events.push(e);
        seq++;
        break;
      }
      case 'other': {
        const e = { type: 'tool/result', seq, time, data: { output: it.text, path: '/tmp/é' } };
        lines.push(jsonValue(e, it.style));
        events.push(e);
        seq++;
        break;
      }
      case 'delta': {
        time += it.gap;
        const e = { type: 'assistant/chunk', seq, time, data: { turn: 0, step: 0, chunk: chunk(it.kind, it.index, it.member) } };
        lines.push(jsonValue(e, it.style));
        events.push(e);
        seq++;
        break;
      }
      case 'row': {
        const n = it.members.length;
        const dt = it.gaps.slice(0, n - 1);
        const data: Record<string, unknown> = { turn: 0, step: 0, index: it.index };
        if (it.kind === 'tool') Object.assign(data, { id: 'call/é', name: 'bash', dt, args: it.members });
        else Object.assign(data, { dt, texts: it.members });
        const type = it.kind === 'tool' ? 'tool-call-chunks' : `${it.kind}-chunks`;
        lines.push(jsonValue({ type, seq0: seq, time0: time, data }, it.style));
        for (let k = 0; k < n; k++) {
          if (k > 0) time += dt[k - 1] as number;
          events.push({ type: 'assistant/chunk', seq, time, data: { turn: 0, step: 0, chunk: chunk(it.kind, it.index, it.members[k] as string) } });
          seq++;
        }
        break;
      }
    }
    time += 1;
  }
  return { text: `${lines.join('\n')}\n`, events };
}
