/**
 * `generateSession`: write one synthetic session into a data directory
 * through the ordinary SessionWriter, batch by batch, so generated logs are
 * framed, packed and indexed exactly as served ones. The library entry point
 * for the CLI, tests and benchmarks.
 */
import type { SessionEvent } from '../core/types.js';
import { SessionWriter } from '../session-writer.js';
import type { FrameEncoding } from '../../streams/frame-codec.js';
import { windowBatches } from './batcher.js';
import { Rng } from './prng.js';
import { SessionScript } from './script.js';

export { minEventsFor } from './script.js';

export interface GenerateOptions {
  /** Session id; default `gen-<seed>-<stream>`. */
  id?: string;
  /** Logical events in the session, exactly. */
  events: number;
  /** Deltas of the in-flight message that ends the session (default 0). */
  tailEvents?: number;
  seed?: number;
  /** Index of this session within a run (picks its PRNG stream). */
  stream?: number;
  format?: FrameEncoding;
  /** Called after each batch with the number of events written so far. */
  onProgress?: (written: number) => void;
}

export interface GenerateResult {
  id: string;
  events: number;
  /** Size of the `.events` log. */
  bytes: number;
  frames: number;
  batches: number;
}

/** The append batches of a session, lazily: what `generateSession` writes. */
export function sessionBatches(opts: GenerateOptions): { header: SessionScript['header']; batches: Generator<SessionEvent[]> } {
  const seed = opts.seed ?? 1;
  const stream = opts.stream ?? 0;
  const id = opts.id ?? `gen-${seed}-${stream}`;
  const script = new SessionScript({ id, events: opts.events, tailEvents: opts.tailEvents ?? 0, seed, stream });
  return { header: script.header, batches: windowBatches(script.run(), new Rng(SessionScript.batchSeed(seed, stream))) };
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
