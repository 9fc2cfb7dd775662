/**
 * `session-pager repair <id>`: back the log up, cut
 * only a clearly invalid tail, reindex (see maintenance/repair.ts). Prints
 * the plan; `--dry-run` writes nothing.
 *
 * Exit 0 when the session ends ok, or degraded only by corrupt middle frames
 * repair keeps by design; 1 when something is left that repair cannot fix
 * (an invalid header, a tail kept for a human), with the reason on stderr.
 */
import { repairSession, type RepairStep } from '../maintenance/repair.js';
import { assertSessionId, sessionPaths } from '../paths.js';
import { DATA_DIR, defineCommand } from './command.js';
import { Progress } from './common.js';
import { promises as fsp } from 'node:fs';

function describeStep(s: RepairStep): string {
  switch (s.kind) {
    case 'backup':
      return `back up the log to ${s.path}`;
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
    'dry-run': { type: 'boolean', describe: 'print the plan, write nothing' },
  },
  existingDir: 'data',
  examples: ['session-pager repair my-session --dry-run --data ./data'],
  run: ({ values, positionals }) => repair(values.data, positionals[0] as string, values['dry-run']),
});

async function repair(dataDir: string, rawId: string, dryRun: boolean): Promise<number> {
  const id = assertSessionId(rawId);
  const paths = sessionPaths(dataDir, id);
  const size = await fsp.stat(paths.events).then((s) => s.size, () => 0);
  const bar = new Progress(`repair ${id}`, size, ' bytes');
  const out = await repairSession(paths, { dryRun, onProgress: (b) => bar.update(Math.min(b, size)) });
  bar.done();
  const { plan } = out;
  const lines: string[] = [];
  if (plan.steps.length === 0) lines.push(`repair ${id}: nothing to do`);
  else {
    lines.push(dryRun ? `repair ${id} plan (dry run, nothing written):` : `repair ${id}:`);
    for (const s of plan.steps) lines.push(`  ${dryRun ? 'would ' : ''}${describeStep(s)}`);
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
