/**
 * The reference reader, the oracle of every later test, against SPEC
 * sections 4 and 5 restated independently here: which events a page holds,
 * that walking older pages covers the log exactly once, and that records are
 * the canonical packing of the page's range.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandRecords, packEvents } from '../src/core/chunk-codec.js';
import type { PageParams, SessionEvent } from '../src/core/types.js';
import { generateSession } from '../src/main/gen/generate.js';
import { sessionPaths } from '../src/main/paths.js';
import { decodeWholeLog, readWholeLog, referencePage, type ReferenceLog } from '../src/main/reference-reader.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { dshFixtures } from './helpers/fixtures.js';
import { randomLogArb, writeRandomLog } from './helpers/random-log.js';

const root = mkdtempSync(join(tmpdir(), 'sp-reference-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** SPEC 5: user/assistant messages whose surfaceOp is absent or "append". */
const counted = (e: SessionEvent): boolean => (e.type === 'user/message' || e.type === 'assistant/message') && (e.surfaceOp === undefined || e.surfaceOp === 'append');
/** SPEC 5: min of seq and the sourceEventSeqs that name an event. */
const group = (e: SessionEvent): number =>
  Math.min(e.seq, ...(Array.isArray(e.sourceEventSeqs) ? (e.sourceEventSeqs as unknown[]).filter((s): s is number => Number.isSafeInteger(s) && (s as number) >= 0) : []));

/** Stored bytes of the frames holding any event of [from, to), from frame extents. */
function storedBytes(log: ReferenceLog, from: number, to: number): number {
  return log.frames.filter((f) => f.seq < to && f.seq + f.count > from).reduce((s, f) => s + f.length, 0);
}

/**
 * The expected fromSeq, as prefix minima: after the k newest counted messages
 * below `end` the cut is the least group start among them; the walk stops at
 * the first k reaching maxMessages or (k >= 1) passing maxBytes; no stop means 0.
 */
function expectedFrom(log: ReferenceLog, end: number, maxMessages: number, maxBytes?: number): number {
  const newestFirst = log.events.slice(0, Math.max(end, 0)).filter(counted).reverse();
  let cut = end;
  for (let k = 1; k <= newestFirst.length; k++) {
    cut = Math.min(cut, group(newestFirst[k - 1] as SessionEvent));
    if (k === maxMessages || (maxBytes !== undefined && storedBytes(log, cut, end) > maxBytes)) return cut;
  }
  return 0;
}

/** Walk from the tail to the start; check every page against the SPEC; return the pages' ranges. */
function walk(log: ReferenceLog, params: Omit<PageParams, 'beforeSeq'>): [number, number][] {
  const ranges: [number, number][] = [];
  const last = log.events.length - 1;
  let before: number | undefined;
  for (let guard = 0; guard <= log.events.length + 1; guard++) {
    const page = referencePage(log, 's', { ...params, ...(before === undefined ? {} : { beforeSeq: before }) });
    const through = params.throughSeq ?? last;
    const end = Math.min(through + 1, before ?? Infinity);
    expect(page).toMatchObject({ sessionId: 's', throughSeq: through, toSeq: Math.max(end, 0), hasMore: page.fromSeq > 0 });
    expect(page.fromSeq).toBe(expectedFrom(log, end, params.maxMessages ?? 50, params.maxBytes));
    const slice = log.events.slice(page.fromSeq, page.toSeq);
    expect(page.records).toStrictEqual(packEvents(slice));
    expect(expandRecords(page.records)).toStrictEqual(slice);
    // maxBytes never stops the walk before one counted message.
    const newest = slice.filter(counted).pop();
    if (page.hasMore) expect(newest, 'a page that stops early holds a counted message').toBeDefined();
    if (page.toSeq > page.fromSeq) ranges.push([page.fromSeq, page.toSeq]);
    if (!page.hasMore) return ranges;
    before = page.fromSeq;
  }
  throw new Error('walk did not end');
}

/** Walking older pages covers [0, to) exactly once, newest first. */
function expectExactCover(ranges: [number, number][], to: number): void {
  let expectTo = to;
  for (const [from, end] of ranges) {
    expect(end).toBe(expectTo);
    expect(from).toBeLessThan(end);
    expectTo = from;
  }
  expect(expectTo).toBe(0);
}

const paramsArb = fc.record({
  maxMessages: fc.integer({ min: 1, max: 6 }),
  maxBytes: fc.option(fc.integer({ min: 1, max: 4000 }), { nil: undefined }),
});

describe('referencePage on random logs', () => {
  it('walks every event exactly once; each page follows SPEC sections 4 and 5', async () => {
    await fc.assert(
      fc.asyncProperty(randomLogArb({ maxPieces: 25 }), paramsArb, fc.double({ min: 0, max: 1, noNaN: true }), async (spec, params, at) => {
        const r = await writeRandomLog(spec, { dataDir: join(root, `r${n++}`) });
        const log = await readWholeLog(sessionPaths(r.dataDir, r.id).events);
        expect(log.events).toStrictEqual(spec.events);
        expectExactCover(walk(log, params), spec.events.length);
        // A pinned throughSeq cuts every page there, however long the log.
        if (spec.events.length > 0) {
          const through = Math.floor(at * (spec.events.length - 1));
          expectExactCover(walk(log, { ...params, throughSeq: through }), through + 1);
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('referencePage on generated logs', () => {
  let log: ReferenceLog;
  beforeAll(async () => {
    const dir = join(root, 'gen');
    await generateSession(dir, { id: 'g', events: 40_000, tailEvents: 3000, seed: 5, format: 'binary' });
    log = await readWholeLog(sessionPaths(dir, 'g').events);
  });

  it.each([{ maxMessages: 50 }, { maxMessages: 7 }, { maxMessages: 1000 }, { maxMessages: 3, maxBytes: 1 }, { maxMessages: 20, maxBytes: 50_000 }])('walks the whole log with %j', (params) => {
    expectExactCover(walk(log, params), log.events.length);
  });

  it('maxBytes stops once the covered bytes pass it, not when they reach it', () => {
    const end = log.events.length;
    const first = group(log.events.filter(counted).pop() as SessionEvent);
    const bytes = storedBytes(log, first, end);
    // Exactly at the target the walk goes on to older messages; one byte under, it stops after the first.
    expect(referencePage(log, 's', { maxBytes: bytes }).fromSeq).toBeLessThan(first);
    expect(referencePage(log, 's', { maxBytes: bytes - 1 }).fromSeq).toBe(first);
  });

  it('the newest page with maxBytes 1 is still one whole message group', () => {
    const page = referencePage(log, 's', { maxBytes: 1 });
    const lastCounted = log.events.filter(counted).pop() as SessionEvent;
    expect(page.fromSeq).toBe(group(lastCounted));
    expect(page.toSeq).toBe(log.events.length);
  });
});

describe('referencePage on the dsh fixtures', () => {
  const files = dshFixtures();
  it.each(files.map((f) => [basename(f), f]))('%s: pages of 2 messages cover the log exactly once', (_name, file) => {
    const log = decodeWholeLog(readFileSync(file));
    expectExactCover(walk(log, { maxMessages: 2 }), log.events.length);
  });
});

describe('referencePage parameters', () => {
  let log: ReferenceLog;
  let empty: ReferenceLog;
  beforeAll(async () => {
    const dir = join(root, 'params');
    const w = await SessionWriter.create(dir, 'p', {});
    await w.append(Array.from({ length: 10 }, (_, seq) => ({ type: 'user/message', seq, time: seq, data: {} })));
    await w.close();
    await (await SessionWriter.create(dir, 'e', {})).close();
    log = await readWholeLog(sessionPaths(dir, 'p').events);
    empty = await readWholeLog(sessionPaths(dir, 'e').events);
  });

  it('an empty session has throughSeq -1 and an empty page', () => {
    expect(referencePage(empty, 'e')).toEqual({ sessionId: 'e', throughSeq: -1, fromSeq: 0, toSeq: 0, hasMore: false, records: [] });
  });

  it('defaults to 50 messages through the last seq; beforeSeq past the end changes nothing', () => {
    expect(referencePage(log, 'p')).toMatchObject({ throughSeq: 9, fromSeq: 0, toSeq: 10, hasMore: false });
    expect(referencePage(log, 'p', { maxMessages: 3, beforeSeq: 100 })).toMatchObject({ fromSeq: 7, toSeq: 10, hasMore: true });
    expect(referencePage(log, 'p', { maxMessages: 3, beforeSeq: 0 })).toMatchObject({ fromSeq: 0, toSeq: 0, hasMore: false, records: [] });
  });

  it.each([{ throughSeq: 10 }, { throughSeq: -1 }, { throughSeq: 1.5 }, { maxMessages: 0 }, { maxMessages: 1001 }, { maxBytes: 0 }, { beforeSeq: -1 }, { beforeSeq: 2 ** 53 }])('rejects %j as invalid_request', (params) => {
    expect(() => referencePage(log, 'p', params)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });
});
