/**
 * A synthetic session as append batches, lazily and without I/O: what
 * `generateSession` writes, and what the page workers' JIT warm-up decodes.
 */
import type { SessionEvent } from '../../core/types.js';
import type { FrameEncoding } from '../../streams/frame-codec.js';
import { windowBatches } from './batcher.js';
import { Rng } from './prng.js';
import { SessionScript } from './script.js';

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

/** The append batches of a session, lazily: what `generateSession` writes. */
export function sessionBatches(opts: GenerateOptions): { header: SessionScript['header']; batches: Generator<SessionEvent[]> } {
  const seed = opts.seed ?? 1;
  const stream = opts.stream ?? 0;
  const id = opts.id ?? `gen-${seed}-${stream}`;
  const script = new SessionScript({ id, events: opts.events, tailEvents: opts.tailEvents ?? 0, seed, stream });
  return { header: script.header, batches: windowBatches(script.run(), new Rng(SessionScript.batchSeed(seed, stream))) };
}

