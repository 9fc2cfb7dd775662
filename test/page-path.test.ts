/**
 * The page path (planner + workers + assembler) against the reference
 * reader: every page deep-equals the full-materialization oracle, on random
 * logs and on all 121 dsh fixtures, and walking older pages yields every
 * event exactly once.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandRecords, expandRow } from '../src/main/core/chunk-codec.js';
import type { ChunkRow, PageParams, SessionEvent } from '../src/main/core/types.js';
import { readWholeLog, referencePage, type ReferenceLog } from '../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { dshFixtures } from './helpers/fixtures.js';
import { randomLogArb, writeRandomLog, type BatchSpec } from './helpers/random-log.js';

let dir: string;
let store: PagerStore;
/**
 * A second store that splits every page across 4 workers, to exercise
 * slice-edge merging, and gets every slice back as the worker's arena (then
 * hands it back with later tasks), to exercise in-place results.
 */
let splitting: PagerStore;
/** A store with no worker threads (main/inline-pool.ts: one-shot commands), every slice in place, so its arena comes back. */
let inThread: PagerStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-page-'));
  store = await openStore({ dataDir: dir, workers: 2 });
  splitting = await openStore({ dataDir: dir, workers: 4, splitCost: 1, inPlaceBytes: 0 });
  inThread = await openStore({ dataDir: dir, inThread: true, inPlaceBytes: 0 });
});

afterAll(async () => {
  await store?.close();
  await splitting?.close();
  await inThread?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function expectSamePage(s: PagerStore, id: string, log: ReferenceLog, params: PageParams): Promise<void> {
  const expected = referencePage(log, id, params);
  const got = await s.page(id, params);
  expect(got, JSON.stringify(params)).toEqual(expected);
}

/** Walk from the tail with beforeSeq = fromSeq until hasMore is false; every event exactly once. */
async function walk(s: PagerStore, id: string, log: ReferenceLog, maxMessages: number, maxBytes?: number): Promise<void> {
  const seen: SessionEvent[][] = [];
  let params: PageParams = { maxMessages, ...(maxBytes ? { maxBytes } : {}) };
  for (let guard = 0; guard <= log.events.length + 1; guard++) {
    const expected = referencePage(log, id, params);
    const got = await s.page(id, params);
    expect(got).toEqual(expected);
    seen.unshift(expandRecords(got.records));
    if (!got.hasMore) break;
    params = { ...params, throughSeq: got.throughSeq, beforeSeq: got.fromSeq };
  }
  expect(seen.flat()).toEqual(log.events);
}

function eventsOf(file: string): { header: Record<string, unknown>; events: SessionEvent[] } {
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const events: SessionEvent[] = [];
  for (const r of lines.slice(1)) {
    if ('seq0' in r) events.push(...expandRow(r as unknown as ChunkRow));
    else events.push(r as SessionEvent);
  }
  return { header: lines[0] as Record<string, unknown>, events };
}

describe('page path on random logs', () => {
  let n = 0;
  it('every page equals the reference page, through every store', async () => {
    await fc.assert(
      fc.asyncProperty(
        randomLogArb(),
        fc.array(
          fc.record({
            through: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
            before: fc.option(fc.double({ min: 0, max: 1.2, noNaN: true }), { nil: undefined }),
            maxMessages: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
            maxBytes: fc.option(fc.integer({ min: 1, max: 3000 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 6 },
        ),
        fc.integer({ min: 1, max: 4 }),
        async (spec, queries, walkMessages) => {
          const { events } = spec;
          const id = `rand-${n++}`;
          await writeRandomLog(spec, { dataDir: dir, id });
          // Every other log plans from the JSONL sidecar: both planners stay covered.
          if (n % 2 === 0) rmSync(join(dir, 'sessions/index', id, 'frames.idx'), { force: true });
          const log = await readWholeLog(join(dir, 'sessions', `${id}.events`));
          expect(log.events).toEqual(events);
          const last = events.length - 1;
          for (const q of queries) {
            const params: PageParams = {};
            if (q.through !== undefined && last >= 0) params.throughSeq = Math.floor(q.through * last);
            if (q.before !== undefined) params.beforeSeq = Math.floor(q.before * (last + 1));
            if (q.maxMessages !== undefined) params.maxMessages = q.maxMessages;
            if (q.maxBytes !== undefined) params.maxBytes = q.maxBytes;
            await expectSamePage(store, id, log, params);
            await expectSamePage(splitting, id, log, params);
            await expectSamePage(inThread, id, log, params);
          }
          await walk(store, id, log, walkMessages);
          await walk(splitting, id, log, walkMessages, 400);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('page path on the dsh fixtures', () => {
  const files = dshFixtures();
  const batchings: BatchSpec[][] = [[{ size: 7, format: 'jsonl' }], [{ size: 3, format: 'binary' }, { size: 40, format: 'jsonl' }], [{ size: 100000, format: 'binary' }]];

  it.each(files.map((f, i) => [basename(f), f, i] as const))('%s', async (_name, file, i) => {
    const { header, events } = eventsOf(file);
    const id = `fx-${i}`;
    await writeRandomLog({ events, batches: batchings[i % batchings.length] as BatchSpec[] }, { dataDir: dir, id, header });
    if (i % 2 === 1) rmSync(join(dir, 'sessions/index', id, 'frames.idx'), { force: true });
    const log = await readWholeLog(join(dir, 'sessions', `${id}.events`));
    expect(log.events).toEqual(events);
    await expectSamePage(store, id, log, {});
    await expectSamePage(splitting, id, log, { maxMessages: 3 });
    await walk(store, id, log, 2);
    await walk(splitting, id, log, 1 + (i % 3), 2000);
    await walk(inThread, id, log, 3);
    if (events.length > 2) {
      const mid = Math.floor(events.length / 2);
      await expectSamePage(store, id, log, { throughSeq: mid, maxMessages: 2 });
      await expectSamePage(splitting, id, log, { throughSeq: events.length - 1, beforeSeq: mid, maxMessages: 1 });
    }
  });
});
