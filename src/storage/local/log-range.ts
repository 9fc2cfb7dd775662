/**
 * The local backend's worker-side read: one positional read of a byte range
 * of a session's log in the folder of logs the backend resolved when it
 * opened (LocalBackend.workerSource), into a caller's buffer (the
 * page worker's arena). Synchronous on purpose: a worker has nothing else
 * to do meanwhile, and a thread-pool hop only adds latency.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { assertSessionId, EVENTS_SUFFIX } from '../layout.js';

export function readLogRange(logs: string, session: string, start: number, end: number, into: Buffer): Buffer {
  // A range from a lying frame index need not even be whole numbers: read nothing, and the
  // slice fails its frame checks (corrupt_range, then the store plans again from the sidecar).
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) return into.subarray(0, 0);
  const len = end - start;
  const fd = openSync(join(logs, `${assertSessionId(session)}${EVENTS_SUFFIX}`), 'r');
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
    closeSync(fd);
  }
}
