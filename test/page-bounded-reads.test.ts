/**
 * Guard: the page path reads the page's frames, a bounded slice of the
 * entry sidecar and the projections' records for those frames, never the
 * whole log, sidecar or projection. Counted in bytes,
 * so no future change can slip a full scan into a normal path.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/core/types.js';
import { coveredBytes, readWholeLog, referencePage, type ReferenceLog } from '../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { ENTRY_BLOCK_BYTES, entryReadStats } from '../src/streams/entries-file.js';
import { projectionReadStats } from '../src/streams/record-file.js';
import { writeRandomLog } from './helpers/random-log.js';

let dir: string;
let store: PagerStore;
let log: ReferenceLog;
let sidecarBytes: number;
let logBytes: number;
let projectionBytes: number;

/** ~120k events: many turns, each a user message, a 40-delta answer (unpacked across batches) and its message. */
function bigSession(): SessionEvent[] {
  const out: SessionEvent[] = [];
  const push = (e: Record<string, unknown>) => out.push({ ...e, seq: out.length, time: 5_000 + out.length } as SessionEvent);
  for (let t = 0; out.length < 120_000; t++) {
    push({ type: 'user/message', data: { text: `question ${t}` }, surfaceOp: 'append' });
    const first = out.length;
    for (let k = 0; k < 40; k++) push({ type: 'assistant/chunk', data: { turn: t, step: 0, chunk: { type: 'text-delta', index: 0, text: ` tok${k}` } } });
    push({ type: 'assistant/message', data: { text: 'answer' }, surfaceOp: 'append', sourceEventSeqs: Array.from({ length: 40 }, (_, i) => first + i) });
    push({ type: 'tool/call', data: { name: 'bash' } });
  }
  return out;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-guard-'));
  store = await openStore({ dataDir: dir, workers: 2 });
  await writeRandomLog({ events: bigSession(), batches: [{ size: 3, format: 'jsonl' }] }, { dataDir: dir, id: 'big' });
  log = await readWholeLog(join(dir, 'sessions/big.events'));
  sidecarBytes = statSync(join(dir, 'sessions/index/big.entries.jsonl')).size;
  logBytes = statSync(join(dir, 'sessions/big.events')).size;
  projectionBytes = ['frames.crc2', 'frames.meta'].reduce((a, f) => a + statSync(join(dir, 'sessions/index/big', f)).size, 0);
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function measured(params: Record<string, number>) {
  const before = entryReadStats.bytes;
  const projectionsBefore = projectionReadStats.bytes;
  const pb = await store.pageBuffer('big', params);
  const page = JSON.parse(pb.body.toString('utf8'));
  expect(page).toEqual(referencePage(log, 'big', params));
  return { pb, sidecarRead: entryReadStats.bytes - before, projectionsRead: projectionReadStats.bytes - projectionsBefore };
}

describe('bounded reads on the page path', () => {
  it('the session is big enough for the guard to mean something', () => {
    expect(sidecarBytes).toBeGreaterThan(20 * ENTRY_BLOCK_BYTES);
    expect(logBytes).toBeGreaterThan(4 * 1024 * 1024);
  });

  for (const [name, params] of [
    ['tail page', { maxMessages: 10 }],
    ['middle page by throughSeq', { throughSeq: 60_000, maxMessages: 10 }],
    ['older page by beforeSeq', { beforeSeq: 30_000, maxMessages: 5 }],
    ['maxBytes page', { maxBytes: 4096, maxMessages: 1000 }],
  ] as const) {
    it(`${name}: workers read exactly the page's frames, the planner a bounded slice of the sidecar`, async () => {
      const { pb, sidecarRead, projectionsRead } = await measured(params as unknown as Record<string, number>);
      // Log bytes: exactly the frames that hold the page's events.
      expect(pb.logBytesRead).toBe(coveredBytes(log, pb.fromSeq, pb.toSeq));
      expect(pb.logBytesRead).toBe(pb.frameBytes);
      // Sidecar bytes: the page's lines (under 120 bytes each), one block either side, and a binary search.
      const bound = pb.frames * 120 + 2 * ENTRY_BLOCK_BYTES + 64 * 4096;
      expect(sidecarRead).toBeLessThanOrEqual(bound);
      expect(sidecarRead).toBeLessThan(sidecarBytes / 4);
      // Projection records (checksums, 16 bytes, and row metadata, 40): the page's frames' and the one before, plus a binary search.
      expect(projectionsRead).toBeGreaterThan(0);
      expect(projectionsRead).toBeLessThanOrEqual((pb.frames + 1) * (16 + 40) + 64 * 16);
      expect(projectionsRead).toBeLessThan(projectionBytes / 4);
    });
  }
});
