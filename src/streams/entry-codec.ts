/**
 * Entry-sidecar lines (SPEC section 3): one JSON line per frame, in file
 * order, carrying everything the page planner needs without payloads.
 */
import type { EntryLine } from '../main/core/types.js';

/** Encode with the fixed key order of the spec, newline-terminated. */
export function encodeEntry(e: EntryLine): string {
  const group = e.group === undefined ? '' : `,"group":${e.group}`;
  return `{"v":1,"seq":${e.seq},"count":${e.count},"offset":${e.offset},"length":${e.length},"kind":${JSON.stringify(e.kind)},"schema":${e.schema}${group}}\n`;
}

const isUint = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * Parse one line (without its newline). Returns the entry or a reason it is
 * malformed; never throws.
 */
export function parseEntry(line: string): EntryLine | string {
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    return 'entry line is not JSON';
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return 'entry line is not an object';
  const e = o as Record<string, unknown>;
  if (e.v !== 1) return `entry version ${String(e.v)} is not 1`;
  for (const k of ['seq', 'count', 'offset', 'length', 'schema'] as const) {
    if (!isUint(e[k])) return `entry ${k} is not a non-negative safe integer`;
  }
  if (typeof e.kind !== 'string' || e.kind.length === 0) return 'entry kind is not a string';
  if (e.group !== undefined && (!isUint(e.group) || (e.group as number) > (e.seq as number))) return 'entry group is not a seq at or before the entry';
  if ((e.length as number) === 0) return 'entry length is 0';
  return e as unknown as EntryLine;
}
