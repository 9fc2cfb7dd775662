/**
 * Bounded first-frame discovery (SPEC section 3): what the catalog can still
 * show of a session whose sidecars are gone or untrustworthy. Reads only the
 * log's header frame (at most DISCOVERY_MAX_BYTES), never writes, never
 * throws for damage.
 */
import { promises as fsp } from 'node:fs';
import { decodeFrame, frameBounds } from '../../streams/frame-codec.js';
import type { SessionHeader } from '../core/types.js';
import type { SessionPaths } from '../paths.js';
import { quoteValue } from '../core/excerpt.js';

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

async function readAt(fh: fsp.FileHandle, pos: number, len: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await fh.read(buf, got, len - got, pos + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got === len ? buf : buf.subarray(0, got);
}

export async function discoverSession(paths: SessionPaths): Promise<Discovery> {
  const out: Discovery = { id: paths.id, header: null, createdAt: null, headerLength: null, logSize: 0, logMtimeMs: 0 };
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(paths.events, 'r');
  } catch (err) {
    out.reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'log file is missing' : `log file unreadable: ${(err as Error).message}`;
    return out;
  }
  try {
    const st = await fh.stat();
    out.logSize = st.size;
    out.logMtimeMs = st.mtimeMs;
    if (st.size === 0) {
      out.reason = 'log file is empty';
      return out;
    }
    let buf = await readAt(fh, 0, Math.min(st.size, FIRST_READ));
    let b = frameBounds(buf, 0, 0);
    if (!b.ok && b.reason === 'torn' && buf.length < st.size) {
      // A long header line (or a binary header naming its length): read up to the cap, once.
      const want = Math.min(st.size, DISCOVERY_MAX_BYTES);
      buf = await readAt(fh, 0, want);
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
