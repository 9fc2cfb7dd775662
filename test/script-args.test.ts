/**
 * The bench/ and loadtest/ scripts' options (bench/args.mjs): `--help` prints the script's
 * header comment and exits 0 before any work; an unknown option or a missing value is one line on
 * stderr with "see --help", exit 2, no stack trace. Real processes, as a user runs them; and no
 * script parses its options past the helper (node:util's parseArgs alone threw a stack trace).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const run = (script: string, ...args: string[]) => spawnSync(process.execPath, [join(ROOT, script), ...args], { encoding: 'utf8', timeout: 60_000 });

/** Every bench/ and loadtest/ script that takes options (the helper itself aside). */
const SCRIPTS = ['bench', 'loadtest'].flatMap((dir) =>
  readdirSync(join(ROOT, dir))
    .filter((f) => f.endsWith('.mjs') && f !== 'args.mjs')
    .map((f) => `${dir}/${f}`)
    .filter((f) => /\bparse(Script)?Args\(/.test(readFileSync(join(ROOT, f), 'utf8'))),
);

describe('bench/ and loadtest/ scripts: --help and bad options', () => {
  it('every script with options parses them through bench/args.mjs', () => {
    expect(SCRIPTS.length).toBeGreaterThanOrEqual(21);
    const bare = SCRIPTS.filter((f) => /\bparseArgs\(/.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(bare).toEqual([]);
  });

  it.each(['loadtest/overload.mjs', 'loadtest/cluster.mjs', 'bench/page-ab.mjs', 'bench/catalog-bench.mjs', 'bench/http-load.mjs'])(
    '%s --help prints its header comment, exit 0',
    (script) => {
      const r = run(script, '--help');
      expect(r.status).toBe(0);
      expect(r.stderr).toBe('');
      // The header's first sentence, markers stripped, and the options it documents.
      const header = readFileSync(join(ROOT, script), 'utf8').split('\n').slice(1, 4).join('\n');
      const first = /^(?:\/\*\*\n \* |\/\/ )(.+)$/m.exec(header)?.[1];
      expect(first).toBeDefined();
      expect(r.stdout.split('\n')[0]).toBe(first);
      expect(r.stdout).toMatch(/--\w/);
      expect(r.stdout).not.toMatch(/^\s*(\/\/|\/\*|\*\/)/m);
    },
  );

  it.each([
    ['loadtest/overload.mjs', ['--no-such-option'], /Unknown option '--no-such-option'/],
    ['bench/page-ab.mjs', ['--runs'], /'--runs <value>' argument missing/],
    ['bench/catalog-bench.mjs', ['stray'], /Unexpected argument 'stray'/],
    ['loadtest/run.mjs', ['--duration', '5', '-z'], /Unknown option '-z'/],
  ])('%s %j: one line and "see --help", exit 2', (script, args, message) => {
    const r = run(script, ...(args as string[]));
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(message as RegExp);
    expect(lines[0].startsWith(`${script}: `)).toBe(true);
    expect(lines[1]).toBe(`see: node ${script} --help`);
  });

  it('a value the script rejects after parsing is the same one line, exit 2', () => {
    const r = run('loadtest/overload.mjs', '--connections', '0');
    expect(r.status).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual(['loadtest/overload.mjs: --connections must be an integer in [1, 1024]', 'see: node loadtest/overload.mjs --help']);
  });

  it("npm run bench's --http-warm is refused before any workload is built", () => {
    const r = run('bench/peer-bench.mjs', '--http-warm', '1.5', '--data', '/nonexistent/sp-peer-bench');
    expect(r.status).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual(['bench/peer-bench.mjs: --http-warm must be an integer in [0, 60]', 'see: node bench/peer-bench.mjs --help']);
  });
});

describe('bench/args.mjs keyValueList (--server-env K=V,...)', () => {
  it("splits each pair at its first '=' only", async () => {
    const { keyValueList } = await import('../bench/args.mjs');
    expect(keyValueList('NODE_OPTIONS=--max-semi-space-size=64,A=1,B=,C')).toEqual({ NODE_OPTIONS: '--max-semi-space-size=64', A: '1', B: '', C: '' });
    expect(keyValueList('')).toEqual({});
  });
});
