/**
 * `session-pager doctor [id]`: diagnose sessions; reads, never writes (not
 * even a lock file).
 *
 * Exit codes: 0 every session ok; 3 the worst is degraded; 4 at least one
 * needs repair; 2 usage error; 1 other failure (e.g. unknown session).
 */
import { PagerError } from '../../core/errors.js';
import type { StorageBackend } from '../../storage/backend.js';
import { diagnose, sessionStored, type DoctorReport } from '../maintenance/doctor.js';
import { assertSessionId } from '../paths.js';
import { DATA_DIR, defineCommand } from './command.js';
import { Progress } from './common.js';
import { STORE, withStorage } from './store-flag.js';

export const EXIT_DEGRADED = 3;
export const EXIT_REPAIR_REQUIRED = 4;

function cell(v: number | null): string {
  return v === null ? '-' : String(v);
}

export function formatTable(reports: DoctorReport[]): string {
  const head = ['SESSION', 'STATUS', 'SIDECARS', 'EVENTS', 'FRAMES', 'LOG', 'INDEXED', 'LAST_GOOD'];
  const rows = reports.map((r) => [r.id, r.status, r.sidecars, cell(r.eventCount), cell(r.frameCount), String(r.logSize), cell(r.indexedLength), cell(r.lastGoodOffset)]);
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cols: string[]): string => cols.map((c, i) => (i === cols.length - 1 ? c : c.padEnd(width[i] as number))).join('  ');
  const out = [line(head)];
  reports.forEach((r, k) => {
    out.push(line(rows[k] as string[]));
    for (const i of r.issues) {
      const at = i.offset === undefined ? '' : ` @${i.offset}`;
      const seqs = i.fromSeq === undefined ? '' : i.toSeq === undefined ? ` seq ${i.fromSeq}+` : ` seq ${i.fromSeq}..${i.toSeq - 1}`;
      out.push(`  ${i.severity} ${i.code}${at}${seqs}: ${i.message}`);
    }
  });
  return out.join('\n') + '\n';
}

export const command = defineCommand({
  name: 'doctor',
  summary: 'diagnose sessions: status, sidecars, issues (reads, never writes)',
  positionals: [{ name: 'id', required: false, describe: 'one session', }],
  options: {
    data: DATA_DIR,
    store: STORE,
    deep: { type: 'boolean', describe: 'also scan every log frame by frame (maintenance; reads whole logs)' },
    json: { type: 'boolean', describe: 'print one JSON document instead of the table' },
  },
  exitCodes: ['3  the worst session is degraded', '4  at least one session needs repair'],
  existingDir: 'data',
  examples: ['session-pager doctor --deep --data ./data', 'session-pager doctor --store s3://bucket/sessions'],
  run: ({ values, positionals }, env) => withStorage(values.store, values.data, env, (storage) => doctor(storage, positionals[0], values.deep, values.json)),
});

async function doctor(storage: StorageBackend, id: string | undefined, deep: boolean, json: boolean): Promise<number> {
  if (id !== undefined) {
    assertSessionId(id);
    if (!(await sessionStored(storage, id))) throw new PagerError('session_not_found', `session ${id} not found`);
  }
  let bar: { id: string; p: Progress } | null = null;
  const reports = await diagnose(storage, id, {
    deep,
    onProgress: (bytes, total, sid) => {
      if (bar === null || bar.id !== sid) {
        bar?.p.done();
        bar = { id: sid, p: new Progress(`doctor --deep ${sid}`, total, ' bytes') };
      }
      bar.p.update(bytes);
    },
  });
  (bar as { p: Progress } | null)?.p.done();
  const counts = { ok: 0, degraded: 0, repair_required: 0 };
  for (const r of reports) counts[r.status]++;
  if (json) process.stdout.write(JSON.stringify({ sessions: reports, summary: counts }) + '\n');
  else process.stdout.write(reports.length === 0 ? 'no sessions\n' : formatTable(reports));
  if (counts.repair_required > 0 || counts.degraded > 0) {
    process.stderr.write(`session-pager doctor: ${counts.repair_required} session(s) need repair, ${counts.degraded} degraded, ${counts.ok} ok\n`);
  }
  return counts.repair_required > 0 ? EXIT_REPAIR_REQUIRED : counts.degraded > 0 ? EXIT_DEGRADED : 0;
}
