/**
 * How the store's keys (storage/layout.ts: `sessions/<id>.events`, ...) map
 * onto an S3 store (docs/s3-layout.md): every object of a session is a
 * member of that session's volume, named by its role (`events`, `entries`,
 * `meta`, `p/<projection>`), and the volume's remote objects (manifests,
 * segments, tail objects) live in one folder, `sessions/<id>/`. Pure: names
 * in, names out.
 */
import { ENTRIES_SUFFIX, EVENTS_SUFFIX, INDEX, META_SUFFIX, SESSIONS, isValidSessionId } from '../layout.js';

export type MemberName = 'events' | 'entries' | 'meta' | `p/${string}`;

/** A key as an S3 store sees it: a member of a session, or that session's lease. */
export type KeyRole = { id: string; member: MemberName } | { id: string; lock: true };

const PROJ_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The session and member a key names, or null for a key outside the layout. */
export function roleOfKey(key: string): KeyRole | null {
  const pick = (id: string, member: MemberName): KeyRole | null => (isValidSessionId(id) ? { id, member } : null);
  if (key.startsWith(`${INDEX}/`)) {
    const rest = key.slice(INDEX.length + 1);
    const slash = rest.indexOf('/');
    if (slash !== -1) {
      const id = rest.slice(0, slash);
      const name = rest.slice(slash + 1);
      return PROJ_NAME_RE.test(name) ? pick(id, `p/${name}`) : null;
    }
    if (rest.endsWith(META_SUFFIX)) return pick(rest.slice(0, -META_SUFFIX.length), 'meta');
    if (rest.endsWith(ENTRIES_SUFFIX)) return pick(rest.slice(0, -ENTRIES_SUFFIX.length), 'entries');
    return null;
  }
  if (key.startsWith(`${SESSIONS}/`)) {
    const rest = key.slice(SESSIONS.length + 1);
    if (rest.includes('/')) return null;
    if (rest.endsWith(EVENTS_SUFFIX)) return pick(rest.slice(0, -EVENTS_SUFFIX.length), 'events');
    if (rest.endsWith('.lock')) {
      const id = rest.slice(0, -'.lock'.length);
      return isValidSessionId(id) ? { id, lock: true } : null;
    }
  }
  return null;
}

/** The names `list(folder)` shows for a session's members (the local layout's file names). */
export function listedName(folder: string, id: string, member: MemberName): string | null {
  if (folder === SESSIONS) return member === 'events' ? `${id}${EVENTS_SUFFIX}` : member === 'meta' || member === 'entries' || member.startsWith('p/') ? 'index' : null;
  if (folder === INDEX) {
    if (member === 'meta') return `${id}${META_SUFFIX}`;
    if (member === 'entries') return `${id}${ENTRIES_SUFFIX}`;
    if (member.startsWith('p/')) return id;
    return null;
  }
  if (folder === `${INDEX}/${id}` && member.startsWith('p/')) return member.slice(2);
  return null;
}

/** The folder of a session's remote objects, relative to the store's prefix. */
export function sessionFolder(id: string): string {
  return `${SESSIONS}/${id}/`;
}

const MANIFEST_DIGITS = 16;

/** `manifest/0000000000000007`: zero-padded, so a listing's order is the numbers' order. */
export function manifestName(n: number): string {
  return `manifest/${String(n).padStart(MANIFEST_DIGITS, '0')}`;
}

/** The number of a manifest's name, or null when `name` is no manifest's. */
export function manifestNumber(name: string): number | null {
  const m = /^manifest\/(\d{16})$/.exec(name);
  if (m === null) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** A sealed segment's name: `seg/<epoch>-<serial>.seg`, unique to its writer's epoch. */
export function segmentName(epoch: number, serial: number): string {
  return `seg/${epoch}-${serial}.seg`;
}

/** A tail object's name (the unsealed tail as published for readers). */
export function tailName(epoch: number, serial: number): string {
  return `tail/${epoch}-${serial}.tail`;
}

/** The epoch in a segment's or tail object's name (`seg/<epoch>-<serial>.seg`), or null for any other name. */
export function epochOfObject(name: string): number | null {
  const m = /^(?:seg\/(\d+)-\d+\.seg|tail\/(\d+)-\d+\.tail)$/.exec(name);
  if (m === null) return null;
  const e = Number(m[1] ?? m[2]);
  return Number.isSafeInteger(e) ? e : null;
}
