/**
 * Page workers start in a process run with flags a worker refuses (`node
 * --trace-gc ...`, as one runs the server to watch its collections): the
 * pool passes its own flag list, which Node refuses whole for one such flag
 * (ERR_WORKER_INVALID_EXEC_ARGV), so the pool drops what was refused.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { refusedFlags, WORKER_FLAGS, workerExecArgv } from '../src/main/worker-exec-argv.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('workers under the parent process flags', () => {
  it('a pool opens and serves a slice in a process started with flags a worker refuses', () => {
    const script = `
      const { createPagePool, runSlice } = await import('./dist/main/worker-pool.js');
      const { sliceTask } = await import('./dist/workers/slice-protocol.js');
      const pool = createPagePool({ threads: 1, jitWarmUp: false });
      await runSlice(pool, sliceTask('', '', 0, 0, 0, 0, 0, 0));
      await pool.close();
      console.log('slice served');`;
    const r = spawnSync(process.execPath, ['--trace-gc', '--max-old-space-size=256', '--stack-size=900', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).not.toMatch(/ERR_WORKER_INVALID_EXEC_ARGV/);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('slice served');
  });

  it('keeps the flags a worker takes and drops the refused ones with their separate values', () => {
    const parent = ['--trace-gc', '--enable-source-maps', '--max-old-space-size', '300', '--title=x', '--conditions=dev'];
    expect(workerExecArgv(parent)).toEqual([...parent, ...WORKER_FLAGS]);
    expect(workerExecArgv(parent, new Set(['--trace-gc', '--max-old-space-size', '--title=x']))).toEqual(['--enable-source-maps', '--conditions=dev', ...WORKER_FLAGS]);
  });

  it("reads the refused flags from Node's error, and nothing from any other error", () => {
    const err = Object.assign(new Error('Initiated Worker with invalid execArgv flags: --trace-gc, --max-old-space-size=300, --title=x'), { code: 'ERR_WORKER_INVALID_EXEC_ARGV' });
    expect(refusedFlags(err)).toEqual(new Set(['--trace-gc', '--max-old-space-size=300', '--title=x']));
    expect(refusedFlags(new Error('flags: --x'))).toBeNull();
    expect(refusedFlags('ERR_WORKER_INVALID_EXEC_ARGV')).toBeNull();
  });
});
