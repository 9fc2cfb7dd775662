/**
 * Input JSON cannot hold, or that only recursion could walk (issue 16 items
 * 4 and 7): request bodies and records nested past the limit are refused with
 * invalid_request and nothing is written; binary frames whose MessagePack
 * holds a type JSON has not (bin, ext/timestamp, unsafe 64-bit integers,
 * NaN/Infinity, non-string keys, nesting past the limit) are damaged frames:
 * corrupt_range on a page, named by doctor --deep, recorded by reindex, never
 * a 500 or a silently altered value.
 */
import { readdirSync, readFileSync, writeFileSync, appendFileSync, existsSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { join } from 'node:path';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { jsonNestingExceeds, MAX_NESTING_DEPTH, valueNestingExceeds } from '../src/core/nesting.js';
import { msgpackJsonFault } from '../src/streams/msgpack-check.js';
import { BINARY_FRAME_VERSION, decodeFrame, encodeBinaryFrame } from '../src/streams/frame-codec.js';
import { buildServer } from '../src/main/server/index.js';
import { openStore } from '../src/main/store.js';
import { sessionPaths } from '../src/main/paths.js';
import { loadSessionState } from '../src/main/session-state.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { importSession } from '../src/main/maintenance/import.js';
import { reindexSession } from '../src/main/maintenance/reindex.js';
import { runCli, snapshotTree, tempDataDir } from './helpers/maint.js';
import { makeEvents, tempStore, type TempStore } from './server-helpers.js';

const TOKEN = 'test-token-123456';

function nestedJson(depth: number): string {
  return '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);
}
function nestedValue(depth: number): unknown {
  let v: unknown = {};
  for (let i = 1; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

/** An SPF2 frame around raw payload bytes, with the right CRC: only its MessagePack is wrong. */
function rawBinaryFrame(payload: Buffer): Buffer {
  const h = Buffer.alloc(16);
  h.write('SPF2', 0, 'latin1');
  h.writeUInt16LE(BINARY_FRAME_VERSION, 4);
  h.writeUInt16LE(1, 6);
  h.writeUInt32LE(payload.length, 8);
  h.writeUInt32LE(crc32(payload), 12);
  return Buffer.concat([h, payload]);
}

const plain = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });

/** An event's MessagePack whose `data` value is the given raw MessagePack bytes (data is the last key, 0 its last byte). */
function eventWithData(seq: number, dataBytes: string): Buffer {
  const base = Buffer.from(plain.pack({ type: 'custom/x', seq, time: 1000 + seq, data: 0 }));
  expect(base[base.length - 1]).toBe(0);
  return Buffer.concat([base.subarray(0, base.length - 1), Buffer.from(dataBytes.replace(/ /g, ''), 'hex')]);
}

const NOT_JSON: [string, string, RegExp][] = [
  ['uint64 past the safe integers', 'cf 00 20 00 00 00 00 00 00', /uint64 .* beyond the safe integers/],
  ['uint64 max', 'cf ff ff ff ff ff ff ff ff', /uint64/],
  ['int64 below the safe integers', 'd3 ff df ff ff ff ff ff ff', /int64 .* beyond the safe integers/],
  ['timestamp 32', 'd6 ff 00 00 00 01', /timestamp/],
  ['timestamp 96', 'c7 0c ff 00 00 00 00 00 00 00 00 00 00 00 01', /timestamp/],
  ['fixext 1', 'd4 05 00', /ext type 5/],
  ['bin 8', 'c4 02 61 62', /bin/],
  ['bin 16', 'c5 00 01 61', /bin/],
  ['NaN float64', 'cb 7f f8 00 00 00 00 00 00', /not finite/],
  ['Infinity float64', 'cb 7f f0 00 00 00 00 00 00', /not finite/],
  ['NaN float32', 'ca 7f c0 00 00', /not finite/],
  ['integer map key', '81 01 a1 78', /map key .* not a string/],
  ['nil map key', '81 c0 01', /map key .* not a string/],
  ['array map key', '81 90 01', /map key .* not a string/],
  ['never-used 0xc1', 'c1', /0xc1/],
];

describe('msgpackJsonFault', () => {
  it.each(NOT_JSON)('refuses %s', (_what, hex, why) => {
    expect(msgpackJsonFault(eventWithData(1, hex))).toMatch(why);
  });

  it('accepts what JSON holds, including 64-bit integers in the safe range (decoded as numbers)', () => {
    const p = eventWithData(3, 'cf 00 1f ff ff ff ff ff ff');
    expect(msgpackJsonFault(p)).toBeNull();
    const f = decodeFrame(rawBinaryFrame(p), 0, 0);
    expect(f.ok && (f.record as { data: unknown }).data).toBe(Number.MAX_SAFE_INTEGER);
    const n = eventWithData(3, 'd3 ff e0 00 00 00 00 00 01');
    expect(msgpackJsonFault(n)).toBeNull();
    const g = decodeFrame(rawBinaryFrame(n), 0, 0);
    expect(g.ok && (g.record as { data: unknown }).data).toBe(-Number.MAX_SAFE_INTEGER);
  });

  it('accepts every payload the writer encodes from JSON values (fast-check)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (v) => {
        const json = JSON.parse(JSON.stringify({ type: 'custom/x', seq: 0, time: 0, data: v }));
        const frame = encodeBinaryFrame(json);
        expect(msgpackJsonFault(frame.subarray(16))).toBeNull();
        const f = decodeFrame(frame, 0, 0);
        expect(f.ok).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses cut-short payloads and trailing bytes, and nesting past the limit, without recursion', () => {
    const good = eventWithData(1, 'a1 78');
    for (let cut = 1; cut < good.length; cut++) expect(msgpackJsonFault(good.subarray(0, cut))).toMatch(/cut short/);
    expect(msgpackJsonFault(Buffer.concat([good, Buffer.from([0])]))).toMatch(/1 byte\(s\) after/);
    // 100,000 nested one-element arrays: a recursive walk would overflow the stack.
    const deep = Buffer.concat([Buffer.alloc(100_000, 0x91), Buffer.from([0xc0])]);
    expect(msgpackJsonFault(deep)).toMatch(/deeper than 128/);
    expect(msgpackJsonFault(Buffer.concat([Buffer.alloc(127, 0x91), Buffer.from([0xc0])]))).toBeNull();
    expect(msgpackJsonFault(Buffer.concat([Buffer.alloc(128, 0x91), Buffer.from([0xc0])]))).toBeNull();
    expect(msgpackJsonFault(Buffer.concat([Buffer.alloc(129, 0x91), Buffer.from([0xc0])]))).toMatch(/deeper than 128/);
  });
});

describe('nesting checks', () => {
  it('count levels exactly, iteratively, on values and on JSON text', () => {
    for (const d of [1, 2, 127, 128]) {
      expect(valueNestingExceeds(nestedValue(d))).toBe(false);
      expect(jsonNestingExceeds(Buffer.from(nestedJson(d)))).toBe(false);
    }
    for (const d of [129, 200_000]) {
      expect(valueNestingExceeds(nestedValue(d))).toBe(true);
      expect(jsonNestingExceeds(Buffer.from(nestedJson(d)))).toBe(true);
    }
    // Brackets inside strings do not count, escaped quotes do not end them.
    expect(jsonNestingExceeds(Buffer.from(JSON.stringify({ s: '['.repeat(500) + '\\"{{{' })))).toBe(false);
    expect(MAX_NESTING_DEPTH).toBe(128);
  });
});

describe('HTTP: bodies nested past the limit', () => {
  let ts: TempStore;
  let app: FastifyInstance;
  beforeAll(async () => {
    ts = await tempStore(1);
    await ts.store.create('s', {});
    await ts.store.append('s', makeEvents(0, 5));
    app = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0 });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await ts.cleanup();
  });
  const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

  it.each([129, 20_000, 100_000])('PUT with a header nested %i deep: 400 invalid_request, no file written', async (depth) => {
    const before = snapshotTree(ts.dir);
    const res = await app.inject({ method: 'PUT', url: '/v1/sessions/deep', headers: auth, payload: `{"type":"session","x":${nestedJson(depth)}}` });
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body).error).toEqual({ code: 'invalid_request', message: 'session header is nested deeper than 128 levels of objects and arrays' });
    expect(snapshotTree(ts.dir)).toEqual(before);
    expect(existsSync(join(ts.dir, 'sessions', 'deep.events'))).toBe(false);
  });

  it.each([128, 20_000, 100_000])('POST with an event nested %i deep below its data: 400 invalid_request, the log unchanged', async (depth) => {
    const before = snapshotTree(ts.dir);
    const next = await ts.store.nextSeq('s');
    const ev = `{"type":"custom/x","seq":${next},"time":1,"data":${nestedJson(depth)}}`;
    const res = await app.inject({ method: 'POST', url: '/v1/sessions/s/events', headers: auth, payload: `{"events":[${ev}]}` });
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body).error.code).toBe('invalid_request');
    expect(JSON.parse(res.body).error.message).toMatch(/^(events\[0\]: event|request body) is nested deeper than 1[23][08] levels of objects and arrays$/);
    expect(snapshotTree(ts.dir)).toEqual(before);
    const ok = await app.inject({ method: 'POST', url: '/v1/sessions/s/events', headers: auth, payload: JSON.stringify({ events: makeEvents(next, 1) }) });
    expect(ok.statusCode).toBe(200);
  });
});

describe('records nested past the limit, or holding what JSON cannot, in logs', () => {
  let data: { dir: string; cleanup: () => void };
  beforeEach(() => {
    data = tempDataDir('sp-json-only-');
  });
  afterEach(() => data.cleanup());

  it('import refuses a line nested past the limit with its line number, and leaves nothing', async () => {
    const file = join(data.dir, 'in.jsonl');
    writeFileSync(file, `{"type":"session","id":"x"}\n{"type":"custom/x","seq":0,"time":1,"data":${nestedJson(100_000)}}\n`);
    await expect(importSession(data.dir, file, { id: 'x' })).rejects.toMatchObject({ code: 'invalid_request', message: 'in.jsonl line 2: the record is nested deeper than 128 levels of objects and arrays' });
    const left = existsSync(join(data.dir, 'sessions')) ? readdirSync(join(data.dir, 'sessions')).filter((n) => n !== 'index') : [];
    expect(left).toEqual([]);
    if (existsSync(join(data.dir, 'sessions', 'index'))) expect(readdirSync(join(data.dir, 'sessions', 'index'))).toEqual([]);
  });

  /** A session of 30 events (binary frames), with frame `victim` (an event frame) replaced by `bad`. */
  async function sessionWith(bad: Buffer): Promise<{ seq: number; dir: string }> {
    const w = await SessionWriter.create(data.dir, 's', {}, { format: 'binary' });
    for (let i = 0; i < 30; i += 3) await w.append(makeEvents(i, 3).map((e) => ({ ...e, type: e.type === 'assistant/chunk' ? 'custom/chunk' : e.type })));
    await w.close();
    const p = sessionPaths(data.dir, 's');
    // Rewrite the log with frame of seq 12 replaced; reindex to make the sidecars match the new bytes.
    const entries = readFileSync(p.entries, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; offset: number; length: number; count: number });
    const victim = entries.find((e) => e.seq === 12 && e.count === 1);
    if (victim === undefined) throw new Error('no single-event frame at seq 12');
    const log = readFileSync(p.events);
    writeFileSync(p.events, Buffer.concat([log.subarray(0, victim.offset), bad, log.subarray(victim.offset + victim.length)]));
    return { seq: 12, dir: data.dir };
  }

  const cases: [string, Buffer][] = [
    ...NOT_JSON.map(([what, hex]): [string, Buffer] => [what, rawBinaryFrame(eventWithData(12, hex))]),
    ['MessagePack nested 100,000 deep', rawBinaryFrame(eventWithData(12, '91'.repeat(100_000) + 'c0'))],
    ['a JSONL line nested 100,000 deep', Buffer.from(`{"type":"custom/x","seq":12,"time":1,"data":${nestedJson(100_000)}}\n`)],
  ];

  it.each(cases)('%s: reindex keeps it as a damaged range, doctor --deep names it, a page covering it is corrupt_range', async (_what, bad) => {
    await sessionWith(bad);
    const p = sessionPaths(data.dir, 's');
    const r = await reindexSession(p);
    expect(r.analysis.corrupt).toHaveLength(1);
    expect(r.analysis.corrupt[0]).toMatchObject({ fromSeq: 12, toSeq: 13, frames: 1 });
    expect(r.analysis.eventCount).toBe(30);
    const state = await loadSessionState(p);
    expect(state.status).toBe('degraded');
    const d = await runCli(['doctor', 's', '--deep', '--json', '--data', data.dir]);
    const issues = JSON.parse(d.stdout).sessions[0].issues as { code: string; fromSeq: number; toSeq: number }[];
    expect(issues).toEqual([expect.objectContaining({ code: 'corrupt_frame', fromSeq: 12, toSeq: 13 })]);
    const store = await openStore({ dataDir: data.dir, workers: 1 });
    try {
      await expect(store.page('s', { maxMessages: 1000 })).rejects.toMatchObject({ code: 'corrupt_range', details: { fromSeq: 12, toSeq: 13 } });
      // Pages that do not cover it are exact.
      const after = await store.page('s', { beforeSeq: 30, maxMessages: 1 });
      expect(after.fromSeq).toBeGreaterThan(12);
      const older = await store.page('s', { beforeSeq: 12, maxMessages: 1000 });
      expect(older.fromSeq).toBe(0);
      expect(older.toSeq).toBe(12);
    } finally {
      await store.close();
    }
  });
});
