/**
 * The local backend's worker-side read: one positional read of a byte range
 * of a session's log in the folder of logs the backend resolved when it
 * opened (LocalBackend.workerSource), into a caller's buffer (the
 * page worker's arena). Synchronous on purpose: a worker has nothing else
 * to do meanwhile, and a thread-pool hop only adds latency.
 *
 * A log named by its incarnation (the inode and birth time the page's view
 * stat'ed for this very request: ObjectStat.incarnation) is read through a
 * descriptor kept open on this thread while it is that incarnation: a random
 * page otherwise opened and closed the log for its one read (the path's
 * walk, the open and the close: ~2% of a lone page's main-thread time over
 * HTTP, and of a worker's). The kept descriptor reads exactly the file a
 * fresh open would have found when the view stat'ed it; a log replaced since
 * (a repair's rename) is another incarnation, opened afresh. Descriptors are
 * few (KEPT_MAX a thread, least recently used closed first) and short-lived
 * (closed once unused for IDLE_MS), so a removed log's space is not held.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { assertSessionId, EVENTS_SUFFIX } from '../layout.js';

/** Descriptors kept on this thread at most. */
const KEPT_MAX = 8;
/** A kept descriptor unused this long is closed, ms. */
const IDLE_MS = 2000;

interface KeptLog {
  fd: number;
  incarnation: string;
  /** When it was last read (performance.now()). */
  used: number;
}

/** By the log's path; Map order is least recently opened first. */
const kept = new Map<string, KeptLog>();
let sweeper: NodeJS.Timeout | null = null;

function sweep(): void {
  sweeper = null;
  const now = performance.now();
  for (const [path, k] of kept) {
    if (now - k.used < IDLE_MS) continue;
    kept.delete(path);
    closeSync(k.fd);
  }
  if (kept.size > 0) armSweeper();
}

function armSweeper(): void {
  if (sweeper !== null) return;
  sweeper = setTimeout(sweep, IDLE_MS);
  sweeper.unref();
}

/** A kept descriptor of `path` as `incarnation`, opening (and keeping) one when it is that; null: open it for this read only. */
function keptFd(path: string, incarnation: string): number | null {
  const k = kept.get(path);
  if (k !== undefined) {
    if (k.incarnation === incarnation) {
      k.used = performance.now();
      return k.fd;
    }
    kept.delete(path);
    closeSync(k.fd);
  }
  const fd = openSync(path, 'r');
  let s;
  try {
    s = fstatSync(fd);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  // As local-backend.ts names an incarnation.
  if (`${s.ino}:${s.birthtimeMs}` !== incarnation) {
    closeSync(fd);
    return null;
  }
  if (kept.size >= KEPT_MAX) {
    const [oldest, o] = kept.entries().next().value as [string, KeptLog];
    kept.delete(oldest);
    closeSync(o.fd);
  }
  kept.set(path, { fd, incarnation, used: performance.now() });
  armSweeper();
  return fd;
}

/** Close every kept descriptor (tests; a thread about to end). */
export function closeKeptLogs(): void {
  for (const k of kept.values()) closeSync(k.fd);
  kept.clear();
  if (sweeper !== null) clearTimeout(sweeper);
  sweeper = null;
}

/** How many log descriptors this thread keeps open now (tests). */
export function keptLogCount(): number {
  return kept.size;
}

/**
 * `incarnation`: the log's as the page's view stat'ed it ('' when unknown: the log is opened for
 * this read only, as it always was).
 */
export function readLogRange(logs: string, session: string, start: number, end: number, into: Buffer, incarnation = ''): Buffer {
  // A range from a lying frame index need not even be whole numbers: read nothing, and the
  // slice fails its frame checks (corrupt_range, then the store plans again from the sidecar).
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) return into.subarray(0, 0);
  const len = end - start;
  const path = join(logs, `${assertSessionId(session)}${EVENTS_SUFFIX}`);
  const keptFdOf = incarnation === '' ? null : keptFd(path, incarnation);
  const fd = keptFdOf ?? openSync(path, 'r');
  try {
    let got = 0;
    while (got < len) {
      const n = readSync(fd, into, got, len - got, start + got);
      if (n === 0) break;
      got += n;
    }
    // `into` itself when it is exactly the range (the page worker's arena region): the worker's
    // sinks recognise that region by identity and copy from it with copyWithin (core/byte-sink.ts).
    return got === into.length ? into : into.subarray(0, got);
  } finally {
    if (keptFdOf === null) closeSync(fd);
  }
}
