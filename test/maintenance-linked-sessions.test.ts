/**
 * The maintenance commands (reindex, repair, doctor) on a data directory whose `sessions/` folder
 * is a symbolic link (to another disk, as operators put it): they read and write through the root
 * `serve` uses, the link's target followed once when the command opens the store
 * (src/storage/local/local-backend.ts, sessionsFolderAt), and inside it they refuse to write
 * through a link as `serve` does (ELOOP), leaving what such a link names as it was.
 */
import { appendFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionWriter } from '../src/main/session-writer.js';
import { runCli } from './helpers/maint.js';
import { makeEvents } from './server-helpers.js';

let root: string;
let dir: string;
let disk: string;
let outside: string;

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'sp-maint-links-'));
  dir = join(root, 'data');
  disk = join(root, 'disk2', 'pager-sessions');
  outside = join(root, 'outside');
  mkdirSync(disk, { recursive: true });
  mkdirSync(dir);
  mkdirSync(outside);
  symlinkSync(disk, join(dir, 'sessions'));
  const w = await SessionWriter.create(dir, 's', { title: 'linked' });
  await w.append(makeEvents(0, 30));
  await w.close();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** The data directory holds the link alone: nothing was made beside it, nor the link replaced. */
function onlyTheLink(): void {
  expect(readdirSync(dir)).toEqual(['sessions']);
  expect(lstatSync(join(dir, 'sessions')).isSymbolicLink()).toBe(true);
}

describe('maintenance commands on a linked sessions/ folder', () => {
  it('reindex rebuilds the sidecars where the link points, and doctor reads them there', async () => {
    const entries = join(disk, 'index', 's.entries.jsonl');
    const meta = join(disk, 'index', 's.index.json');
    const wantEntries = readFileSync(entries, 'utf8');
    rmSync(entries);
    rmSync(meta);
    const before = await runCli(['doctor', 's', '--data', dir]);
    expect(before.code).toBe(4);
    const r = await runCli(['reindex', 's', '--data', dir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/reindexed s: 30 events/);
    expect(readFileSync(entries, 'utf8')).toBe(wantEntries);
    expect(existsSync(meta)).toBe(true);
    const d = await runCli(['doctor', '--json', '--data', dir]);
    expect(d.code, d.stdout).toBe(0);
    expect(JSON.parse(d.stdout).sessions.map((x: { id: string; status: string }) => [x.id, x.status])).toEqual([['s', 'ok']]);
    onlyTheLink();
  });

  it('repair cuts a torn tail off the log where the link points', async () => {
    const log = join(disk, 's.events');
    const size = statSync(log).size;
    appendFileSync(log, '{"type":"custom/x","seq":30,"ti');
    const d = await runCli(['doctor', 's', '--data', dir]);
    expect(d.code).toBe(3);
    const r = await runCli(['repair', 's', '--data', dir]);
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(log).size).toBe(size);
    expect((await runCli(['doctor', 's', '--data', dir])).code).toBe(0);
    onlyTheLink();
  });

  it("a log inside it that is a link is not written through by repair: refused, the file it names unchanged", async () => {
    const log = join(disk, 's.events');
    appendFileSync(log, '{"type":"custom/x","seq":30,"ti');
    renameSync(log, join(outside, 's.events'));
    symlinkSync(join(outside, 's.events'), log);
    const before = readFileSync(join(outside, 's.events'));
    const r = await runCli(['repair', 's', '--data', dir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/symbolic link/);
    expect(readFileSync(join(outside, 's.events'))).toEqual(before);
  });

  it('an index/ folder inside it that is a link is not written through by reindex', async () => {
    renameSync(join(disk, 'index'), join(outside, 'index'));
    symlinkSync(join(outside, 'index'), join(disk, 'index'));
    const names = readdirSync(join(outside, 'index')).sort();
    const bytes = readFileSync(join(outside, 'index', 's.entries.jsonl'));
    const r = await runCli(['reindex', 's', '--data', dir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/symbolic link/);
    expect(readdirSync(join(outside, 'index')).sort()).toEqual(names);
    expect(readFileSync(join(outside, 'index', 's.entries.jsonl'))).toEqual(bytes);
  });
});
