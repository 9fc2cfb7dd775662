/**
 * `--store s3://bucket/prefix` from the command line: a bad URL is refused
 * with one line (test/s3/serve-store.test.ts runs serve and page over a
 * real S3 endpoint).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers/serve-process.js';

function cli(args: string[], env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env, maxBuffer: 64 << 20 });
}

describe('--store on the command line', () => {
  it('refuses what is not an s3:// URL of a valid bucket, with one line on stderr', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sp-s3cli-'));
    try {
      for (const [store, why] of [
        ['http://bucket/x', /--store must be an s3:\/\/bucket\/prefix URL/],
        ['s3://B', /bad bucket name/],
        ['s3://bucket/a//b', /bad prefix/],
      ] as const) {
        const r = cli(['page', 'x', '--data', dir, '--store', store]);
        expect(r.status, r.stderr).not.toBe(0);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.stderr).toMatch(why);
      }
      const r = cli(['serve', '--demo', '--store', 's3://bucket/p', '--data', dir]);
      expect(r.stderr).toMatch(/--demo .* does not go with --store/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});


describe('--store on the maintenance commands', () => {
  for (const name of ['import', 'gen', 'doctor', 'reindex', 'repair']) {
    it(`${name}: --help names it, and a bad URL is refused with one line as serve and page refuse it`, () => {
      const help = cli([name, '--help']);
      expect(help.status).toBe(0);
      expect(help.stdout).toMatch(/--store URL\s+where sessions live: s3:\/\/bucket\/prefix/);
      const dir = mkdtempSync(join(tmpdir(), 'sp-s3cli-'));
      try {
        const args = name === 'import' ? [join(dir, 'x.jsonl')] : name === 'repair' ? ['x'] : [];
        const r = cli([name, ...args, '--data', dir, '--store', 'http://bucket/x']);
        expect(r.status, r.stderr).toBe(2);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.stderr).toMatch(/--store must be an s3:\/\/bucket\/prefix URL/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
