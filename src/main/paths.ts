/**
 * A session's objects as paths under a local data directory: the layout of
 * storage/layout.ts joined to the directory, for the code that still works
 * on files directly (maintenance, the CLI, tests).
 */
import { join } from 'node:path';
import { assertSessionId, INDEX, isValidSessionId, SESSIONS, sessionKeys, type SessionKeys } from '../storage/layout.js';

export { assertSessionId, isValidSessionId };

/** The same fields as SessionKeys, as absolute (or data-directory-relative) paths. */
export type SessionPaths = SessionKeys;

export function sessionsDir(dataDir: string): string {
  return join(dataDir, SESSIONS);
}

export function indexDir(dataDir: string): string {
  return join(dataDir, INDEX);
}

export function sessionPaths(dataDir: string, id: string): SessionPaths {
  const k = sessionKeys(id);
  return { id, events: join(dataDir, k.events), meta: join(dataDir, k.meta), entries: join(dataDir, k.entries), projections: join(dataDir, k.projections), lock: join(dataDir, k.lock) };
}
