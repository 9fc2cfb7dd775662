/**
 * An interrupted create (docs/decisions.md, "Creates are atomic"): a log
 * with no metadata sidecar that holds nothing but (a prefix of) its header
 * frame. A create is acknowledged only after its metadata is written, and
 * no path of the service deletes metadata, so such a log is what a create
 * cut by a crash leaves: it never existed for any client. `PUT` may take its
 * id over, `repair` finishes it (a complete header becomes an empty session)
 * or removes it (no complete header), and the catalog and doctor say so.
 *
 * Bounded: one stat of the metadata, one of the log, and a read of at most
 * INTERRUPTED_CREATE_MAX_BYTES of the log, through the storage backend.
 * Never writes, never throws for damage.
 */
import type { StorageBackend } from '../storage/backend.js';
import { localFiles } from '../storage/local/local-backend.js';
import { decodeFrame, frameBounds } from '../streams/frame-codec.js';
import type { SessionHeader } from '../core/types.js';
import type { SessionPaths } from './paths.js';

/** Largest log examined: a header frame longer than this is not taken for an interrupted create. */
export const INTERRUPTED_CREATE_MAX_BYTES = 1024 * 1024;

export interface InterruptedCreate {
  logSize: number;
  /** The log is exactly one valid header frame (else: empty, or a header cut short). */
  headerComplete: boolean;
  header: SessionHeader | null;
  /** One line for humans: what is there and what repair / PUT do with it. */
  message: string;
}

/** Pure: what `bytes` (the whole log, no metadata beside it) say of an interrupted create, or null when they hold more. */
export function classifyHeaderOnly(bytes: Uint8Array): Omit<InterruptedCreate, 'message'> | null {
  if (bytes.length === 0) return { logSize: 0, headerComplete: false, header: null };
  const b = frameBounds(bytes, 0, 0);
  if (!b.ok) return b.reason === 'torn' ? { logSize: bytes.length, headerComplete: false, header: null } : null;
  if (b.length !== bytes.length) return null;
  const f = decodeFrame(bytes, 0, 0);
  if (!f.ok) return null;
  const h = f.record as Record<string, unknown>;
  if (h.type !== 'session') return null;
  return { logSize: bytes.length, headerComplete: true, header: h as SessionHeader };
}

/** `paths`: the session's keys in `storage` (default: paths of local files). */
export async function findInterruptedCreate(paths: SessionPaths, storage: StorageBackend = localFiles): Promise<InterruptedCreate | null> {
  try {
    // Any metadata file at all, even a damaged one, means the create was acknowledged once
    // (a stat that fails for another reason than absence counts as there).
    if ((await storage.stat(paths.meta).catch(() => 'unknown')) !== null) return null;
    const st = await storage.stat(paths.events);
    if (st === null || st.size > INTERRUPTED_CREATE_MAX_BYTES) return null;
    const bytes = await storage.read(paths.events, 0, INTERRUPTED_CREATE_MAX_BYTES + 1);
    if (bytes === null || bytes.length > INTERRUPTED_CREATE_MAX_BYTES) return null;
    const c = classifyHeaderOnly(bytes);
    if (c === null) return null;
    const what = c.headerComplete
      ? `the log holds only its header frame (${c.logSize} bytes)`
      : c.logSize === 0
        ? 'the log is empty'
        : `the log holds only ${c.logSize} bytes of a header frame`;
    const fix = c.headerComplete ? 'PUT the session again, or run repair to keep it as an empty session' : 'PUT the session again, or run repair to remove it';
    return { ...c, message: `create was interrupted before it was acknowledged: ${what} and there is no metadata sidecar; ${fix}` };
  } catch {
    return null;
  }
}
