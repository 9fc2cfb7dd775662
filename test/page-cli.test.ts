/**
 * `session-pager page <id>` (SPEC section 7): the page JSON of SPEC section 4
 * on stdout through the store's page path, each flag mapped to its
 * parameter, and every failure a non-zero exit with one line on stderr that
 * names the error. It only reads: a mistyped --data leaves nothing behind.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readWholeLog, referencePage, type ReferenceLog } from '../src/main/reference-reader.js';
import { conversation } from './helpers/maint.js';
import { writeRandomLog } from './helpers/random-log.js';

const bin = resolve(dirname(fileURLToPath(import.meta.url)), '../bin/session-pager.js');
let dir: string;
let log: ReferenceLog;

function page(...args: string[]) {
  return spawnSync(process.execPath, [bin, 'page', ...args], { encoding: 'utf8' });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-page-cli-'));
  await writeRandomLog({ events: conversation(0, 30), batches: [{ size: 5, format: 'jsonl' }, { size: 7, format: 'binary' }] }, { dataDir: dir, id: 'talk' });
  log = await readWholeLog(join(dir, 'sessions/talk.events'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('session-pager page', () => {
  it.each([
    [[], {}],
    [['--max-messages', '3'], { maxMessages: 3 }],
    [['--through-seq', '100', '--max-messages', '2'], { throughSeq: 100, maxMessages: 2 }],
    [['--before-seq', '150', '--max-messages', '4'], { beforeSeq: 150, maxMessages: 4 }],
    [['--max-bytes', '2000'], { maxBytes: 2000 }],
    // Decoded on worker threads instead of this one (the default).
    [['--workers', '2', '--max-messages', '5'], { maxMessages: 5 }],
  ])('prints the page of %j as one JSON line, exit 0', (flags, params) => {
    const r = page('talk', '--data', dir, ...(flags as string[]));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.endsWith('\n')).toBe(true);
    expect(JSON.parse(r.stdout)).toEqual(referencePage(log, 'talk', params));
  });

  it.each([
    ['an unknown session', ['nobody'], 'session-pager page: session_not_found: '],
    ['a throughSeq past the last committed seq', ['talk', '--through-seq', '100000'], 'session-pager page: invalid_request: '],
    ['maxMessages out of range', ['talk', '--max-messages', '1001'], 'session-pager page: invalid_request: '],
    ['a flag that is not an integer', ['talk', '--before-seq', 'x1'], 'session-pager page: --before-seq must be a non-negative integer'],
    ['no session id', [], 'session-pager page: missing <id>; usage: session-pager page <id>'],
  ])('%s: non-zero exit, one line on stderr naming the error, nothing on stdout', (_what, args, line) => {
    const r = page(...(args as string[]), '--data', dir);
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr.startsWith(line as string)).toBe(true);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('a warm-up switch that is not 0 or 1 refuses (exit 2, naming it) instead of reading as on', () => {
    const r = spawnSync(process.execPath, [bin, 'page', 'talk', '--data', dir], { encoding: 'utf8', env: { ...process.env, SESSION_PAGER_PAGE_WARMUP: 'false' } });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('session-pager page: SESSION_PAGER_PAGE_WARMUP must be 0 or 1, got "false"\n');
  });

  it('a data dir that does not exist: says so (not session_not_found), exit 1, and no directory is created', () => {
    const missing = join(dir, 'no-such-dir');
    const r = page('talk', '--data', missing);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`session-pager page: data directory "${missing}" does not exist (check --data)\n`);
    expect(existsSync(missing)).toBe(false);
  });
});
