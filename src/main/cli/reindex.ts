/**
 * `session-pager reindex [id] [--data DIR]`: rebuild sidecars from the
 * canonical log (one session, or every session of the data directory).
 * Exit 0 when every session was reindexed; 1 when one could not be (the
 * others are still done), with a one-line reason on stderr.
 */
import { reindexSession } from '../maintenance/reindex.js';
import { listSessionIds } from '../maintenance/doctor.js';
import { loadSessionState } from '../session-state.js';
import { assertSessionId, sessionPaths } from '../paths.js';
import { CliError, DATA_OPTION, parse, Progress } from './common.js';
import { promises as fsp } from 'node:fs';

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { ...DATA_OPTION });
  if (positionals.length > 1) throw new CliError('reindex takes at most one session id');
  const dataDir = values.data as string;
  const one = positionals[0];
  const ids = one === undefined ? await listSessionIds(dataDir) : [assertSessionId(one)];
  const failures: string[] = [];
  for (const id of ids) {
    const paths = sessionPaths(dataDir, id);
    const size = await fsp.stat(paths.events).then((s) => s.size, () => 0);
    const bar = new Progress(`reindex ${id}`, size, ' bytes');
    try {
      const r = await reindexSession(paths, { onProgress: (b) => bar.update(b) });
      bar.done();
      const state = await loadSessionState(paths);
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
