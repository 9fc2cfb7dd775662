/**
 * Slices for tests of a worker's arenas (workers/page-task.ts): a generated session's frames past
 * a megabyte with a task that decodes them whole, a way to leave the worker holding no arena, and
 * a comparable view of a slice's result.
 */
import { parseSlice } from '../../src/main/page-assembler.js';
import { packBatch } from '../../src/core/chunk-codec.js';
import type { SessionEvent, StorageRecord } from '../../src/core/types.js';
import { sessionBatches } from '../../src/main/gen/session-batches.js';
import { encodeFrame } from '../../src/streams/frame-codec.js';
import { warmupWork } from '../../src/workers/jit-warmup.js';
import { runPageTask } from '../../src/workers/page-task.js';
import { sliceTask, type SliceTask } from '../../src/workers/slice-protocol.js';

/** A generated session's frames (past a megabyte from 60,000 events) and a task that decodes them whole. */
export function largeSlice(events = 60_000): { bytes: Buffer; task: () => SliceTask } {
  const gen = sessionBatches({ id: 'large', events, tailEvents: 5_000, seed: 3 });
  const records: StorageRecord[] = [];
  for (const batch of gen.batches) records.push(...packBatch(batch as SessionEvent[]));
  const bytes = Buffer.concat(records.map((r) => encodeFrame(r, 'jsonl')));
  return { bytes, task: () => sliceTask('', 'large', 0, bytes.length, 0, events, 0, events) };
}

/** The worker holds no arena: a small slice's result is its arena itself, which goes with it. */
export function dropWorkerArena(): void {
  const w = warmupWork()[0] as { bytes: Buffer; tasks: SliceTask[] };
  runPageTask({ ...(w.tasks[0] as SliceTask), bytes: Buffer.from(w.bytes), inPlace: true });
}

/** A slice result's sections and counts as one comparable string. */
export const sliceView = (r: ArrayBuffer): string => {
  const { head, whole, body, tail, frames, bytesRead } = parseSlice(r);
  return JSON.stringify({ head, whole, body: Buffer.from(body).toString('latin1'), tail, frames, bytesRead });
};
