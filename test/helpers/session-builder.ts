/**
 * Writes a list of logical events as a session through the real writer, with
 * chosen append-batch boundaries and a frame encoding per batch (both
 * encodings mixed in one log, as the SPEC allows).
 */
import { SessionWriter } from '../../src/main/session-writer.js';
import type { SessionEvent } from '../../src/main/core/types.js';
import type { FrameEncoding } from '../../src/streams/frame-codec.js';

export interface Batch {
  size: number;
  format: FrameEncoding;
}

export async function writeSession(dataDir: string, id: string, events: readonly SessionEvent[], batches: readonly Batch[], header: Record<string, unknown> = {}): Promise<void> {
  const first = batches[0]?.format ?? 'jsonl';
  let writer = await SessionWriter.create(dataDir, id, { type: 'session', version: 1, id, createdAt: 1_700_000_000_000, ...header }, { format: first, durable: false });
  let format = first;
  let at = 0;
  let b = 0;
  while (at < events.length) {
    const batch = batches[b % Math.max(1, batches.length)] ?? { size: events.length, format };
    b++;
    if (batch.format !== format) {
      await writer.close();
      writer = await SessionWriter.open(dataDir, id, { format: batch.format, durable: false });
      format = batch.format;
    }
    const size = Math.max(1, batch.size);
    await writer.append(events.slice(at, at + size));
    at += size;
  }
  await writer.close();
}
