/**
 * The worker-fault suite (issue 16), against a real server process: frames
 * crafted so that only the page decoder trips on them (the sidecars index
 * them as ordinary events) fail the page that covers them with
 * `corrupt_range`, the worker pool keeps its threads (the same thread ids
 * before and after, nothing replaced), and every later page is exact.
 *
 * Crafted frames, each in place of an event frame of the same length (the
 * entry sidecar and the metadata are left as the writer wrote them):
 * - JSONL nested tens of thousands deep (a recursive parser overflows its stack);
 * - JSONL that is valid but whose event breaks the record rules;
 * - binary frames with a valid CRC over MessagePack that is truncated,
 *   nested deep, of a type JSON cannot hold, or not a record at all;
 * with and without the checksum projection (which proves a JSONL frame
 * changed before it is parsed).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EntryLine, Page, SessionEvent } from '../src/core/types.js';
import { readWholeLog, referencePage, type ReferenceLog } from '../src/main/reference-reader.js';
import { writeRandomLog } from './helpers/random-log.js';
import { get, startFaultServer } from './helpers/fault-server.js';
import type { ServerProcess } from './helpers/server-process.js';

const LONG = process.env.SESSION_PAGER_FAULTS_LONG === '1';
const ROUNDS = LONG ? 20 : 2;
const figures = { crafted: 0, pagesRefused: 0, pagesExact: 0, threadsReplaced: 0 };

let dir: string;
let server: ServerProcess;

/** A conversation with one big event per turn (room for a crafted frame of its length). */
function conversation(turns: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  const push = (e: Record<string, unknown>) => out.push({ ...e, seq: out.length, time: 1_700_000_000_000 + out.length } as SessionEvent);
  for (let t = 0; t < turns; t++) {
    push({ type: 'user/message', data: { text: `q${t}` } });
    for (let k = 0; k < 4; k++) push({ type: 'assistant/chunk', data: { turn: t, step: 0, chunk: { type: 'text-delta', index: 0, text: `w${k}` } } });
    push({ type: 'tool/result', data: { out: 'x'.repeat(70_000) } });
    push({ type: 'assistant/message', data: { text: `a${t}` } });
  }
  return out;
}

/** A JSONL event line of exactly `length` bytes (newline included): `body` inside, padded with spaces. */
function jsonlOfLength(length: number, body: string): Buffer {
  const line = Buffer.from(body);
  expect(line.length).toBeLessThan(length);
  return Buffer.concat([line, Buffer.alloc(length - line.length - 1, 0x20), Buffer.from('\n')]);
}

/** An SPF2 frame of exactly `length` bytes around `payload` (padded with MessagePack-irrelevant trailing bytes only when asked). */
function spf2(payload: Buffer): Buffer {
  const h = Buffer.alloc(16);
  h.write('SPF2', 0, 'latin1');
  h.writeUInt16LE(2, 4);
  h.writeUInt16LE(1, 6);
  h.writeUInt32LE(payload.length, 8);
  h.writeUInt32LE(crc32(payload), 12);
  return Buffer.concat([h, payload]);
}

/** MessagePack: a fixmap {type: "tool/result", seq, time, data: <value>} with `value` given as bytes. */
function msgpackEvent(seq: number, value: Buffer): Buffer {
  const str = (s: string) => Buffer.concat([Buffer.from([0xa0 | s.length]), Buffer.from(s)]);
  const u32 = (n: number) => Buffer.from([0xce, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
  const f64 = (n: number) => {
    const b = Buffer.alloc(9);
    b[0] = 0xcb;
    b.writeDoubleBE(n, 1);
    return b;
  };
  return Buffer.concat([Buffer.from([0x84]), str('type'), str('tool/result'), str('seq'), u32(seq), str('time'), f64(1_700_000_000_000 + seq), str('data'), value]);
}

interface Crafted {
  name: string;
  format: 'jsonl' | 'binary';
  /** The crafted frame for an event at `seq` stored in `length` bytes. */
  make(seq: number, length: number): Buffer;
}

const DEEP = 60_000;
const CRAFTED: Crafted[] = [
  { name: 'JSONL nested 30,000 deep', format: 'jsonl', make: (seq, length) => jsonlOfLength(length, `{"type":"tool/result","seq":${seq},"time":1,"data":${'['.repeat(DEEP / 2)}${']'.repeat(DEEP / 2)}}`) },
  { name: 'JSONL valid, but an event without a time', format: 'jsonl', make: (seq, length) => jsonlOfLength(length, `{"type":"tool/result","seq":${seq},"data":{}}`) },
  { name: 'JSONL valid, but a packed row whose gaps do not fit its members', format: 'jsonl', make: (seq, length) => jsonlOfLength(length, `{"type":"text-chunks","seq0":${seq},"time0":1,"data":{"turn":0,"step":0,"index":0,"dt":[1,1,1,1],"texts":["a","b","c"]}}`) },
  { name: 'SPF2 with a valid CRC over truncated MessagePack', format: 'binary', make: (seq) => spf2(msgpackEvent(seq, Buffer.from([0xdb, 0x00, 0x01, 0x00, 0x00, 0x61]))) },
  { name: 'SPF2 with a valid CRC over MessagePack nested 30,000 deep', format: 'binary', make: (seq) => spf2(msgpackEvent(seq, Buffer.concat([Buffer.alloc(DEEP / 2, 0x91), Buffer.from([0xc0])]))) },
  { name: 'SPF2 with a valid CRC over a MessagePack timestamp', format: 'binary', make: (seq) => spf2(msgpackEvent(seq, Buffer.from([0xd6, 0xff, 0, 0, 0, 1]))) },
  { name: 'SPF2 with a valid CRC over a MessagePack string, not a record', format: 'binary', make: () => spf2(Buffer.from([0xa3, 0x61, 0x62, 0x63])) },
];

interface Victim {
  id: string;
  log: ReferenceLog;
  entry: EntryLine;
}

/** A session whose middle big event frame is replaced by `c`, in its place and length; sidecars as written. */
async function craftSession(id: string, c: Crafted, keepChecksums: boolean): Promise<Victim> {
  await writeRandomLog({ events: conversation(8), batches: [{ size: 3, format: c.format }] }, { dataDir: dir, id });
  const logPath = join(dir, 'sessions', `${id}.events`);
  const log = await readWholeLog(logPath);
  const entries = readFileSync(join(dir, 'sessions/index', `${id}.entries.jsonl`), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as EntryLine);
  const big = entries.filter((e) => e.kind === 'tool/result');
  const entry = big[Math.floor(big.length / 2)] as EntryLine;
  let frame = c.make(entry.seq, entry.length);
  const bytes = readFileSync(logPath);
  if (frame.length < entry.length) {
    // A binary frame shorter than the event it replaces: its entry keeps its length, so the
    // frame is followed, inside that length, by a JSONL line of spaces the decoder never reaches.
    expect(c.format).toBe('binary');
    frame = Buffer.concat([frame, Buffer.alloc(entry.length - frame.length, 0x20)]);
  }
  expect(frame.length).toBe(entry.length);
  frame.copy(bytes, entry.offset);
  writeFileSync(logPath, bytes);
  if (!keepChecksums) for (const n of ['frames.crc2', 'frames.meta']) rmSync(join(dir, 'sessions/index', id, n), { force: true });
  return { id, log, entry };
}

/** The pool's live thread ids, from the metrics the server exports. */
async function threadIds(): Promise<string> {
  const m = await get(server.url, '/metrics');
  expect(m.status).toBe(200);
  return m.text
    .split('\n')
    .filter((l) => l.startsWith('session_pager_pool_thread_info{'))
    .map((l) => /thread_id="(\d+)"/.exec(l)?.[1])
    .sort()
    .join(',');
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-fault-worker-'));
  server = await startFaultServer(dir, 2);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
  process.stderr.write(`worker-fault suite${LONG ? ' (long)' : ''}: ${JSON.stringify(figures)}\n`);
});

describe('worker-fault suite (real server process)', () => {
  it('frames only the decoder trips on fail their page with corrupt_range; the pool keeps its threads; later pages are exact', async () => {
    const before = await threadIds();
    expect(before.split(',').length).toBe(2);
    let n = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of CRAFTED) {
        for (const keep of [true, false]) {
          const v = await craftSession(`w${n++}`, c, keep);
          const what = `${c.name}${keep ? '' : ' (no checksum projection)'}`;
          figures.crafted++;
          // Pages that cover it: the whole session, and the page ending at it.
          for (const q of ['?maxMessages=1000', `?throughSeq=${v.entry.seq}&maxMessages=1`]) {
            const a = await get(server.url, `/v1/sessions/${v.id}/page${q}`);
            expect(a.status, `${what} ${q}: ${a.text}`).toBe(422);
            expect((a.body as { error: { code: string; fromSeq: number } }).error, what).toMatchObject({ code: 'corrupt_range', fromSeq: v.entry.seq });
            figures.pagesRefused++;
          }
          // Pages that do not: exact, at once.
          const last = v.log.events.length - 1;
          for (const params of [{ throughSeq: last, maxMessages: 1 }, { throughSeq: v.entry.seq - 1, maxMessages: 2 }]) {
            const a = await get(server.url, `/v1/sessions/${v.id}/page?throughSeq=${params.throughSeq}&maxMessages=${params.maxMessages}`);
            expect(a.status, `${what} after: ${a.text}`).toBe(200);
            expect(a.body as Page, what).toEqual(referencePage(v.log, v.id, params));
            figures.pagesExact++;
          }
        }
      }
    }
    const after = await threadIds();
    if (after !== before) figures.threadsReplaced++;
    expect(after, 'the pool replaced a thread').toBe(before);
  }, 600_000);
});
