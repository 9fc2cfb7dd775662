/**
 * `session-pager reindex [id]`: rebuild sidecars from the
 * canonical log (one session, or every session of the data directory).
 * Exit 0 when every session was reindexed; 1 when one could not be (the
 * others are still done), with a one-line reason on stderr.
 */
import type { StorageBackend } from '../../storage/backend.js';
import { sessionKeys } from '../../storage/layout.js';
import { reindexSession } from '../maintenance/reindex.js';
import { listSessionIds } from '../maintenance/doctor.js';
import { loadSessionState } from '../session-state.js';
import { assertSessionId } from '../paths.js';
import { DATA_DIR, defineCommand } from './command.js';
import { Progress } from './common.js';
import { STORE, withStorage } from './store-flag.js';

export const command = defineCommand({
  name: 'reindex',
  summary: 'rebuild the sidecars of one or every session from the canonical log',
  positionals: [{ name: 'id', required: false, describe: 'one session', }],
  options: { data: DATA_DIR, store: STORE },
  existingDir: 'data',
  examples: ['session-pager reindex my-session --data ./data', 'session-pager reindex --store s3://bucket/sessions'],
  run: ({ values, positionals }, env) => withStorage(values.store, values.data, env, (storage) => reindex(storage, positionals[0])),
});

async function reindex(storage: StorageBackend, one: string | undefined): Promise<number> {
  const ids = one === undefined ? await listSessionIds(storage) : [assertSessionId(one)];
  const failures: string[] = [];
  for (const id of ids) {
    const paths = sessionKeys(id);
    const size = (await storage.stat(paths.events))?.size ?? 0;
    const bar = new Progress(`reindex ${id}`, size, ' bytes');
    try {
      const r = await reindexSession(paths, { onProgress: (b) => bar.update(b) }, storage);
      bar.done();
      const state = await loadSessionState(paths, storage);
      const a = r.analysis;
      const extra = state.status === 'ok' ? '' : `: ${state.reasons.join('; ')}`;
      process.stdout.write(`reindexed ${id}: ${a.eventCount} events, ${a.frameCount} frames, ${a.indexedEnd} of ${a.logSize} bytes indexed, ${state.status}${extra}\n`);
    } catch (err) {
      bar.done();
      if (one !== undefined) throw err;
      failures.push(`${id}: ${(err as Error).message}`);
    }
  }
  if (failures.length > 0) {
    process.stderr.write(`session-pager reindex: ${failures.length} session(s) not reindexed: ${failures.join('; ')}\n`);
    return 1;
  }
  if (ids.length === 0) process.stdout.write('no sessions\n');
  return 0;
}
