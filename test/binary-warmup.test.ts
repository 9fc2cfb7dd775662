/**
 * The workers' JIT warm-up warms the binary path (binary frames, MessagePack to JSON) only for a
 * store that has binary sessions or writes binary (issue 12 start-up: those logs were two of the
 * warm-up's three, ~0.7 s of a start's CPU for stores holding none). The store answers the
 * workers from its writer's format, its options or its catalog; the warm-up adds the binary logs
 * to its rounds when the answer is known before a round, else runs them as a second phase once
 * told, and warms them when no answer comes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../src/main/store.js';
import { startPagePool } from '../src/main/store/start-pool.js';
import { holdsBinaryLog } from '../src/main/store/binary-logs.js';
import { LocalBackend } from '../src/storage/local/local-backend.js';
import { MemoryBackend } from '../src/storage/memory/memory-backend.js';
import { binaryWarmUpAnswer, decideBinaryWarmUp, type PagePool } from '../src/main/worker-pool.js';
import { warmUpJit } from '../src/workers/jit-warmup.js';
import type { SliceTask } from '../src/workers/slice-protocol.js';
import type { Tier } from '../src/workers/optimization-status.js';
import { writeRandomLog } from './helpers/random-log.js';
import type { SessionEvent } from '../src/core/types.js';

/** A short conversation: user message, streamed answer, final message. */
function conversation(n: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  for (let i = 0; i < n; i++) {
    const seq = out.length;
    out.push({ seq, time: 1_700_000_000_000 + seq, type: 'user/message', data: { content: [{ type: 'text', text: `q${i}` }] } } as SessionEvent);
    out.push({ seq: seq + 1, time: 1_700_000_000_001 + seq, type: 'assistant/chunk', data: { turn: i + 1, step: 1, chunk: { type: 'text-delta', index: 0, text: `a${i}` } } } as SessionEvent);
  }
  return out;
}

async function answerOf(pool: PagePool): Promise<string | null> {
  for (let i = 0; i < 200 && binaryWarmUpAnswer(pool) === 'undecided'; i++) await new Promise((r) => setTimeout(r, 25));
  return binaryWarmUpAnswer(pool);
}

/** A store over `dataDir` on a pool started as `serve` starts it (no JIT warm-up: only the answer is looked at); the pool's answer. */
async function answerFor(dataDir: string, opts: { binary?: boolean; format?: 'binary' } = {}): Promise<string | null> {
  const storeOpts = { dataDir, workers: 1, warmUp: { jit: false, ...(opts.binary === undefined ? {} : { binary: opts.binary }) }, ...(opts.format ? { format: opts.format } : {}) };
  const pool = startPagePool(storeOpts);
  const store = await openStore({ ...storeOpts, startedPool: pool });
  try {
    return await answerOf(pool);
  } finally {
    await store.close();
  }
}

describe("the workers' binary warm-up", () => {
  it('is asked for by a store whose catalog holds a binary session, and not by one holding only JSONL sessions', async () => {
    const jsonl = mkdtempSync(join(tmpdir(), 'binary-warmup-'));
    const mixed = mkdtempSync(join(tmpdir(), 'binary-warmup-'));
    try {
      await writeRandomLog({ events: conversation(12), batches: [{ size: 3, format: 'jsonl' }] }, { dataDir: jsonl, id: 'j' });
      await writeRandomLog({ events: conversation(12), batches: [{ size: 3, format: 'jsonl' }] }, { dataDir: mixed, id: 'j' });
      await writeRandomLog({ events: conversation(12), batches: [{ size: 3, format: 'binary' }] }, { dataDir: mixed, id: 'b' });
      expect(await answerFor(jsonl)).toBe('jsonl');
      expect(await answerFor(mixed)).toBe('binary');
      // An empty store: JSONL only (its writer's default format).
      const empty = mkdtempSync(join(tmpdir(), 'binary-warmup-'));
      try {
        expect(await answerFor(empty)).toBe('jsonl');
        // A store that writes binary knows it before its catalog, as does the operator's setting.
        expect(await answerFor(empty, { format: 'binary' })).toBe('binary');
        expect(await answerFor(empty, { binary: true })).toBe('binary');
      } finally {
        rmSync(empty, { recursive: true, force: true });
      }
      expect(await answerFor(mixed, { binary: false })).toBe('jsonl');
    } finally {
      rmSync(jsonl, { recursive: true, force: true });
      rmSync(mixed, { recursive: true, force: true });
    }
  }, 60_000);

  it("is known before the workers start when a local directory's log begins as a binary one (serve looks first)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'binary-warmup-'));
    try {
      expect(await holdsBinaryLog(new LocalBackend(join(dir, 'missing')))).toBe(null);
      await writeRandomLog({ events: conversation(6), batches: [{ size: 3, format: 'jsonl' }] }, { dataDir: dir, id: 'j' });
      // Only a yes is an answer: a JSONL directory is left to the catalog.
      expect(await holdsBinaryLog(new LocalBackend(dir))).toBe(null);
      await writeRandomLog({ events: conversation(6), batches: [{ size: 3, format: 'binary' }] }, { dataDir: dir, id: 'b' });
      expect(await holdsBinaryLog(new LocalBackend(dir))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the logs through the storage seam, whatever the backend', async () => {
    const memory = new MemoryBackend();
    expect(await holdsBinaryLog(memory)).toBe(null);
    await memory.createExclusive('sessions/j.events', Buffer.from('{"type":"session"}\n'));
    expect(await holdsBinaryLog(memory)).toBe(null);
    await memory.createExclusive('sessions/b.events', Buffer.from('SPF2'));
    expect(await holdsBinaryLog(memory)).toBe(true);
  });

  it('keeps the first answer a pool was given', async () => {
    const pool = startPagePool({ workers: 1, warmUp: { jit: false } });
    try {
      expect(binaryWarmUpAnswer(pool)).toBe('undecided');
      decideBinaryWarmUp(pool, false);
      decideBinaryWarmUp(pool, true);
      expect(binaryWarmUpAnswer(pool)).toBe('jsonl');
    } finally {
      await pool.close();
    }
  });

  describe('warmUpJit', () => {
    /** Which logs each round decoded: 'j' for a JSONL log's task, 'b' for a binary one's. */
    const run = async (binary: (wait: boolean) => boolean | null, answers: (Tier | null)[]) => {
      const seen: string[] = [];
      let asked = 0;
      const decode = (_t: SliceTask, bytes: Buffer) => void seen.push(bytes[0] === 0x7b ? 'j' : 'b');
      const rounds = await warmUpJit(decode, () => answers[Math.min(asked++, answers.length - 1)] ?? null, 120_000, undefined, binary);
      return { rounds, seen: seen.join('') };
    };
    const jsonlRound = 'jjjjj';
    const binaryRound = 'bbbbbbbbbb';

    it('decodes only the JSONL log when told the store has no binary session', async () => {
      const waits: boolean[] = [];
      const r = await run((wait) => (waits.push(wait), wait ? false : null), ['not-optimized', 'not-optimized', 'optimized']);
      expect(r.rounds).toBe(3);
      expect(r.seen).toBe(jsonlRound.repeat(3));
      // Looked at before each round without waiting, waited for once at the end.
      expect(waits.filter((w) => w)).toEqual([true]);
    });

    it('adds the binary logs to the rounds when told before a round, and asks V8 only after two rounds with them', async () => {
      let calls = 0;
      // No answer for the first round; told before the second.
      const r = await run(() => (++calls >= 2 ? true : null), ['not-optimized', 'optimized']);
      expect(r.seen).toBe(jsonlRound + (jsonlRound + binaryRound).repeat(2));
      expect(r.rounds).toBe(3);
    });

    it('runs the binary logs as a phase of their own when told only after the JSONL rounds', async () => {
      const r = await run((wait) => (wait ? true : null), ['not-optimized', 'optimized', 'not-optimized', 'optimized']);
      expect(r.seen).toBe(jsonlRound.repeat(2) + binaryRound.repeat(2));
      expect(r.rounds).toBe(4);
    });

    it('warms both formats together when told at once (the default: as every worker did)', async () => {
      const r = await run(() => true, ['not-optimized', 'optimized']);
      expect(r.seen).toBe((jsonlRound + binaryRound).repeat(2));
    });
  });
});
