/**
 * Every decoder the tests have for a response coding, each giving the bytes
 * it decoded: zlib's own, the `gzip` and `zstd` command-line tools (Debian's
 * gzip and zstd packages; .ci/run installs zstd, gzip is in every base
 * system) and fzstd, an independent pure-JS zstd decoder.
 */
import { spawnSync } from 'node:child_process';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { decompress as fzstdDecompress } from 'fzstd';
import { expect } from 'vitest';
import type { PageEncoding } from '../../src/main/page-coding.js';

function cli(name: string): boolean {
  const r = spawnSync(name, ['--version'], { encoding: 'utf8' });
  return r.error === undefined && r.status === 0;
}

export const HAVE_ZSTD_CLI = cli('zstd');
export const HAVE_GZIP_CLI = cli('gzip');

/** `args` of a CLI decoding stdin to stdout; it must succeed. */
function viaCli(cmd: string, args: string[]): (b: Buffer) => Buffer {
  return (b) => {
    const r = spawnSync(cmd, args, { input: b, maxBuffer: 512 * 1024 * 1024 });
    expect(r.status, `${cmd} ${args.join(' ')}: ${String(r.stderr)}`).toBe(0);
    return Buffer.from(r.stdout);
  };
}

type Decoder = { name: string; decode: (b: Buffer) => Buffer };

/** `cliToo`: the command-line decoders as well (a process each: slower). */
export function decoders(coding: PageEncoding, cliToo = true): Decoder[] {
  switch (coding) {
    case 'gzip': {
      const out: Decoder[] = [{ name: 'zlib.gunzipSync', decode: (b: Buffer) => gunzipSync(b) }];
      if (cliToo && HAVE_GZIP_CLI) out.push({ name: 'gzip -d', decode: viaCli('gzip', ['-d', '-c']) });
      return out;
    }
    case 'br':
      return [{ name: 'zlib.brotliDecompressSync', decode: (b) => brotliDecompressSync(b) }];
    case 'zstd': {
      const out: Decoder[] = [{ name: 'fzstd', decode: (b: Buffer) => Buffer.from(fzstdDecompress(b)) }];
      if (cliToo && HAVE_ZSTD_CLI) out.push({ name: 'zstd -d', decode: viaCli('zstd', ['-d', '-c', '-q']) });
      return out;
    }
  }
}
