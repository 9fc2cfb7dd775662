/**
 * doctor: per-session status, fresh/stale sidecars, counts, last good
 * offset and each issue with its offset; --deep finds what only a full scan
 * can; exit codes 0 / 3 / 4; and it never writes (every file's hash, size
 * and mtime unchanged, no lock file).
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diagnose, type DoctorReport } from '../src/main/maintenance/doctor.js';
import { importSession } from '../src/main/maintenance/import.js';
import { sessionPaths } from '../src/main/paths.js';
import { encodeJsonlFrame } from '../src/streams/frame-codec.js';
import { dshFixtures } from './helpers/fixtures.js';
import { conversation, makeSession, readEntries, runCli, snapshotTree, tempDataDir } from './helpers/maint.js';

const ROOT = resolve(__dirname, '..');

function poke(path: string, pos: number, value: number): void {
  const b = readFileSync(path);
  b[pos] = value;
  writeFileSync(path, b);
}

async function doctorJson(args: string[]): Promise<{ code: number; stderr: string; reports: DoctorReport[]; summary: Record<string, number> }> {
  const r = await runCli(['doctor', '--json', ...args]);
  const parsed = JSON.parse(r.stdout);
  return { code: r.code, stderr: r.stderr, reports: parsed.sessions, summary: parsed.summary };
}

describe('doctor on healthy sessions', () => {
  let data: { dir: string; cleanup: () => void };
  beforeAll(async () => {
    data = tempDataDir('sp-doctor-ok-');
    for (const f of dshFixtures().slice(0, 3)) await importSession(data.dir, f);
    await makeSession(data.dir, 'bin', 'binary');
  });
  afterAll(() => data.cleanup());

  it('reports every session ok with fresh sidecars and exits 0, quick and deep, writing nothing', async () => {
    const snap = snapshotTree(data.dir);
    for (const deep of [[], ['--deep']]) {
      const { code, stderr, reports, summary } = await doctorJson(['--data', data.dir, ...deep]);
      expect(code).toBe(0);
      expect(stderr).toBe('');
      expect(reports).toHaveLength(4);
      expect(summary).toEqual({ ok: 4, degraded: 0, repair_required: 0 });
      for (const r of reports) {
        expect(r).toMatchObject({ status: 'ok', sidecars: 'fresh', issues: [] });
        expect(r.lastGoodOffset).toBe(r.logSize);
        expect(r.indexedLength).toBe(r.logSize);
        expect(r.eventCount).toBeGreaterThan(0);
      }
      expect(snapshotTree(data.dir)).toEqual(snap);
    }
    const bin = (await doctorJson(['bin', '--data', data.dir])).reports[0]!;
    expect(bin).toMatchObject({ id: 'bin', eventCount: 56, frameCount: 1 + 4 * 2 * 3, createdAt: 1_000_000 });
  });

  it('prints a compact table by default', async () => {
    const r = await runCli(['doctor', '--data', data.dir]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^SESSION\s+STATUS\s+SIDECARS\s+EVENTS\s+FRAMES\s+LOG\s+INDEXED\s+LAST_GOOD$/);
    expect(lines).toHaveLength(5);
    expect(lines.find((l) => l.startsWith('bin '))).toMatch(/^bin\s+ok\s+fresh\s+56\s+25\s+\d+\s+\d+\s+\d+$/);
  });

  it('reports deep-scan progress over the whole log', async () => {
    const seen: [number, number, string][] = [];
    await diagnose(data.dir, 'bin', { deep: true, onProgress: (b, t, id) => seen.push([b, t, id]) });
    const size = readFileSync(sessionPaths(data.dir, 'bin').events).length;
    expect(seen.at(-1)).toEqual([size, size, 'bin']);
  });

  it('an unknown id is an error (exit 1), a bad id a request error', async () => {
    const r = await runCli(['doctor', 'nope', '--data', data.dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('session-pager doctor: session_not_found: session nope not found\n');
    expect((await runCli(['doctor', '../x', '--data', data.dir])).code).toBe(1);
  });
});

describe('doctor on damaged sessions', () => {
  let data: { dir: string; cleanup: () => void };
  const info: Record<string, number> = {};
  beforeAll(async () => {
    data = tempDataDir('sp-doctor-bad-');
    for (const id of ['ok', 'ahead', 'torn', 'noentries', 'corrupt', 'swapped', 'stale', 'badhead']) await makeSession(data.dir, id, id === 'corrupt' ? 'binary' : 'jsonl');
    const P = (id: string) => sessionPaths(data.dir, id);
    info.aheadAt = readFileSync(P('ahead').events).length;
    appendFileSync(P('ahead').events, encodeJsonlFrame(conversation(56, 1)[0]));
    info.tornAt = readFileSync(P('torn').events).length;
    appendFileSync(P('torn').events, '{"type":"us');
    rmSync(P('noentries').entries);
    const victim = readEntries(P('corrupt').entries)[6]!;
    info.corruptAt = victim.offset;
    info.corruptSeq = victim.seq;
    info.corruptTo = victim.seq + victim.count;
    poke(P('corrupt').events, victim.offset + 17, 0x00 ^ readFileSync(P('corrupt').events)[victim.offset + 17]! ^ 0x55);
    // Two middle entry lines swapped: first and last lines still fine, only a line-by-line check sees it.
    const ls = readFileSync(P('swapped').entries, 'utf8').split('\n').filter(Boolean);
    [ls[3], ls[4]] = [ls[4]!, ls[3]!];
    writeFileSync(P('swapped').entries, ls.map((l) => l + '\n').join(''));
    info.swappedLine = Buffer.byteLength(ls.slice(0, 3).map((l) => l + '\n').join(''));
    // Stale: an mtime in the future, nothing else.
    const { utimesSync } = await import('node:fs');
    utimesSync(P('stale').events, new Date(), new Date(Date.now() + 60_000));
    poke(P('badhead').events, 0, 0x5b);
  });
  afterAll(() => data.cleanup());

  it('quick: statuses, sidecar states and issues with offsets; exit 4; writes nothing', async () => {
    const snap = snapshotTree(data.dir);
    const { code, stderr, reports, summary } = await doctorJson(['--data', data.dir]);
    expect(snapshotTree(data.dir)).toEqual(snap);
    expect(code).toBe(4);
    expect(stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(stderr).toMatch(/^session-pager doctor: 2 session\(s\) need repair, 2 degraded, 4 ok\n$/);
    const by = Object.fromEntries(reports.map((r) => [r.id, r]));
    expect(summary).toEqual({ ok: 4, degraded: 2, repair_required: 2 });
    expect(by.ok).toMatchObject({ status: 'ok', sidecars: 'fresh' });
    expect(by.stale).toMatchObject({ status: 'ok', sidecars: 'stale', issues: [] });
    expect(by.ahead).toMatchObject({ status: 'degraded', indexedLength: info.aheadAt, lastGoodOffset: info.aheadAt, eventCount: 56 });
    expect(by.ahead!.issues).toEqual([{ code: 'unindexed_tail', severity: 'degraded', offset: info.aheadAt, message: expect.stringContaining('is not served') }]);
    expect(by.torn!.issues[0]).toMatchObject({ code: 'unindexed_tail', offset: info.tornAt });
    expect(by.noentries).toMatchObject({ status: 'repair_required', sidecars: 'missing', eventCount: null, lastGoodOffset: null, createdAt: 1_000_000 });
    expect(by.noentries!.issues).toEqual([{ code: 'entries_missing', severity: 'repair_required', message: 'entry sidecar is missing' }]);
    expect(by.badhead).toMatchObject({ status: 'repair_required', sidecars: 'broken' });
    expect(by.badhead!.issues.map((i) => i.code)).toEqual(['log_changed', 'header_invalid']);
    // Only a full scan sees these two.
    expect(by.corrupt).toMatchObject({ status: 'ok' });
    expect(by.swapped).toMatchObject({ status: 'ok' });
  });

  it('deep: finds a corrupt middle frame and a middle entry out of order; exit 4; writes nothing', async () => {
    const snap = snapshotTree(data.dir);
    const { code, reports } = await doctorJson(['--deep', '--data', data.dir]);
    expect(snapshotTree(data.dir)).toEqual(snap);
    expect(code).toBe(4);
    const by = Object.fromEntries(reports.map((r) => [r.id, r]));
    expect(by.corrupt!.status).toBe('degraded');
    expect(by.corrupt!.issues).toEqual([
      { code: 'corrupt_frame', severity: 'degraded', offset: info.corruptAt, fromSeq: info.corruptSeq, toSeq: info.corruptTo, message: expect.stringMatching(/CRC-32 mismatch.*\(not recorded in the metadata: run repair\)$/) },
    ]);
    expect(by.swapped!.status).toBe('repair_required');
    expect(by.swapped!.issues[0]).toMatchObject({ code: 'entries_disagree', severity: 'repair_required', offset: info.swappedLine });
    expect(by.torn!.issues).toEqual([{ code: 'tail_torn', severity: 'degraded', offset: info.tornAt, fromSeq: 56, message: expect.stringMatching(/^invalid tail of 11 bytes at offset \d+ is not served \(repair cuts it\)/) }]);
    expect(by.ahead!.issues).toEqual([{ code: 'unindexed_frames', severity: 'degraded', offset: info.aheadAt, fromSeq: 56, toSeq: 57, message: expect.stringContaining('1 valid frame(s)') }]);
    expect(by.ahead!.lastGoodOffset).toBeGreaterThan(info.aheadAt!);
    expect(by.ok).toMatchObject({ status: 'ok', issues: [] });
    expect(by.stale).toMatchObject({ status: 'ok', issues: [] });
    expect(by.badhead!.issues.map((i) => i.code)).toContain('header_invalid');
  });

  it('lists a session whose log is gone but whose metadata is left', async () => {
    const other = tempDataDir('sp-doctor-orphan-');
    try {
      await makeSession(other.dir, 'gone', 'jsonl', 1);
      rmSync(sessionPaths(other.dir, 'gone').events);
      const { code, reports } = await doctorJson(['--data', other.dir]);
      expect(code).toBe(4);
      expect(reports).toEqual([expect.objectContaining({ id: 'gone', status: 'repair_required', issues: [expect.objectContaining({ code: 'log_missing', message: 'log file is missing' })] })]);
    } finally {
      other.cleanup();
    }
  });

  it('exits 3 when the worst is degraded', async () => {
    expect((await runCli(['doctor', 'ahead', '--data', data.dir])).code).toBe(3);
    expect((await runCli(['doctor', 'corrupt', '--deep', '--data', data.dir])).code).toBe(3);
    expect((await runCli(['doctor', 'corrupt', '--data', data.dir])).code).toBe(0);
  });

  it('the installed executable gives the same exit code and one-line stderr', () => {
    // `npm test` builds dist first; rebuild here only when it is missing or older than the sources it runs.
    const srcs = ['main/cli.ts', 'main/cli/doctor.ts', 'main/maintenance/doctor.ts', 'main/maintenance/analyze.ts', 'main/session-state.ts'];
    const stale = srcs.some((f) => {
      const out = join(ROOT, 'dist', f.replace(/\.ts$/, '.js'));
      return !existsSync(out) || statSync(out).mtimeMs < statSync(join(ROOT, 'src', f)).mtimeMs;
    });
    if (stale) spawnSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, stdio: 'ignore' });
    const snap = snapshotTree(data.dir);
    const r = spawnSync(process.execPath, [join(ROOT, 'bin/session-pager.js'), 'doctor', '--data', data.dir], { encoding: 'utf8' });
    expect(r.status).toBe(4);
    expect(r.stderr).toBe('session-pager doctor: 2 session(s) need repair, 2 degraded, 4 ok\n');
    expect(r.stdout.split('\n')[0]).toMatch(/^SESSION/);
    expect(snapshotTree(data.dir)).toEqual(snap);
  });
});
