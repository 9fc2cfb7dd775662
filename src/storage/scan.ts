/**
 * A sequential scan of a stored log's byte range, frame by frame
 * (streams/frame-scanner.ts), through any backend: catching a stale
 * metadata sidecar up, indexing an unindexed tail, maintenance.
 */
import { scanFrames, type ScanItem, type ScanOptions } from '../streams/frame-scanner.js';
import type { StorageBackend } from './backend.js';

/** Every frame of object `key` in [start, end) (end: the object's size), in order. */
export async function* scanObject(storage: StorageBackend, key: string, start: number, end?: number, opts: ScanOptions = {}): AsyncGenerator<ScanItem> {
  const reader = await storage.openReader(key);
  try {
    yield* scanFrames(reader, start, end ?? reader.size, opts);
  } finally {
    await reader.close();
  }
}
