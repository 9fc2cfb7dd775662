/**
 * A store whose slices go to their workers with no checksum or row-metadata records at all, the
 * reference the record tests compare pages with: nothing to trust, so nothing may be skipped.
 * Reaches into the page service's dispatch (a test seam, not an option users have).
 */
import type { PagerStore } from '../../src/main/store.js';
import type { SliceTask } from '../../src/workers/slice-protocol.js';

type Pages = { onPool: (v: unknown, tasks: SliceTask[]) => Promise<unknown> };

export function withoutSliceRecords(store: PagerStore): void {
  const pages = (store as unknown as { pages: Pages }).pages;
  const onPool = pages.onPool.bind(pages);
  pages.onPool = (v, tasks) => {
    for (const t of tasks) {
      t.crcs = undefined;
      t.meta = undefined;
    }
    return onPool(v, tasks);
  };
}
