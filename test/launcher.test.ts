/**
 * bin/session-pager.js as a command (npm's bin link runs it by its shebang):
 * sh reads its first lines and hands over to node with `exec`, and for
 * `serve` only it sets glibc's mmap threshold (fixed at 128 KiB, so freed
 * large buffers go back to the OS instead of staying in an idle server's
 * heaps; docs/decisions.md), after any tunables the user set and never over
 * a threshold the user chose. Read by node itself, the same file runs the CLI.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bin = resolve(root, 'bin/session-pager.js');
const version = `${JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')).version}\n`;

/** A `node` first on PATH that prints what the launcher handed it. */
const fake = mkdtempSync(join(tmpdir(), 'sp-launcher-'));
writeFileSync(join(fake, 'node'), '#!/bin/sh\nprintf "%s\\n" "GLIBC_TUNABLES=${GLIBC_TUNABLES-<unset>}"\nfor a in "$@"; do printf "arg=%s\\n" "$a"; done\n');
chmodSync(join(fake, 'node'), 0o755);
afterAll(() => rmSync(fake, { recursive: true, force: true }));

function launch(args: string[], tunables?: string): string[] {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${fake}:${process.env.PATH ?? ''}` };
  delete env.GLIBC_TUNABLES;
  if (tunables !== undefined) env.GLIBC_TUNABLES = tunables;
  const r = spawnSync(bin, args, { encoding: 'utf8', env });
  expect(r.status).toBe(0);
  return r.stdout.trim().split('\n');
}

describe('bin/session-pager.js, the launcher', () => {
  it('serve: node runs this file with the arguments as given, glibc mmap threshold set', () => {
    expect(launch(['serve', '--port', '0', 'a b'])).toEqual(['GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072', `arg=${bin}`, 'arg=serve', 'arg=--port', 'arg=0', 'arg=a b']);
  });

  it("serve: the user's tunables are kept, the threshold added after them", () => {
    expect(launch(['serve'], 'glibc.malloc.arena_max=2')[0]).toBe('GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072');
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
});
