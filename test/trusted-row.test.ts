/**
 * The trusted-row reader (frames whose bytes match the writer's CRC) reads
 * the writer's own JSON.stringify layout exactly as the general scanner does,
 * and declines any other layout rather than misreading it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packEvents } from '../src/main/core/chunk-codec.js';
import { scanJsonlRow, scanTrustedDelta, scanTrustedRow, type RawRow } from '../src/streams/jsonl-row-scanner.js';
import { eventStreamArb } from './helpers/random-log.js';

function view(r: RawRow | null) {
  if (r === null) return null;
  const { buf: _b, ...rest } = r;
  return rest;
}

const rowsArb = eventStreamArb().map((events) => packEvents(events).flatMap((r) => ('chunks' in r ? [r.chunks] : [])));

describe('scanTrustedRow', () => {
  it('reads every row the writer writes as the general scanner does', () => {
    let seen = 0;
    fc.assert(
      fc.property(rowsArb, (rows) => {
        for (const row of rows) {
          const line = Buffer.from(JSON.stringify(row));
          // Both decline rows whose running gap sums leave the safe range (the full decode takes those).
          const trusted = scanTrustedRow(line, 0, line.length);
          expect(view(trusted)).toEqual(view(scanJsonlRow(line, 0, line.length)));
          if (trusted !== null) seen++;
        }
      }),
      { numRuns: 300 },
    );
    expect(seen).toBeGreaterThan(100);
  });

  it('declines other layouts of the same row', () => {
    fc.assert(
      fc.property(rowsArb, (rows) => {
        for (const row of rows) {
          const { data, ...top } = row;
          const reordered = [JSON.stringify({ seq0: top.seq0, ...top, data }), JSON.stringify(row, null, 1), JSON.stringify({ ...row, data: { dt: data.dt, ...data } })];
          for (const text of reordered) {
            const line = Buffer.from(text);
            const r = scanTrustedRow(line, 0, line.length);
            if (r !== null) expect(view(r)).toEqual(view(scanJsonlRow(line, 0, line.length)));
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('scanTrustedDelta', () => {
  const line = (o: unknown) => Buffer.from(JSON.stringify(o));
  const ev = (chunk: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'assistant/chunk', seq: 7, time: 1_700_000_000_123, data: { turn: 1, step: 2, chunk }, ...extra });

  it('reads packable deltas the writer wrote, member token as bytes', () => {
    for (const [chunk, kind] of [
      [{ type: 'text-delta', index: 0, text: 'he said "}}}"' }, 'text'],
      [{ type: 'reasoning-delta', index: 3, text: '' }, 'reasoning'],
      [{ type: 'tool-call-delta', index: 1, id: 'c1', name: 'bash', argumentsDelta: '{"a":1}' }, 'tool'],
      [{ type: 'tool-call-delta', index: 1, id: 'c1', argumentsDelta: 'x' }, 'tool'],
    ] as const) {
      const b = line(ev(chunk));
      const d = scanTrustedDelta(b, 0, b.length);
      expect(d).not.toBeNull();
      expect(d!.key.kind).toBe(kind);
      expect(d!.seq).toBe(7);
      expect(JSON.parse(b.toString('utf8', d!.tokenStart, d!.tokenEnd))).toBe((chunk as Record<string, string>).text ?? (chunk as Record<string, string>).argumentsDelta);
    }
  });

  it('declines anything that is not exactly a packable delta', () => {
    const cases = [
      ev({ type: 'text-delta', index: 0, text: 'x', extra: 'y' }),
      ev({ type: 'text-delta', index: 0, text: 'x' }, { ignorable: true }),
      ev({ type: 'block-start', index: 0 }),
      ev({ type: 'text-delta', text: 'x', index: 0 }),
      { seq: 7, type: 'assistant/chunk', time: 1, data: { turn: 1, step: 2, chunk: { type: 'text-delta', index: 0, text: 'x' } } },
      ev({ type: 'text-delta', index: 0.5, text: 'x' }),
      ev({ type: 'text-delta', index: 0, text: 'x', extra: '}}}' }),
    ];
    for (const c of cases) {
      const b = line(c);
      expect(scanTrustedDelta(b, 0, b.length), JSON.stringify(c)).toBeNull();
    }
  });
});
