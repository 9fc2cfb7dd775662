/**
 * A real `session-pager serve` process on 127.0.0.1 (port 0) over a temp
 * data dir, for the client and load-harness suites. Needs `npm run build`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SHEDDING_OFF } from './server-process.js';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'bin', 'session-pager.js');

/** One CLI command run to its end (stdout and stderr as text). */
export function runBin(args: string[], env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env, maxBuffer: 64 << 20 });
}

export interface ServerProcess {
  url: string;
  token: string;
  dir: string;
  child: ChildProcess;
  /** Everything it printed (stdout and stderr). */
  output(): string;
  /** SIGTERM, wait for exit, remove the data dir. */
  stop(): Promise<void>;
}

/** A spawned server without the follow streak shed and the lag guard unless `shedding` (SHEDDING_OFF says why). */
export async function startServerProcess(opts: { token?: string; workers?: number; dir?: string; env?: Record<string, string>; args?: string[]; shedding?: boolean } = {}): Promise<ServerProcess> {
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'sp-proc-')));
  const token = opts.token ?? 'proc-token-0123456789';
  const child = spawn(process.execPath, [BIN, 'serve', '--data', dir, '--port', '0', '--log-level', 'warn', '--workers', String(opts.workers ?? 1), ...(opts.args ?? [])], {
    env: { ...process.env, ...(opts.shedding === true ? {} : SHEDDING_OFF), ...(opts.env ?? {}), SESSION_PAGER_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    if (opts.dir === undefined) await rm(dir, { recursive: true, force: true });
  };
  try {
    const url = await new Promise<string>((res, rej) => {
      const deadline = setTimeout(() => rej(new Error(`server did not start in 30 s:\n${out}`)), 30_000);
      const check = () => {
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) {
          clearTimeout(deadline);
          child.stdout!.off('data', check);
          child.stderr!.off('data', check);
          res(m[1] as string);
        }
      };
      child.stdout!.on('data', check);
      child.stderr!.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(deadline);
        rej(new Error(`server exited (${code}) before listening:\n${out}`));
      });
    });
    return { url, token, dir, child, output: () => out, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
