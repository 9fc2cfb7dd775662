/**
 * `generateSession`: write one synthetic session into a data directory
 * through the ordinary SessionWriter, batch by batch, so generated logs are
 * framed, packed and indexed exactly as served ones. The library entry point
 * for the CLI, tests and benchmarks.
 */
import type { StorageBackend } from '../../storage/backend.js';
import { sessionKeys } from '../../storage/layout.js';
import { storageAt, type StorageTarget } from '../../storage/local/local-backend.js';
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

/** How long generation runs between turns of the event loop when it can be interrupted. */
const YIELD_MS = 50;

export interface GenerateControl {
  /** Aborting it stops after the current batch; the unfinished session is removed. */
  signal?: AbortSignal;
}

/**
 * An unfinished generated session is removed, not left to look like a
 * short healthy one: the log first (without it nothing can pass for a
 * session), then its sidecars and projections.
 */
async function removeUnfinished(storage: StorageBackend, id: string): Promise<void> {
  const p = sessionKeys(id);
  await storage.remove(p.events);
  await storage.remove(p.meta);
  await storage.remove(p.entries);
  await storage.removeAll(p.projections);
}

/** `target`: the store's backend, or a local data directory. */
export async function generateSession(target: StorageTarget, opts: GenerateOptions, control: GenerateControl = {}): Promise<GenerateResult> {
  const storage = storageAt(target);
  const { header, batches } = sessionBatches(opts);
  // Not durable per append: one fsync at close is enough for a generated corpus and keeps gen fast.
  // Until it is finished, the metadata says so: a gen killed outright (SIGKILL, nothing removes it) leaves a
  // session that shows `degraded` with this reason, not one that looks like a healthy shorter session.
  const writer = await SessionWriter.create(storage, header.id, header, {
    durable: false,
    format: opts.format ?? 'jsonl',
    unfinished: 'gen did not finish writing this session (it was killed): its events stop short of what was asked; delete it or generate it again',
  });
  let written = 0;
  let count = 0;
  let finished = false;
  try {
    let turn = Date.now();
    for (const batch of batches) {
      if (control.signal !== undefined && Date.now() - turn > YIELD_MS) {
        // The writer's I/O may all be synchronous: give the event loop a turn so a signal is seen.
        await new Promise((resolve) => setImmediate(resolve));
        turn = Date.now();
      }
      control.signal?.throwIfAborted();
      await writer.append(batch);
      written += batch.length;
      count++;
      opts.onProgress?.(written);
    }
    writer.finish();
    finished = true;
  } finally {
    await writer.close();
    if (!finished) await removeUnfinished(storage, header.id);
  }
  const meta = writer.metadata;
  return { id: header.id, events: meta.nextSeq, bytes: meta.indexedLength, frames: meta.frameCount, batches: count };
}
