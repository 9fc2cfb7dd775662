/**
 * How a real host groups events into append batches: it buffers what arrives
 * during a write window (a couple of hundred milliseconds) and writes the
 * buffer when the window closes, and it writes at once after events a reader
 * must not lose (messages, tool results, step and turn ends). So a long
 * streamed message is stored as many packed rows of tens of deltas each,
 * and non-streaming events travel in small batches.
 */
import type { SessionEvent } from '../../core/types.js';
import type { Rng } from './prng.js';

/** Events after which the host flushes immediately. */
export const COMMIT_TYPES: ReadonlySet<string> = new Set([
  'user/message',
  'assistant/message',
  'tool/result',
  'step/end',
  'turn/end',
  'session/title',
  'compaction/end',
]);

export const WINDOW_MIN_MS = 120;
export const WINDOW_MAX_MS = 320;
/** A safety cap; windows end long before it at realistic token rates. */
export const MAX_WINDOW_EVENTS = 1000;

/** Group a time-ordered event stream into append batches. */
export function* windowBatches(events: Iterable<SessionEvent>, rng: Rng): Generator<SessionEvent[]> {
  let batch: SessionEvent[] = [];
  let windowEnd = 0;
  for (const e of events) {
    if (batch.length > 0 && (e.time >= windowEnd || batch.length >= MAX_WINDOW_EVENTS)) {
      yield batch;
      batch = [];
    }
    // The window opens with its first event; its length varies like a real timer under load.
    if (batch.length === 0) windowEnd = e.time + rng.int(WINDOW_MIN_MS, WINDOW_MAX_MS);
    batch.push(e);
    if (COMMIT_TYPES.has(e.type)) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
