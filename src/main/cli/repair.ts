/**
 * `session-pager repair <id>`: back the log up, cut
 * only a clearly invalid tail, reindex (see maintenance/repair.ts). Prints
 * the plan; `--dry-run` writes nothing.
 *
 * Exit 0 when the session ends ok, or degraded only by corrupt middle frames
 * repair keeps by design; 1 when something is left that repair cannot fix
 * (an invalid header, a tail kept for a human), with the reason on stderr.
 */
import type { StorageBackend } from '../../storage/backend.js';
import { sessionKeys } from '../../storage/layout.js';
import { LocalBackend } from '../../storage/local/local-backend.js';
import { repairSession, type RepairStep } from '../maintenance/repair.js';
import { assertSessionId } from '../paths.js';
import { DATA_DIR, defineCommand } from './command.js';
import { Progress } from './common.js';
import { STORE, withStorage } from './store-flag.js';

/** Where a key is, for a human: local files by their path, other stores by key. */
function whereIs(storage: StorageBackend, key: string): string {
  return storage instanceof LocalBackend ? storage.path(key) : `${key} (${storage.kind} store)`;
}

function describeStep(s: RepairStep, storage: StorageBackend): string {
  switch (s.kind) {
    case 'backup':
      return `back up the log to ${whereIs(storage, s.key)}`;
    case 'truncate':
      return `cut ${s.bytes} bytes at offset ${s.from} (${s.reason})`;
    case 'reindex':
      return `rebuild the sidecars (${s.reason})`;
    case 'remove':
      return `remove the log and its sidecars (${s.reason})`;
  }
}

export const command = defineCommand({
  name: 'repair',
  summary: 'back the log up, cut only a clearly invalid tail, reindex',
  positionals: [{ name: 'id', describe: 'the session to repair' }],
  options: {
    data: DATA_DIR,
    store: STORE,
    'dry-run': { type: 'boolean', describe: 'print the plan, write nothing' },
  },
  existingDir: 'data',
  examples: ['session-pager repair my-session --dry-run --data ./data', 'session-pager repair my-session --store s3://bucket/sessions'],
  run: ({ values, positionals }, env) => withStorage(values.store, values.data, env, (storage) => repair(storage, positionals[0] as string, values['dry-run'])),
});

async function repair(storage: StorageBackend, rawId: string, dryRun: boolean): Promise<number> {
  const id = assertSessionId(rawId);
  const paths = sessionKeys(id);
  const size = (await storage.stat(paths.events))?.size ?? 0;
  const bar = new Progress(`repair ${id}`, size, ' bytes');
  const out = await repairSession(paths, { dryRun, onProgress: (b) => bar.update(Math.min(b, size)) }, storage);
  bar.done();
  const { plan } = out;
  const lines: string[] = [];
  if (plan.steps.length === 0) lines.push(`repair ${id}: nothing to do`);
  else {
    lines.push(dryRun ? `repair ${id} plan (dry run, nothing written):` : `repair ${id}:`);
    for (const s of plan.steps) lines.push(`  ${dryRun ? 'would ' : ''}${describeStep(s, storage)}`);
  }
  for (const k of plan.kept) lines.push(`  keep ${k} (pages covering it fail with corrupt_range)`);
  for (const u of plan.unfixable) lines.push(`  cannot fix: ${u}`);
  const removed = !dryRun && out.done.some((s) => s.kind === 'remove');
  if (removed) lines.push(`  status: removed (session ${id} was never created; the id is free)`);
  else if (!dryRun) lines.push(`  status: ${out.after.status}${out.after.status === 'ok' ? '' : ` (${out.after.reasons.join('; ')})`}`);
  process.stdout.write(lines.join('\n') + '\n');
  if (plan.unfixable.length > 0) {
    process.stderr.write(`session-pager repair: session ${id} still needs attention: ${plan.unfixable.join('; ')}\n`);
    return 1;
  }
  if (!dryRun && !removed && out.after.status === 'repair_required') {
    process.stderr.write(`session-pager repair: session ${id} still needs repair: ${out.after.reasons.join('; ')}\n`);
    return 1;
  }
  return 0;
}
