/**
 * bin/session-pager.js as a command (npm's bin link runs it by its shebang):
 * sh reads its first lines and hands over to node with `exec`, and for
 * `serve` only it sets glibc's mmap threshold (fixed at 256 KiB for the
 * start, so the warm-up's freed large buffers go back to the OS instead of
 * staying in an idle server's heaps; it says so in
 * SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD, and the server raises the threshold
 * once ready: src/main/heap-release.ts), after any tunables the user set and
 * never over a threshold the user chose, and V8's helper threads to the CPU
 * count when that is below Node's 4 (docs/decisions.md). Read by node itself,
 * the same file runs the CLI.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bin = resolve(root, 'bin/session-pager.js');
const version = `${JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')).version}\n`;

/** A `node` first on PATH that prints what the launcher handed it, and an `nproc` that says FAKE_NPROC (or fails when that is empty). */
const fake = mkdtempSync(join(tmpdir(), 'sp-launcher-'));
writeFileSync(join(fake, 'node'), '#!/bin/sh\nprintf "%s\\n" "GLIBC_TUNABLES=${GLIBC_TUNABLES-<unset>}"\nfor a in "$@"; do printf "arg=%s\\n" "$a"; done\n');
writeFileSync(join(fake, 'nproc'), '#!/bin/sh\n[ -n "$FAKE_NPROC" ] || exit 1\necho "$FAKE_NPROC"\n');
chmodSync(join(fake, 'nproc'), 0o755);
chmodSync(join(fake, 'node'), 0o755);
/** A `node` that prints only whether the launcher marked the threshold as its own. */
const markFake = mkdtempSync(join(tmpdir(), 'sp-launcher-mark-'));
writeFileSync(join(markFake, 'node'), '#!/bin/sh\nprintf "%s\\n" "MARK=${SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD-<unset>}"\n');
writeFileSync(join(markFake, 'nproc'), '#!/bin/sh\necho "$FAKE_NPROC"\n');
chmodSync(join(markFake, 'node'), 0o755);
chmodSync(join(markFake, 'nproc'), 0o755);
afterAll(() => {
  rmSync(fake, { recursive: true, force: true });
  rmSync(markFake, { recursive: true, force: true });
});

function launch(args: string[], tunables?: string, more: NodeJS.ProcessEnv = {}): string[] {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${fake}:${process.env.PATH ?? ''}`, FAKE_NPROC: '8', ...more };
  delete env.GLIBC_TUNABLES;
  if (tunables !== undefined) env.GLIBC_TUNABLES = tunables;
  const r = spawnSync(bin, args, { encoding: 'utf8', env });
  expect(r.status).toBe(0);
  return r.stdout.trim().split('\n');
}

describe('bin/session-pager.js, the launcher', () => {
  it('serve: node runs this file with the arguments as given, glibc mmap threshold set', () => {
    expect(launch(['serve', '--port', '0', 'a b'])).toEqual(['GLIBC_TUNABLES=glibc.malloc.mmap_threshold=262144', `arg=${bin}`, 'arg=serve', 'arg=--port', 'arg=0', 'arg=a b']);
  });

  it("serve: the user's tunables are kept, the threshold added after them", () => {
    expect(launch(['serve'], 'glibc.malloc.arena_max=2')[0]).toBe('GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=262144');
  });

  it('serve: V8 helper threads as many as CPUs below 4; none set from 4 CPUs, when nproc fails, or when NODE_OPTIONS sets it', () => {
    expect(launch(['serve', '--port', '0'], undefined, { FAKE_NPROC: '2' }).slice(1)).toEqual(['arg=--v8-pool-size=2', `arg=${bin}`, 'arg=serve', 'arg=--port', 'arg=0']);
    expect(launch(['serve'], undefined, { FAKE_NPROC: '1' })[1]).toBe('arg=--v8-pool-size=1');
    expect(launch(['serve'], undefined, { FAKE_NPROC: '4' })[1]).toBe(`arg=${bin}`);
    expect(launch(['serve'], undefined, { FAKE_NPROC: '' })[1]).toBe(`arg=${bin}`);
    expect(launch(['serve'], undefined, { FAKE_NPROC: '2', NODE_OPTIONS: '--v8-pool-size=3' })[1]).toBe(`arg=${bin}`);
    expect(launch(['page', 'x'], undefined, { FAKE_NPROC: '2' })[1]).toBe(`arg=${bin}`);
  });

  it('serve: the launcher says it set the threshold (SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD), and only when it did', () => {
    const marked = (args: string[], tunables?: string): string => {
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${markFake}:${process.env.PATH ?? ''}`, FAKE_NPROC: '8' };
      delete env.GLIBC_TUNABLES;
      delete env.SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD;
      if (tunables !== undefined) env.GLIBC_TUNABLES = tunables;
      const r = spawnSync(bin, args, { encoding: 'utf8', env });
      expect(r.status).toBe(0);
      return r.stdout.trim();
    };
    expect(marked(['serve'])).toBe('MARK=262144');
    expect(marked(['serve'], 'glibc.malloc.arena_max=2')).toBe('MARK=262144');
    expect(marked(['serve'], 'glibc.malloc.mmap_threshold=65536')).toBe('MARK=<unset>');
    expect(marked(['page', 'x'])).toBe('MARK=<unset>');
  });

  it("serve: a threshold the user chose is not overridden", () => {
    expect(launch(['serve'], 'glibc.malloc.trim_threshold=1:glibc.malloc.mmap_threshold=65536')[0]).toBe('GLIBC_TUNABLES=glibc.malloc.trim_threshold=1:glibc.malloc.mmap_threshold=65536');
  });

  it('other commands (page, import, ...) run with the environment untouched', () => {
    expect(launch(['page', 'x'])).toEqual(['GLIBC_TUNABLES=<unset>', `arg=${bin}`, 'arg=page', 'arg=x']);
    expect(launch(['--version'], 'glibc.malloc.arena_max=2')[0]).toBe('GLIBC_TUNABLES=glibc.malloc.arena_max=2');
  });

  it('runs the CLI both as a command and as `node bin/session-pager.js` (a real process)', () => {
    const asCommand = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    expect(asCommand.status).toBe(0);
    expect(asCommand.stdout).toBe(version);
    const underNode = spawnSync(process.execPath, [bin, '--version'], { encoding: 'utf8' });
    expect(underNode.status).toBe(0);
    expect(underNode.stdout).toBe(version);
  });

  it('serve as a command: one process, with the threshold in its environment, its workers started, ready (a real server)', async () => {
    const data = mkdtempSync(join(tmpdir(), 'sp-launcher-data-'));
    const env: NodeJS.ProcessEnv = { ...process.env, SESSION_PAGER_JIT_WARMUP: '0', SESSION_PAGER_PAGE_WARMUP: '0' };
    delete env.GLIBC_TUNABLES;
    delete env.SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD;
    const child = spawn(bin, ['serve', '--data', data, '--port', '0', '--workers', '2', '--log-level', 'warn'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    try {
      const url = await new Promise<string>((res, rej) => {
        const t = setTimeout(() => rej(new Error(`no banner: ${err}`)), 20_000);
        child.stderr.on('data', () => {
          const m = /listening on (http:\/\/\S+)/.exec(err);
          if (m) {
            clearTimeout(t);
            res(m[1] as string);
          }
        });
      });
      // exec, not a child: the server is the process spawned.
      const environ = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
      expect(environ).toContain('GLIBC_TUNABLES=glibc.malloc.mmap_threshold=262144');
      expect(environ).toContain('SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD=262144');
      const argv = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0');
      // The CPU count as the launcher reads it (nproc: the CPUs this process may run on).
      const n = Number(spawnSync('nproc', { encoding: 'utf8' }).stdout.trim());
      expect(argv.includes(`--v8-pool-size=${n}`)).toBe(n >= 1 && n < 4);
      for (let i = 0; ; i++) {
        const r = await fetch(`${url}/readyz`);
        if (r.status === 200) break;
        expect(i).toBeLessThan(400);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await fetch(`${url}/v1/sessions`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(data, { recursive: true, force: true });
    }
    expect(err).not.toMatch(/ERR_WORKER_INVALID_EXEC_ARGV|warm-up failed/);
  });
});
