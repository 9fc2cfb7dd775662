/**
 * The nesting limit of records and request bodies (docs/decisions.md,
 * "Nesting limit"). Deeper values are refused before anything recursive
 * (JSON.stringify, a schema walk) can overflow the stack on them, so both
 * checks here are loops with an explicit stack, never recursion. Pure.
 */
import { LBRACE, LBRACK, looseStringEnd, QUOTE, RBRACE, RBRACK } from './json-bytes.js';

/** Most levels of objects and arrays a record (event, row, header) or request body may nest; the record itself is level 1. */
export const MAX_NESTING_DEPTH = 128;

export function nestingMessage(what: string, limit = MAX_NESTING_DEPTH): string {
  return `${what} is nested deeper than ${limit} levels of objects and arrays`;
}

/** Whether a parsed value nests objects or arrays deeper than `limit`. Iterative; visits each container once (stops at the first too deep). */
export function valueNestingExceeds(value: unknown, limit = MAX_NESTING_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const v = stack.pop() as object;
    const d = depths.pop() as number;
    if (d > limit) return true;
    const children = Array.isArray(v) ? v : Object.values(v);
    for (const c of children) {
      if (typeof c === 'object' && c !== null) {
        stack.push(c);
        depths.push(d + 1);
      }
    }
  }
  return false;
}


/** Whether the JSON text in `bytes[start, end)` nests deeper than `limit` (brackets outside strings; the text need not be valid). */
export function jsonNestingExceeds(bytes: Uint8Array, start = 0, end = bytes.length, limit = MAX_NESTING_DEPTH): boolean {
  let depth = 0;
  let i = start;
  while (i < end) {
    const c = bytes[i++] as number;
    if (c === QUOTE) {
      i = looseStringEnd(bytes, i, end);
    } else if (c === LBRACE || c === LBRACK) {
      if (++depth > limit) return true;
    } else if (c === RBRACE || c === RBRACK) {
      depth--;
    }
  }
  return false;
}
