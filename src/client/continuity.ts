/**
 * The continuity rules a journal holds its reader to, pure: consecutive
 * older pages join exactly (no gap, no overlap, one pinned cut), and a live
 * stream is placed against what was already delivered (duplicates dropped,
 * gaps found so the caller can read the missing range).
 */
import type { Page } from '../core/types.js';
import { ClientError } from './errors.js';

/** Check that `older` (asked with `beforeSeq = newer.fromSeq`) joins `newer` exactly. */
export function checkJoin(newer: Page, older: Page): void {
  if (older.throughSeq !== newer.throughSeq) {
    throw new ClientError('continuity', `older page has throughSeq ${older.throughSeq}, the walk is pinned at ${newer.throughSeq}`);
  }
  if (older.toSeq !== newer.fromSeq) {
    const what = older.toSeq < newer.fromSeq ? `a gap [${older.toSeq}, ${newer.fromSeq})` : `an overlap [${newer.fromSeq}, ${older.toSeq})`;
    throw new ClientError('continuity', `pages do not join: ${what} between the older page [${older.fromSeq}, ${older.toSeq}) and the newer [${newer.fromSeq}, ${newer.toSeq})`);
  }
  if (older.fromSeq >= newer.fromSeq && newer.fromSeq > 0) {
    throw new ClientError('continuity', `older page [${older.fromSeq}, ${older.toSeq}) makes no progress before seq ${newer.fromSeq}`);
  }
}

export type Placement = { kind: 'duplicate' } | { kind: 'next' } | { kind: 'gap'; from: number; to: number };

/** Where an incoming live seq falls, given the next seq the reader needs. */
export function place(next: number, seq: number): Placement {
  if (seq < next) return { kind: 'duplicate' };
  if (seq === next) return { kind: 'next' };
  return { kind: 'gap', from: next, to: seq };
}
