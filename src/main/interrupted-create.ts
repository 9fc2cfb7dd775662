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
 * INTERRUPTED_CREATE_MAX_BYTES of the log, through the reads its caller
 * passes (this module does no I/O of its own). Never writes, never throws
 * for damage.
 */
import { decodeFrame, frameBounds } from '../streams/frame-codec.js';
import type { SessionHeader } from './core/types.js';
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

/** The reads findInterruptedCreate needs (session-state.ts passes the file system's). */
export interface InterruptedCreateReads {
  /** Whether anything is at `path`. */
  exists(path: string): Promise<boolean>;
  /** Size of the regular file at `path`, or null when it is none. */
  fileSize(path: string): Promise<number | null>;
  readFile(path: string): Promise<Uint8Array>;
}

export async function findInterruptedCreate(paths: SessionPaths, io: InterruptedCreateReads): Promise<InterruptedCreate | null> {
  try {
    // Any metadata file at all, even a damaged one, means the create was acknowledged once.
    if (await io.exists(paths.meta)) return null;
    const size = await io.fileSize(paths.events);
    if (size === null || size > INTERRUPTED_CREATE_MAX_BYTES) return null;
    const c = classifyHeaderOnly(await io.readFile(paths.events));
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
