/**
 * The page path (planner + workers + assembler) against the reference
 * reader: every page deep-equals the full-materialization oracle, on random
 * logs and on all 121 dsh fixtures, and walking older pages yields every
 * event exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readWholeLog } from '../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { dshFixtures } from './helpers/fixtures.js';
import { expectSamePage, fixtureEvents, pageQueriesArb, queryParams, walkPages } from './helpers/page-checks.js';
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
/**
 * A store whose small slices are decoded on this thread while its workers are idle
 * (main/small-slice-pool.ts), cutting pages into many slices so one page mixes both.
 */
let mixed: PagerStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-page-'));
  store = await openStore({ dataDir: dir, workers: 2 });
  splitting = await openStore({ dataDir: dir, workers: 4, splitCost: 1, inPlaceBytes: 0 });
  inThread = await openStore({ dataDir: dir, inThread: true, inPlaceBytes: 0 });
  mixed = await openStore({ dataDir: dir, workers: 2, splitCost: 1, inPlaceBytes: 0, inlineSliceBytes: 4096 });
  // Small slices go inline only after the page path's warm-up (small-slice-pool.ts).
  await mixed.warmUp();
});

afterAll(async () => {
  await store?.close();
  await splitting?.close();
  await inThread?.close();
  await mixed?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('page path on random logs', () => {
  let n = 0;
  it('every page equals the reference page, through every store', async () => {
    await fc.assert(
      fc.asyncProperty(
        randomLogArb(),
        pageQueriesArb({ before: true, maxBytes: true, maxMessages: 'sometimes', maxLength: 6 }),
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
            const params = queryParams(q, last);
            await expectSamePage(store, id, log, params);
            await expectSamePage(splitting, id, log, params);
            await expectSamePage(inThread, id, log, params);
            await expectSamePage(mixed, id, log, params);
          }
          await walkPages(store, id, log, walkMessages);
          await walkPages(splitting, id, log, walkMessages, 400);
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
    const { header, events } = fixtureEvents(file);
    const id = `fx-${i}`;
    await writeRandomLog({ events, batches: batchings[i % batchings.length] as BatchSpec[] }, { dataDir: dir, id, header });
    if (i % 2 === 1) rmSync(join(dir, 'sessions/index', id, 'frames.idx'), { force: true });
    const log = await readWholeLog(join(dir, 'sessions', `${id}.events`));
    expect(log.events).toEqual(events);
    await expectSamePage(store, id, log, {});
    await expectSamePage(splitting, id, log, { maxMessages: 3 });
    await walkPages(store, id, log, 2);
    await walkPages(splitting, id, log, 1 + (i % 3), 2000);
    await walkPages(inThread, id, log, 3);
    await walkPages(mixed, id, log, 2);
    if (events.length > 2) {
      const mid = Math.floor(events.length / 2);
      await expectSamePage(store, id, log, { throughSeq: mid, maxMessages: 2 });
      await expectSamePage(splitting, id, log, { throughSeq: events.length - 1, beforeSeq: mid, maxMessages: 1 });
    }
  });
});
