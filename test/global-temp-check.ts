/**
 * vitest globalSetup: the whole run gets a temp folder of its own (TMPDIR,
 * inherited by every test worker and every child process they start), and
 * the run fails when anything is left in it at the end, naming what. Other
 * processes on the machine cannot make it fail, and it never looks at the
 * machine's own temp folder.
 *
 * Vitest runs a globalSetup once for the root config and again for each
 * project that inherits it: only the first makes (and checks) the folder.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const OWNER = 'SESSION_PAGER_TEST_RUN_DIR';

export default function setup(): () => void {
  const outer = process.env.TMPDIR;
  if (outer !== undefined && process.env[OWNER] === outer) return () => undefined;
  const dir = mkdtempSync(join(tmpdir(), 'session-pager-test-run-'));
  process.env.TMPDIR = dir;
  process.env[OWNER] = dir;
  return () => {
    delete process.env[OWNER];
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
