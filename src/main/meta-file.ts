/**
 * The metadata sidecar: its shape, and the only way it is written (the
 * backend's atomic replace: temp file, fsync, rename, fsync of the folder
 * for local files), so a reader sees the old or the new one, never half.
 */
import type { StorageBackend } from '../storage/backend.js';
import type { FrameEncoding } from '../streams/frame-codec.js';
import type { SessionSummary } from '../core/summary.js';
import type { SessionHeader } from '../core/types.js';
import { quoteValue } from '../core/excerpt.js';

export interface Fingerprint {
  size: number;
  mtimeMs: number;
}

export interface RecordedIssue {
  code: string;
  message: string;
  offset?: number;
  seq?: number;
}

export interface SessionMeta extends SessionSummary {
  v: 1;
  id: string;
  header: SessionHeader;
  /** Encoding this session's writer uses for new frames. */
  format: FrameEncoding;
  fingerprint: Fingerprint;
  nextSeq: number;
  eventCount: number;
  frameCount: number;
  /** Byte length of the log covered by the entry sidecar. */
  indexedLength: number;
  /** Byte length of the entry sidecar this metadata was written with. */
  entriesLength: number;
  createdAt: number;
  updatedAt: number;
  issues: RecordedIssue[];
}

export async function writeMeta(storage: StorageBackend, key: string, meta: SessionMeta): Promise<void> {
  await storage.replace(key, Buffer.from(JSON.stringify(meta) + '\n', 'utf8'));
}

/** Read and shape-check metadata; returns a reason string when unusable. */
export async function readMeta(storage: StorageBackend, key: string): Promise<SessionMeta | string> {
  let text: string;
  try {
    const bytes = await storage.readAll(key);
    if (bytes === null) return 'metadata sidecar is missing';
    text = bytes.toString('utf8');
  } catch (err) {
    return `metadata sidecar unreadable: ${(err as Error).message}`;
  }
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return 'metadata sidecar is not valid JSON';
  }
  return checkMetaShape(m);
}

export function checkMetaShape(m: unknown): SessionMeta | string {
  if (typeof m !== 'object' || m === null) return 'metadata sidecar is not an object';
  const o = m as Record<string, unknown>;
  if (o.v !== 1) return `metadata sidecar version ${quoteValue(o.v)} is not 1`;
  for (const k of ['nextSeq', 'frameCount', 'indexedLength', 'entriesLength'] as const) {
    if (!Number.isSafeInteger(o[k]) || (o[k] as number) < 0) return `metadata sidecar field ${k} is invalid`;
  }
  if (typeof o.header !== 'object' || o.header === null) return 'metadata sidecar has no header';
  if (o.format !== 'jsonl' && o.format !== 'binary') return 'metadata sidecar format is invalid';
  if (typeof o.fingerprint !== 'object' || o.fingerprint === null) return 'metadata sidecar has no fingerprint';
  // Read by every status check: a damaged key must be a clear repair_required, not a TypeError (a 500).
  if (!Array.isArray(o.issues)) return 'metadata sidecar has no issues list';
  for (const i of o.issues as unknown[]) {
    const r = i as Record<string, unknown> | null;
    if (typeof r !== 'object' || r === null || typeof r.code !== 'string' || typeof r.message !== 'string') return 'metadata sidecar has a malformed issue';
    for (const k of ['offset', 'seq', 'toSeq']) if (r[k] !== undefined && (!Number.isSafeInteger(r[k]) || (r[k] as number) < 0)) return `metadata sidecar has an issue with an invalid ${k}`;
  }
  if (o.tokens !== undefined && (typeof o.tokens !== 'object' || o.tokens === null)) return 'metadata sidecar tokens are invalid';
  return m as SessionMeta;
}
