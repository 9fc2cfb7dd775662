/**
 * Runs of one or two members are written as events, straight from their
 * member tokens (core/fragment-run.ts, writeShortRun): whatever whitespace a
 * hand-formatted row had between its tokens, the events equal chunkEvent's;
 * and they are the same bytes whether the run settles inside the slice (the
 * encoder writes it) or is left open at its edge (the assembler writes it).
 */
import { describe, expect, it } from 'vitest';
import { chunkEvent, type RunKey } from '../src/core/chunk-codec.js';
import { assemblePage, parseSlice } from '../src/main/page-assembler.js';
import type { Page } from '../src/core/types.js';
import { scanJsonlRow } from '../src/streams/jsonl-row-scanner.js';
import { SliceEncoder } from '../src/workers/slice-encoder.js';

function page(buf: ArrayBuffer, fromSeq: number, toSeq: number): Page {
  const body = assemblePage({ sessionId: 's', throughSeq: toSeq - 1, fromSeq, toSeq, hasMore: fromSeq > 0 }, [parseSlice(buf)]);
  return JSON.parse(body.toString('utf8')) as Page;
}

function bodyOf(buf: ArrayBuffer, fromSeq: number, toSeq: number): string {
  return assemblePage({ sessionId: 's', throughSeq: toSeq - 1, fromSeq, toSeq, hasMore: fromSeq > 0 }, [parseSlice(buf)]).toString('utf8');
}

/** A record, the row's members [from, to), a record: the run settles inside the slice. */
function enc2(row: NonNullable<ReturnType<typeof scanJsonlRow>>, from: number, to: number): ArrayBuffer {
  const enc = new SliceEncoder();
  enc.event({ type: 'user/message', seq: 9, time: 1, data: {} });
  enc.rawRow(row, from, to);
  enc.event({ type: 'user/message', seq: 10 + to, time: 2, data: {} });
  return enc.finish();
}

describe('short runs written as events', () => {
  const rows = [
    '{"type":"text-chunks","seq0":10,"time0":1000,"data":{"turn":1,"step":2,"index":0,"dt":[5, 7, 9],"texts":["a" , "b\\u00e9",\t"c" ,"d"]}}',
    '{"type":"tool-call-chunks","seq0":10,"time0":1000,"data":{"turn":1,"step":2,"index":3,"id":"call-1","name":"bash","dt":[5,7,9],"args":["{\\"x\\"" ,  ":1" , "}", ""]}}',
    '{"type":"reasoning-chunks","seq0":10,"time0":1000,"data":{"turn":1,"step":2,"index":0,"dt":[ 5 , 7 , 9 ],"texts":[ "p" , "q" , "r" , "s" ]}}',
  ];
  for (const line of rows) {
    it(`cuts of one and two members: ${line.slice(9, 30)}`, () => {
      const b = Buffer.from(line);
      const row = scanJsonlRow(b, 0, b.length);
      expect(row).not.toBeNull();
      const parsed = JSON.parse(line) as { seq0: number; time0: number; data: { dt: number[]; texts?: string[]; args?: string[] } };
      const members = parsed.data.texts ?? parsed.data.args ?? [];
      const key = row?.key as RunKey;
      for (const [from, to] of [[1, 3], [2, 3], [0, 2], [3, 4]] as const) {
        const enc = new SliceEncoder();
        enc.event({ type: 'user/message', seq: 9, time: 1, data: {} }); // a record first, so the run settles in the body
        enc.rawRow(row as NonNullable<typeof row>, from, to);
        enc.event({ type: 'user/message', seq: 10 + to, time: 2, data: {} });
        const got = page(enc.finish(), 9, 11 + to).records.slice(1, -1);
        let time = parsed.time0;
        const want = [];
        for (let k = 0; k < to; k++) {
          if (k > 0) time += parsed.data.dt[k - 1] as number;
          if (k >= from) want.push({ event: chunkEvent(key, parsed.seq0 + k, time, members[k] as string) });
        }
        expect(got).toEqual(want);
        // The same run at the slice's start: kept apart as its head run, settled by the assembler.
        const edge = new SliceEncoder();
        edge.rawRow(row as NonNullable<typeof row>, from, to);
        edge.event({ type: 'user/message', seq: 10 + to, time: 2, data: {} });
        const runBytes = (text: string) => text.slice(text.indexOf('{"event":{"type":"assistant/chunk"'), text.lastIndexOf(',{"event":{"type":"user/message"'));
        const inside = runBytes(bodyOf(enc2(row as NonNullable<typeof row>, from, to), 9, 11 + to));
        expect(runBytes(bodyOf(edge.finish(), 10 + from, 11 + to))).toBe(inside);
        // Tokens as stored: the row's escape stays an escape in the page, wherever the run lies.
        if (line.includes('\\u00e9') && from <= 1 && to >= 2) expect(inside).toContain('\\u00e9');
      }
    });
  }
});
