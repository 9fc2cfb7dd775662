/**
 * How a page worker reads the slice it is given as `{source, session,
 * start, end}` (workers/slice-protocol.ts): `source` names a backend's
 * worker-side reader (StorageBackend.workerSource), here only local files
 * (`file:<folder of the logs>`), read synchronously and positionally into the
 * worker's arena, which measured faster than any hop. A backend without a
 * worker source hands the bytes over with the task instead; a network
 * store's worker reader (ranged GETs) would be one more scheme here.
 */
import type { WorkerSource } from './backend.js';
import { readLogRange } from './local/log-range.js';

/** The task field for a backend's worker source ('' when the main thread reads slices). */
export function sourceString(source: WorkerSource | null): string {
  return source === null ? '' : `${source.scheme}:${source.logs}`;
}

/**
 * Bytes [start, end) of `session`'s log read into `into` (at least end - start long); fewer when
 * the log is shorter. When `into` is exactly the range and all of it was read, the answer is
 * `into` itself, not a view of it: the page worker's sinks know its arena region by identity.
 * `incarnation`: the log's as the page's view stat'ed it ('' when unknown; local/log-range.ts).
 */
export function readSlice(source: string, session: string, start: number, end: number, into: Buffer, incarnation = ''): Buffer {
  if (source.startsWith('file:')) return readLogRange(source.slice(5), session, start, end, into, incarnation);
  throw new Error(`no worker reader for source ${JSON.stringify(source)}`);
}
