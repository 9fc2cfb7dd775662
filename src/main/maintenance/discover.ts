/**
 * Bounded first-frame discovery (SPEC section 3): what the catalog can still
 * show of a session whose sidecars are gone or untrustworthy. Reads only the
 * log's header frame (at most DISCOVERY_MAX_BYTES), never writes, never
 * throws for damage.
 */
import { decodeFrame, frameBounds } from '../../streams/frame-codec.js';
import type { SessionHeader } from '../../core/types.js';
import type { SessionPaths } from '../paths.js';
import { quoteValue } from '../../core/excerpt.js';
import { isNotFound, type ObjectStat, type RandomReader, type StorageBackend } from '../../storage/backend.js';
import { localFiles } from '../../storage/local/local-backend.js';

/** Most bytes discovery reads: a header frame larger than this is reported, not read. */
export const DISCOVERY_MAX_BYTES = 1024 * 1024;
const FIRST_READ = 16 * 1024;

export interface Discovery {
  id: string;
  /** The header record of frame 0, when it decodes. */
  header: SessionHeader | null;
  /** `header.createdAt` when it is a safe integer. */
  createdAt: number | null;
  /** Byte length of the header frame, when known. */
  headerLength: number | null;
  logSize: number;
  logMtimeMs: number;
  /** Why the header could not be read; absent when it was. */
  reason?: string;
}

/** `paths`: the session's keys in `storage` (default: local files, the keys paths). */
export async function discoverSession(paths: SessionPaths, storage: StorageBackend = localFiles): Promise<Discovery> {
  const out: Discovery = { id: paths.id, header: null, createdAt: null, headerLength: null, logSize: 0, logMtimeMs: 0 };
  let fh: RandomReader;
  let st: ObjectStat | null;
  try {
    st = await storage.stat(paths.events);
    if (st === null) {
      out.reason = 'log file is missing';
      return out;
    }
    fh = await storage.openReader(paths.events, st.size);
  } catch (err) {
    out.reason = isNotFound(err) ? 'log file is missing' : `log file unreadable: ${(err as Error).message}`;
    return out;
  }
  try {
    out.logSize = st.size;
    out.logMtimeMs = st.mtimeMs;
    if (st.size === 0) {
      out.reason = 'log file is empty';
      return out;
    }
    let buf = await fh.read(0, Math.min(st.size, FIRST_READ));
    let b = frameBounds(buf, 0, 0);
    if (!b.ok && b.reason === 'torn' && buf.length < st.size) {
      // A long header line (or a binary header naming its length): read up to the cap, once.
      const want = Math.min(st.size, DISCOVERY_MAX_BYTES);
      buf = await fh.read(0, want);
      b = frameBounds(buf, 0, 0);
      if (!b.ok && b.reason === 'torn' && want < st.size) {
        out.reason = `header frame is longer than ${DISCOVERY_MAX_BYTES} bytes`;
        return out;
      }
    }
    const f = decodeFrame(buf, 0, 0);
    if (!f.ok) {
      out.reason = `header frame: ${f.message}`;
      return out;
    }
    const rec = f.record as Record<string, unknown>;
    if (rec.type !== 'session') {
      out.reason = `frame 0 is not a session header (type ${quoteValue(rec.type)})`;
      return out;
    }
    out.header = rec as SessionHeader;
    out.headerLength = f.length;
    out.createdAt = Number.isSafeInteger(rec.createdAt) ? (rec.createdAt as number) : null;
    return out;
  } finally {
    await fh.close();
  }
}
