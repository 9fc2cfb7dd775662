/**
 * The page checks the page-path suites share (test/page-path.test.ts,
 * test/worker-compression.test.ts, the backend compliance suite): a dsh
 * fixture's events, one page against the reference reader, a walk of older
 * pages from the tail that must yield every event once, and random page
 * queries scaled to a log's length.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { expect } from 'vitest';
import { expandRecords, expandRow } from '../../src/core/chunk-codec.js';
import type { ChunkRow, Page, PageParams, SessionEvent } from '../../src/core/types.js';
import { referencePage, type ReferenceLog } from '../../src/main/reference-reader.js';

/** Anything that answers pages as the store does. */
export interface PageSource {
  page(id: string, params: PageParams): Promise<Page>;
}

/** A dsh fixture's header and logical events (packed rows expanded). */
export function fixtureEvents(file: string): { header: Record<string, unknown>; events: SessionEvent[] } {
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const events: SessionEvent[] = [];
  for (const r of lines.slice(1)) {
    if ('seq0' in r) events.push(...expandRow(r as unknown as ChunkRow));
    else events.push(r as SessionEvent);
  }
  return { header: lines[0] as Record<string, unknown>, events };
}

/** One page from `s` deep-equals the reference reader's page of `log`. */
export async function expectSamePage(s: PageSource, id: string, log: ReferenceLog, params: PageParams): Promise<void> {
  expect(await s.page(id, params), JSON.stringify(params)).toEqual(referencePage(log, id, params));
}

/** Older pages from the tail (beforeSeq = fromSeq) until hasMore is false: each equals the reference, every event exactly once. */
export async function walkPages(s: PageSource, id: string, log: ReferenceLog, maxMessages: number, maxBytes?: number): Promise<void> {
  const seen: SessionEvent[][] = [];
  let params: PageParams = { maxMessages, ...(maxBytes ? { maxBytes } : {}) };
  for (let guard = 0; guard <= log.events.length + 1; guard++) {
    const got = await s.page(id, params);
    expect(got, JSON.stringify(params)).toEqual(referencePage(log, id, params));
    seen.unshift(expandRecords(got.records));
    if (!got.hasMore) break;
    params = { ...params, throughSeq: got.throughSeq, beforeSeq: got.fromSeq };
  }
  expect(seen.flat()).toEqual(log.events);
}

/** A random page query, its cuts as fractions of the log (queryParams scales them). */
export interface PageQuery {
  through?: number | undefined;
  before?: number | undefined;
  maxMessages?: number | undefined;
  maxBytes?: number | undefined;
}

/**
 * Lists of random page queries: `throughSeq` anywhere in the log or absent,
 * and, as asked, `beforeSeq` (to past the end), `maxMessages` 1-6 (always,
 * or sometimes absent) and `maxBytes` 1-3000.
 */
export function pageQueriesArb(o: { before: boolean; maxBytes: boolean; maxMessages: 'always' | 'sometimes'; maxLength: number }): fc.Arbitrary<PageQuery[]> {
  const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
  const maxMessages = fc.integer({ min: 1, max: 6 });
  return fc.array(
    fc.record({
      through: opt(fc.double({ min: 0, max: 1, noNaN: true })),
      before: o.before ? opt(fc.double({ min: 0, max: 1.2, noNaN: true })) : fc.constant(undefined),
      maxMessages: o.maxMessages === 'always' ? maxMessages : opt(maxMessages),
      maxBytes: o.maxBytes ? opt(fc.integer({ min: 1, max: 3000 })) : fc.constant(undefined),
    }),
    { minLength: 1, maxLength: o.maxLength },
  );
}

/** The page parameters of `q` over a log whose last seq is `last` (-1: empty). */
export function queryParams(q: PageQuery, last: number): PageParams {
  const params: PageParams = {};
  if (q.through !== undefined && last >= 0) params.throughSeq = Math.floor(q.through * last);
  if (q.before !== undefined) params.beforeSeq = Math.floor(q.before * (last + 1));
  if (q.maxMessages !== undefined) params.maxMessages = q.maxMessages;
  if (q.maxBytes !== undefined) params.maxBytes = q.maxBytes;
  return params;
}
