/**
 * Issue 16 items 2 and 9, in process: a damaged projection, entry sidecar
 * or JSONL frame never shapes a 200 page, and never gives anything but
 * `corrupt_range` or `repair_required`. Every page is compared with the
 * reference reader over the log as it is on disk.
 *
 * - frames.idx, frames.crc2, frames.meta: byte by byte, one flipped bit
 *   each. They only speed pages up, so every page must still be served,
 *   exact (from the entry sidecar when the index lies).
 * - the entry sidecar (no index): a page equals the reference or fails.
 * - JSONL frames the writer recorded a checksum for: a changed byte fails
 *   the page that reads it with `corrupt_range`, even when the frame still
 *   parses (a digit of a text, a letter of a key).
 * - a binary frame rewritten with a fresh header CRC: served as the log
 *   holds it (its own CRC decides); with its old CRC, refused.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page, PageParams, SessionEvent } from '../src/core/types.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { writeRandomLog } from './helpers/random-log.js';
import { runCli } from './helpers/maint.js';

let dir: string;
let store: PagerStore;

/** Turns of a conversation: counted messages with groups, packed runs, other events. */
function conversation(turns: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  const push = (e: Record<string, unknown>) => out.push({ ...e, seq: out.length, time: 1_000 + out.length * 3 } as SessionEvent);
  for (let t = 0; t < turns; t++) {
    push({ type: 'user/message', data: { text: `question ${t}` }, ...(t % 3 === 0 ? { surfaceOp: 'append' } : {}) });
    const first = out.length;
    for (let k = 0; k < 6; k++) push({ type: 'assistant/chunk', data: { turn: t, step: 0, chunk: { type: 'text-delta', index: 0, text: `w${k} ` } } });
    push({ type: 'tool/result', data: { ok: true, n: t } });
    if (t % 4 === 1) push({ type: 'assistant/message', data: { text: 'draft' }, surfaceOp: 'replace' });
    push({ type: 'assistant/message', data: { text: `answer ${t}` }, sourceEventSeqs: [first, first + 2] });
  }
  return out;
}

const PARAMS: PageParams[] = [{}, { maxMessages: 3 }, { beforeSeq: 120, maxMessages: 2 }, { maxMessages: 5, maxBytes: 400 }, { throughSeq: 90, maxMessages: 4 }];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-verify-'));
  // No page cache: every page is built from the files as they are now.
  store = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0 });
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function session(id: string): Promise<string> {
  // Small batches: many frames, chains that restart, runs split across appends.
  await writeRandomLog({ events: conversation(24), batches: [{ size: 5, format: 'jsonl' }] }, { dataDir: dir, id });
  return join(dir, 'sessions');
}

/** The page, or the error code it failed with. */
async function outcome(id: string, p: PageParams): Promise<Page | string> {
  try {
    return await store.page(id, p);
  } catch (err) {
    return (err as { code?: string }).code ?? `thrown: ${(err as Error).message}`;
  }
}

/** Flip one bit of the byte at each of `positions` in turn (restoring it after), and check every page each time. */
async function eachFlip(id: string, file: string, positions: number[], check: (got: Page | string, want: Page, at: number) => void): Promise<number> {
  const good = readFileSync(file);
  const log = await readWholeLog(join(dir, 'sessions', `${id}.events`));
  const want = PARAMS.map((p) => referencePage(log, id, p));
  let pages = 0;
  try {
    for (const at of positions) {
      const bad = Buffer.from(good);
      bad[at] = (bad[at] as number) ^ (1 << (at % 8));
      writeFileSync(file, bad);
      for (const [i, p] of PARAMS.entries()) {
        check(await outcome(id, p), want[i] as Page, at);
        pages++;
      }
    }
  } finally {
    writeFileSync(file, good);
  }
  return pages;
}

const every = (n: number, step: number) => Array.from({ length: Math.ceil(n / step) }, (_, i) => i * step);

describe('projections are verified before use', () => {
  it('a flipped bit anywhere in frames.idx never changes or fails a page', async () => {
    const sessions = await session('idx');
    const file = join(sessions, 'index/idx/frames.idx');
    const size = readFileSync(file).length;
    // Every byte of the first record after the header's, of a middle one and of the last; every 13th elsewhere.
    const positions = [...new Set([...every(size, 13), ...Array.from({ length: 32 }, (_, i) => 32 + i), ...Array.from({ length: 32 }, (_, i) => size - 32 + i), ...Array.from({ length: 32 }, (_, i) => 32 * Math.floor(size / 64) + i)])];
    const pages = await eachFlip('idx', file, positions, (got, want, at) => expect(got, `bit flipped at byte ${at}`).toEqual(want));
    expect(pages).toBeGreaterThan(500);
    expect((await store.info('idx')).status).toBe('ok');
  });

  it('a flipped bit in frames.crc2 or frames.meta never changes or fails a page', async () => {
    const sessions = await session('crc');
    for (const name of ['frames.crc2', 'frames.meta']) {
      const file = join(sessions, 'index/crc', name);
      const size = readFileSync(file).length;
      await eachFlip('crc', file, every(size, 11), (got, want, at) => expect(got, `${name}: bit flipped at byte ${at}`).toEqual(want));
    }
  });

  it('a flipped bit in the entry sidecar gives the reference page or corrupt_range / repair_required', async () => {
    const sessions = await session('entries');
    rmSync(join(sessions, 'index/entries/frames.idx'));
    const file = join(sessions, 'index/entries.entries.jsonl');
    const size = readFileSync(file).length;
    const failed = new Map<string, number>();
    await eachFlip('entries', file, every(size, 7), (got, want, at) => {
      if (typeof got === 'string') {
        expect(['corrupt_range', 'repair_required'], `sidecar bit flipped at byte ${at}: ${got}`).toContain(got);
        failed.set(got, (failed.get(got) ?? 0) + 1);
      } else expect(got, `sidecar bit flipped at byte ${at}`).toEqual(want);
    });
    // Digits of seqs, offsets and groups were flipped: some pages must have been refused.
    expect(failed.get('corrupt_range') ?? 0).toBeGreaterThan(0);
  });
});

describe('every frame a page reads is checked against its known CRC', () => {
  it('a changed byte in a JSONL frame is never served, even when the frame still parses', async () => {
    const sessions = await session('log');
    const file = join(sessions, 'log.events');
    const good = readFileSync(file);
    const headerEnd = good.indexOf(0x0a) + 1;
    let refused = 0;
    // Flips that keep the JSON valid: a digit of a text turned into another digit, a letter into another letter.
    const positions: number[] = [];
    for (let at = headerEnd; at < good.length; at++) {
      const c = good[at] as number;
      const prev = good[at - 1] as number;
      if ((c >= 0x30 && c <= 0x37 && prev === 0x77) || (c >= 0x61 && c <= 0x6e && prev >= 0x61 && prev <= 0x7a)) positions.push(at);
    }
    const log = await readWholeLog(file);
    const want = PARAMS.map((p) => referencePage(log, 'log', p));
    try {
      for (const at of positions.filter((_, i) => i % 9 === 0)) {
        const bad = Buffer.from(good);
        bad[at] = (bad[at] as number) ^ 1;
        writeFileSync(file, bad);
        for (const [i, p] of PARAMS.entries()) {
          const got = await outcome('log', p);
          if (typeof got === 'string') {
            // repair_required: the last frame changed, which the session's own checks see first.
            expect(['corrupt_range', 'repair_required'], `log byte ${at}: ${got}`).toContain(got);
            refused++;
          } else {
            // Served: exactly the log as written (a page that covered the changed frame would differ).
            expect(got, `log byte ${at}: a changed frame was served`).toEqual(want[i]);
          }
        }
      }
    } finally {
      writeFileSync(file, good);
    }
    expect(refused).toBeGreaterThan(0);
  });
});

describe('a binary frame rewritten whole, with a fresh header CRC, though the checksum projection recorded its old bytes', () => {
  // The log is canonical and a binary frame carries its own CRC (SPEC section 3): a frame whose
  // payload and header CRC agree was written so, by whoever wrote it, and is served as the log
  // holds it, as the reference reader serves it. The projection's disagreement only takes it off
  // the trusted path. The same edit without a fresh CRC is damage: corrupt_range.
  // (docs/decisions.md, "A binary frame rewritten with a fresh header CRC".)
  it.each([
    ['an event', 'question 5', 'question 6', false],
    ['a packed row', 'w3 ', 'w4 ', true],
  ])('%s: served as rewritten; with its old CRC left, refused', async (_what, from, to, row) => {
    const id = `rewrite-${from.replace(/\W/g, '')}`;
    await writeRandomLog({ events: conversation(24), batches: [{ size: 5, format: 'binary' }] }, { dataDir: dir, id });
    const file = join(dir, 'sessions', `${id}.events`);
    const good = readFileSync(file);
    // The string as MessagePack holds it (a fixstr), inside a binary frame with a checksum record.
    const at = good.indexOf(Buffer.concat([Buffer.from([0xa0 | from.length]), Buffer.from(from)]));
    expect(at).toBeGreaterThan(0);
    const entries = readFileSync(join(dir, `sessions/index/${id}.entries.jsonl`), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; count: number; offset: number; length: number });
    const frame = entries.find((e) => e.offset <= at && at < e.offset + e.length) as { seq: number; count: number; offset: number; length: number };
    expect(good.subarray(frame.offset, frame.offset + 4).toString('latin1')).toBe('SPF2');
    expect(frame.count > 1).toBe(row);
    const crcs = readFileSync(join(dir, `sessions/index/${id}/frames.crc2`));
    const recorded = Array.from({ length: crcs.length / 16 }, (_, k) => crcs.readUInt32LE(16 * k) + crcs.readUInt32LE(16 * k + 4) * 2 ** 32);
    expect(recorded).toContain(frame.offset);
    const edited = Buffer.from(good);
    edited.write(to, at + 1, 'utf8');
    const payload = edited.subarray(frame.offset + 16, frame.offset + frame.length);
    const covering = { throughSeq: frame.seq + Math.max(0, frame.count - 1), maxMessages: 1000 };
    try {
      // Old header CRC: the frame is damaged, and the page that reads it says which events.
      writeFileSync(file, edited);
      const err = await store.page(id, covering).then(() => null, (e: { code?: string; details?: unknown }) => e);
      expect(err?.code).toBe('corrupt_range');
      expect(err?.details).toMatchObject({ fromSeq: frame.seq, offset: frame.offset });
      // A fresh one: served, exactly as the log now holds it.
      edited.writeUInt32LE(crc32(payload), frame.offset + 12);
      writeFileSync(file, edited);
      const log = await readWholeLog(file);
      for (const p of [...PARAMS, covering]) expect(await store.page(id, p)).toEqual(referencePage(log, id, p));
      expect(JSON.stringify(await store.page(id, covering))).toContain(JSON.stringify(to).slice(1, -1));
    } finally {
      writeFileSync(file, good);
    }
  });
});

describe('doctor and reindex', () => {
  it('doctor --deep reports a projection that fails verification; reindex rebuilds the frame index as the writer wrote it', async () => {
    const sessions = await session('doc');
    const idx = join(sessions, 'index/doc/frames.idx');
    const crc = join(sessions, 'index/doc/frames.crc2');
    const meta = join(sessions, 'index/doc/frames.meta');
    const written = readFileSync(idx);
    const deep = async () => JSON.parse((await runCli(['doctor', 'doc', '--deep', '--json', '--data', dir])).stdout) as { sessions: { status: string; issues: { code: string; message: string }[] }[] };
    expect((await deep()).sessions[0]?.status).toBe('ok');
    for (const [file, at] of [
      [idx, 32 * 7 + 16],
      [crc, 16 * 5 + 8],
      [meta, 40 * 3 + 2],
    ] as const) {
      const good = readFileSync(file);
      const bad = Buffer.from(good);
      bad[at] = (bad[at] as number) ^ 0x04;
      writeFileSync(file, bad);
      const r = (await deep()).sessions[0];
      expect(r?.status, file).toBe('degraded');
      expect(r?.issues.map((i) => i.code), file).toEqual(['projection_invalid']);
      expect(r?.issues[0]?.message, file).toContain(file.slice(file.lastIndexOf('/') + 1));
      writeFileSync(file, good);
    }
    writeFileSync(idx, Buffer.concat([written.subarray(0, 64), Buffer.alloc(32, 0xff), written.subarray(96)]));
    expect((await runCli(['reindex', 'doc', '--data', dir])).code).toBe(0);
    // Rebuilt from the log: byte for byte what the writer kept, and doctor is content.
    expect(readFileSync(idx)).toEqual(written);
    expect((await deep()).sessions[0]?.status).toBe('ok');
  });
});
