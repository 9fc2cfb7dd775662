/**
 * Where a session's objects live, by key (SPEC section 3): the one place the
 * layout of a data directory is written down. Keys are `/`-separated and
 * relative to the store's root (a local data directory, a bucket prefix);
 * a backend maps them to its own names.
 */
import { PagerError } from '../core/errors.js';

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function isValidSessionId(id: unknown): id is string {
  return typeof id === 'string' && ID_RE.test(id) && !id.includes('..');
}

/** The session-id rule, checked before any key is built from an id (an id never names another folder). */
export function assertSessionId(id: unknown): string {
  if (!isValidSessionId(id)) {
    throw new PagerError('invalid_request', 'session id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ and not contain ".."', { param: 'id' });
  }
  return id;
}

/** A session's objects: the log, the two sidecars, the folder of derived projections and the writer's lease. */
export interface SessionKeys {
  id: string;
  events: string;
  meta: string;
  entries: string;
  projections: string;
  lock: string;
}

/** The folder of logs (and writer leases). */
export const SESSIONS = 'sessions';
/** The folder of sidecars (and, one folder per session, projections). */
export const INDEX = 'sessions/index';

export const EVENTS_SUFFIX = '.events';
export const META_SUFFIX = '.index.json';
export const ENTRIES_SUFFIX = '.entries.jsonl';

export function sessionKeys(id: string): SessionKeys {
  assertSessionId(id);
  return {
    id,
    events: `${SESSIONS}/${id}${EVENTS_SUFFIX}`,
    meta: `${INDEX}/${id}${META_SUFFIX}`,
    entries: `${INDEX}/${id}${ENTRIES_SUFFIX}`,
    projections: `${INDEX}/${id}`,
    // The writer's lease lives beside the log; it is not data and never indexed.
    lock: `${SESSIONS}/${id}.lock`,
  };
}

/** The key of projection file `name` (frames.idx, frames.crc2, ...) of a session. */
export function projectionKey(keys: Pick<SessionKeys, 'projections'>, name: string): string {
  return `${keys.projections}/${name}`;
}

/** What a backup's key adds to the log's: `.bak-` and a UTC time stamp. */
export const BACKUP_MARK = '.bak-';
const BACKUP_STAMP_RE = /^\d{8}T\d{9}Z$/;

/** `20261201T153012345Z`: the UTC time `ms` in a backup's name (sorts as time does). */
export function backupStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace('.', '');
}

/**
 * The key of a copy of a session's log made at `ms` before repair cuts it:
 * beside the log, `sessions/<id>.events.bak-<stamp>`. Not data of the
 * session (never listed as one, never read by the page path).
 */
export function backupKey(keys: Pick<SessionKeys, 'events'>, ms: number): string {
  return `${keys.events}${BACKUP_MARK}${backupStamp(ms)}`;
}

/** The session id and stamp of a backup key `sessions/<id>.events.bak-<stamp>`, or null. */
export function parseBackupKey(key: string): { id: string; stamp: string } | null {
  if (!key.startsWith(`${SESSIONS}/`)) return null;
  const rest = key.slice(SESSIONS.length + 1);
  const at = rest.lastIndexOf(`${EVENTS_SUFFIX}${BACKUP_MARK}`);
  if (rest.includes('/') || at <= 0) return null;
  const id = rest.slice(0, at);
  const stamp = rest.slice(at + EVENTS_SUFFIX.length + BACKUP_MARK.length);
  return isValidSessionId(id) && BACKUP_STAMP_RE.test(stamp) ? { id, stamp } : null;
}
