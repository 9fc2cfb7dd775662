/**
 * The paging rule of SPEC section 5, pure: which events count as messages,
 * where a message's group starts, and how request parameters are checked.
 */
import { PagerError } from './errors.js';
import type { PageParams, SessionEvent } from './types.js';

export const DEFAULT_MAX_MESSAGES = 50;
export const MAX_MAX_MESSAGES = 1000;

/** A `user/message` or `assistant/message` whose surfaceOp is absent or "append". */
export function isCountedMessage(e: { type: unknown; surfaceOp?: unknown }): boolean {
  return (
    (e.type === 'user/message' || e.type === 'assistant/message') &&
    (!('surfaceOp' in e) || e.surfaceOp === undefined || e.surfaceOp === 'append')
  );
}

/**
 * The minimum of the event's seq and its `sourceEventSeqs`. Entries that are
 * not non-negative safe integers cannot name an event and are ignored.
 */
export function groupStart(e: SessionEvent): number {
  let g = e.seq;
  const src = e.sourceEventSeqs;
  if (Array.isArray(src)) {
    for (const s of src) if (Number.isSafeInteger(s) && (s as number) >= 0 && (s as number) < g) g = s as number;
  }
  return g;
}

/** The group start if `e` is a counted message, else undefined. */
export function countedGroup(e: SessionEvent): number | undefined {
  return isCountedMessage(e) ? groupStart(e) : undefined;
}

export interface ResolvedParams {
  throughSeq: number;
  /** Exclusive upper bound: min(throughSeq + 1, beforeSeq). */
  end: number;
  maxMessages: number;
  maxBytes: number | undefined;
}

function checkInt(name: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new PagerError('invalid_request', `${name} must be an integer in [${min}, ${max}]`, { param: name });
  }
  return v;
}

/**
 * Check page parameters against a session whose last committed seq is
 * `lastSeq` (-1 when empty) and resolve the defaults.
 */
export function resolvePageParams(params: PageParams, lastSeq: number): ResolvedParams {
  const throughSeq = params.throughSeq === undefined ? lastSeq : checkInt('throughSeq', params.throughSeq, lastSeq < 0 ? -1 : 0, lastSeq);
  const maxMessages = params.maxMessages === undefined ? DEFAULT_MAX_MESSAGES : checkInt('maxMessages', params.maxMessages, 1, MAX_MAX_MESSAGES);
  const maxBytes = params.maxBytes === undefined ? undefined : checkInt('maxBytes', params.maxBytes, 1, Number.MAX_SAFE_INTEGER);
  let end = throughSeq + 1;
  if (params.beforeSeq !== undefined) {
    const before = checkInt('beforeSeq', params.beforeSeq, 0, Number.MAX_SAFE_INTEGER);
    if (before < end) end = before;
  }
  return { throughSeq, end, maxMessages, maxBytes };
}

/**
 * Parse page parameters from strings (query string or CLI flags). Anything
 * that is not a plain decimal integer is `invalid_request`, not coerced.
 */
export function parsePageQuery(q: Record<string, unknown>): PageParams {
  const out: PageParams = {};
  for (const name of ['throughSeq', 'beforeSeq', 'maxMessages', 'maxBytes'] as const) {
    const raw = q[name];
    if (raw === undefined) continue;
    if (typeof raw !== 'string' || !/^(0|[1-9][0-9]{0,15})$/.test(raw)) {
      throw new PagerError('invalid_request', `${name} must be a non-negative decimal integer`, { param: name });
    }
    const n = Number(raw);
    if (!Number.isSafeInteger(n)) throw new PagerError('invalid_request', `${name} is out of range`, { param: name });
    out[name] = n;
  }
  return out;
}
