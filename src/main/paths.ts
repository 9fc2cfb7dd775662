/**
 * Where a session's files live under a data directory (SPEC section 3), and
 * the session-id rule checked before any path is built from an id.
 */
import { join } from 'node:path';
import { PagerError } from './core/errors.js';

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function isValidSessionId(id: unknown): id is string {
  return typeof id === 'string' && ID_RE.test(id) && !id.includes('..');
}

export function assertSessionId(id: unknown): string {
  if (!isValidSessionId(id)) {
    throw new PagerError('invalid_request', 'session id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ and not contain ".."', { param: 'id' });
  }
  return id;
}

export interface SessionPaths {
  id: string;
  events: string;
  meta: string;
  entries: string;
  projections: string;
  lock: string;
}

export function sessionsDir(dataDir: string): string {
  return join(dataDir, 'sessions');
}

export function indexDir(dataDir: string): string {
  return join(dataDir, 'sessions', 'index');
}

export function sessionPaths(dataDir: string, id: string): SessionPaths {
  assertSessionId(id);
  const sessions = sessionsDir(dataDir);
  const index = indexDir(dataDir);
  return {
    id,
    events: join(sessions, `${id}.events`),
    meta: join(index, `${id}.index.json`),
    entries: join(index, `${id}.entries.jsonl`),
    projections: join(index, id),
    // The writer's lock lives beside the log; it is not data and never indexed.
    lock: join(sessions, `${id}.lock`),
  };
}
