/**
 * Which binary frame indexes (`sessions/index/<id>/frames.idx`) this process
 * has found lying, so that pages stop planning from them: a plan from the
 * index that failed its checks (core/plan-check.ts) or that the frames
 * contradicted (core/frame-claim.ts) drops that index until its file
 * changes (a writer that starts it again, a reindex that rebuilds it).
 * Readers never delete it: `doctor --deep` reports it and `reindex`
 * rebuilds it.
 */
import { indexPath } from './index-projection.js';
import type { SessionPaths } from './paths.js';

export class IndexTrust {
  private readonly dropped = new Map<string, string>();

  /** `fileStamp(path)`: what changes when the file does (size, mtime, inode); the store stats its files. */
  constructor(private readonly fileStamp: (path: string) => string) {}

  /** Whether pages may plan from the session's index (a stat only for a session whose index was dropped). */
  usable(paths: SessionPaths): boolean {
    const was = this.dropped.get(paths.id);
    if (was === undefined) return true;
    if (was === this.fileStamp(indexPath(paths))) return false;
    this.dropped.delete(paths.id);
    return true;
  }

  drop(paths: SessionPaths): void {
    this.dropped.set(paths.id, this.fileStamp(indexPath(paths)));
  }

  /** Ids whose index is dropped now (store stats, tests). */
  droppedIds(): string[] {
    return [...this.dropped.keys()];
  }
}
