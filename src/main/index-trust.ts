/**
 * Which binary frame indexes (`sessions/index/<id>/frames.idx`) this process
 * has found lying, so that pages stop planning from them: a plan from the
 * index that failed its checks (core/plan-check.ts) or that the frames
 * contradicted (core/frame-claim.ts) drops that index until its object
 * changes (a writer that starts it again, a reindex that rebuilds it).
 * Readers never delete it: `doctor --deep` reports it and `reindex`
 * rebuilds it.
 */
import type { StorageBackend } from '../storage/backend.js';
import type { SessionKeys } from '../storage/layout.js';
import { indexKey } from './index-projection.js';

export class IndexTrust {
  private readonly dropped = new Map<string, string>();

  constructor(private readonly storage: StorageBackend) {}

  /** What changes when the index object does (its version). */
  private async stamp(paths: SessionKeys): Promise<string> {
    return (await this.storage.stat(indexKey(paths)))?.version ?? '-';
  }

  /** Whether pages may plan from the session's index (a stat only for a session whose index was dropped). */
  async usable(paths: SessionKeys): Promise<boolean> {
    const was = this.dropped.get(paths.id);
    if (was === undefined) return true;
    if (was === (await this.stamp(paths))) return false;
    this.dropped.delete(paths.id);
    return true;
  }

  async drop(paths: SessionKeys): Promise<void> {
    this.dropped.set(paths.id, await this.stamp(paths));
  }

  /** Ids whose index is dropped now (store stats, tests). */
  droppedIds(): string[] {
    return [...this.dropped.keys()];
  }
}
