/**
 * Checking a page as it comes off the wire (SPEC sections 2 and 4) and
 * expanding it into its logical events. The row codec is the service's own
 * pure core (`core/chunk-codec.ts`, no I/O, no Node APIs), so the client
 * and the server share one definition of a valid row and of canonical
 * packing.
 */
import { expandRow, packEvents, validateEvent, validateRow } from '../core/chunk-codec.js';
import { RecordError } from '../core/errors.js';
import type { Page, PageRecord, SessionEvent } from '../core/types.js';
import { ClientError } from './errors.js';

export interface CheckedPage {
  page: Page;
  /** The logical events `[page.fromSeq, page.toSeq)`, in order. */
  events: SessionEvent[];
}

export interface PageExpectation {
  sessionId?: string;
  /** The pinned cut asked for. */
  throughSeq?: number;
  /** The exclusive upper bound asked for. */
  beforeSeq?: number;
  /** Also check that `records` is the canonical packing of its events (costs a re-pack). */
  canonical?: boolean;
}

const isSafe = Number.isSafeInteger;

function bad(message: string): never {
  throw new ClientError('invalid_page', message);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function onlyKey(r: Record<string, unknown>): string | undefined {
  let key: string | undefined;
  for (const k in r) {
    if (!Object.prototype.hasOwnProperty.call(r, k)) continue;
    if (key !== undefined) return undefined;
    key = k;
  }
  return key;
}

/**
 * Validate a parsed page body and expand it. Throws `invalid_page` naming the
 * first broken rule: envelope fields, each record (rows exactly as SPEC
 * section 2 says), events covering `[fromSeq, toSeq)` with no gap, no
 * overlap and nothing outside, `hasMore` equal to `fromSeq > 0`, and what
 * was asked (`sessionId`, `throughSeq`, the upper bound).
 */
export function checkPage(body: unknown, expect: PageExpectation = {}): CheckedPage {
  if (!isObject(body)) bad('page is not a JSON object');
  const { sessionId, throughSeq, fromSeq, toSeq, hasMore, records } = body;
  if (typeof sessionId !== 'string') bad('page.sessionId must be a string');
  if (!isSafe(throughSeq) || (throughSeq as number) < -1) bad('page.throughSeq must be a safe integer >= -1');
  if (!isSafe(fromSeq) || (fromSeq as number) < 0) bad('page.fromSeq must be a non-negative safe integer');
  if (!isSafe(toSeq) || (toSeq as number) < (fromSeq as number)) bad('page.toSeq must be a safe integer >= fromSeq');
  if (typeof hasMore !== 'boolean') bad('page.hasMore must be a boolean');
  if (!Array.isArray(records)) bad('page.records must be an array');
  const from = fromSeq as number;
  const to = toSeq as number;
  const through = throughSeq as number;
  if (to > through + 1) bad(`page.toSeq ${to} is past throughSeq + 1 (${through + 1})`);
  if (hasMore !== from > 0) bad(`page.hasMore is ${String(hasMore)} but fromSeq is ${from}`);
  if (expect.sessionId !== undefined && sessionId !== expect.sessionId) bad(`page is for session ${JSON.stringify(sessionId)}, not ${JSON.stringify(expect.sessionId)}`);
  if (expect.throughSeq !== undefined && through !== expect.throughSeq) bad(`page.throughSeq is ${through}, ${expect.throughSeq} was asked`);
  const end = Math.min(through + 1, expect.beforeSeq ?? Number.MAX_SAFE_INTEGER);
  if (to !== end && !(through === -1 && from === 0 && to === 0)) bad(`page ends at ${to}, the cut asked ends at ${end}`);

  const events: SessionEvent[] = [];
  let next = from;
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    if (!isObject(r)) bad(`records[${i}] is not an object`);
    const key = onlyKey(r);
    try {
      if (key === 'event') {
        const e = validateEvent(r.event);
        if (e.seq !== next) bad(`records[${i}] is event seq ${e.seq} where seq ${next} was expected`);
        events.push(e);
        next++;
      } else if (key === 'chunks') {
        const row = validateRow(r.chunks);
        if (row.seq0 !== next) bad(`records[${i}] is a row at seq0 ${row.seq0} where seq ${next} was expected`);
        for (const e of expandRow(row)) events.push(e);
        next = events.length + from;
      } else {
        bad(`records[${i}] must have exactly one key, "event" or "chunks"`);
      }
    } catch (err) {
      if (err instanceof RecordError) bad(`records[${i}]: ${err.message}`);
      throw err;
    }
  }
  if (next !== to) bad(`records cover [${from}, ${next}), the page says [${from}, ${to})`);
  const page = body as unknown as Page;
  if (expect.canonical === true) {
    const canon = JSON.stringify(packEvents(events));
    if (canon !== JSON.stringify(records as PageRecord[])) bad('records are not the canonical packing of their events');
  }
  return { page, events };
}
