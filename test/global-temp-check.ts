/**
 * vitest globalSetup: the whole run gets a temp folder of its own (TMPDIR,
 * inherited by every test worker and every child process they start), and
 * the run fails when anything is left in it at the end, naming what. Other
 * processes on the machine cannot make it fail, and it never looks at the
 * machine's own temp folder.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const outer = process.env.TMPDIR;
  const dir = mkdtempSync(join(tmpdir(), 'session-pager-test-run-'));
  process.env.TMPDIR = dir;
  return () => {
    if (outer === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = outer;
    const left = readdirSync(dir);
    rmSync(dir, { recursive: true, force: true });
    if (left.length > 0) {
      process.exitCode = 1;
      throw new Error(`tests left ${left.length} entr${left.length === 1 ? 'y' : 'ies'} in the temp folder (remove temp dirs in afterAll/finally): ${left.sort().join(', ')}`);
    }
  };
}
