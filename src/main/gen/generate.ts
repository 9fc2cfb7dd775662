/**
 * `generateSession`: write one synthetic session into a data directory
 * through the ordinary SessionWriter, batch by batch, so generated logs are
 * framed, packed and indexed exactly as served ones. The library entry point
 * for the CLI, tests and benchmarks.
 */
import { SessionWriter } from '../session-writer.js';
import { sessionBatches, type GenerateOptions } from './session-batches.js';

export { minEventsFor } from './script.js';
export { sessionBatches, type GenerateOptions };

export interface GenerateResult {
  id: string;
  events: number;
  /** Size of the `.events` log. */
  bytes: number;
  frames: number;
  batches: number;
}

export async function generateSession(dataDir: string, opts: GenerateOptions): Promise<GenerateResult> {
  const { header, batches } = sessionBatches(opts);
  // Not durable per append: one fsync at close is enough for a generated corpus and keeps gen fast.
  const writer = await SessionWriter.create(dataDir, header.id, header, { durable: false, format: opts.format ?? 'jsonl' });
  let written = 0;
  let count = 0;
  try {
    for (const batch of batches) {
      await writer.append(batch);
      written += batch.length;
      count++;
      opts.onProgress?.(written);
    }
  } finally {
    await writer.close();
  }
  const meta = writer.metadata;
  return { id: header.id, events: meta.nextSeq, bytes: meta.indexedLength, frames: meta.frameCount, batches: count };
}
