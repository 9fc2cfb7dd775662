/**
 * loadtest/overload.mjs run as users run it: a process of its own (never inside the test's), with
 * `--json`, the server's environment passed through `--server-env`; resolves its last line (the
 * whole run's JSON). Killed after two minutes so a hung run fails its test instead of the suite.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SCRIPT = join(ROOT, 'loadtest', 'overload.mjs');

export function runOverload<T>(args: string[], serverEnv: Record<string, string> = {}): Promise<T> {
  return new Promise((done, reject) => {
    const env = Object.entries(serverEnv)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const argv = [SCRIPT, '--json', ...args, ...(env ? ['--server-env', env] : [])];
    const child = spawn(process.execPath, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`overload.mjs exited ${code}: ${err.trim()}`));
      try {
        done(JSON.parse(out.trim().split('\n').at(-1) as string) as T);
      } catch (e) {
        reject(e as Error);
      }
    });
  });
}
