/**
 * The maintenance commands with `--store s3://bucket/prefix` over a real S3
 * endpoint, as separate processes: gen and import write sessions to the
 * bucket, doctor reads them (and writes nothing), a torn tail made by
 * another process is diagnosed and repaired (the backup, a plain object
 * beside the session's, holds every byte the log had; no valid frame is
 * lost), reindex rebuilds every session, and `page --store` serves them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expandRecords } from '../../src/core/chunk-codec.js';
import { sessionKeys } from '../../src/storage/layout.js';
import { makeS3Backend, testS3Endpoint, testS3Store } from '../helpers/backends.js';
import { chat } from '../helpers/chat-events.js';
import { runBin } from '../helpers/serve-process.js';

const cli = runBin;


describe('maintenance commands with --store over an S3 endpoint', () => {
  const cfg = testS3Endpoint() as NonNullable<ReturnType<typeof testS3Endpoint>>;
  const prefix = `maint-${randomUUID()}`;
  const url = `s3://${cfg.bucket}/${prefix}`;
  const dir = mkdtempSync(join(tmpdir(), 'sp-s3maint-'));
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    const objects = await testS3Store();
    await objects.remove((await objects.list(`${prefix}/`)).names);
  });

  it('gen, import, doctor, repair (backup object, then the cut), reindex and page on the bucket', async () => {
    const objects = await testS3Store();
    const data = join(dir, 'data');
    const store = ['--store', url, '--data', data];
    const gen = cli(['gen', '--events', '300', '--seed', '4', ...store]);
    expect(gen.status, gen.stderr).toBe(0);
    expect(gen.stdout).toMatch(/^gen-4-0 300 events \d+ bytes\n$/);
    const events = chat(0, 30);
    const file = join(dir, 'imp.jsonl');
    writeFileSync(file, [JSON.stringify({ type: 'session', version: 1, id: 'h', createdAt: 1 }), ...events.map((e) => JSON.stringify(e))].join('\n') + '\n');
    const imp = cli(['import', file, ...store]);
    expect(imp.status, imp.stderr).toBe(0);
    expect(imp.stdout).toMatch(/^imported imp from jsonl: 30 events, 31 frames/);
    expect(cli(['import', file, ...store]).stderr).toMatch(/session_exists/);
    // Nothing of the sessions is local: the bucket holds them (the data folder only writers' tails).
    expect((await objects.list(`${prefix}/sessions/`, { delimiter: '/' })).folders.map((f) => f.slice(prefix.length + 10, -1)).sort()).toEqual(['gen-4-0', 'imp']);

    const before = (await objects.list(`${prefix}/`)).names.sort();
    const doctor = cli(['doctor', '--deep', '--json', ...store]);
    expect(doctor.status, doctor.stderr).toBe(0);
    const report = JSON.parse(doctor.stdout) as { sessions: { id: string; status: string; issues: unknown[] }[]; summary: Record<string, number> };
    expect(report.sessions.map((s) => [s.id, s.status, s.issues])).toEqual([
      ['gen-4-0', 'ok', []],
      ['imp', 'ok', []],
    ]);
    expect((await objects.list(`${prefix}/`)).names.sort()).toEqual(before);

    // Another process leaves a torn frame at the end of imp's log (and gives the session back).
    const other = makeS3Backend(objects, { location: { bucket: cfg.bucket, prefix } });
    const k = sessionKeys('imp');
    const good = (await other.storage.readAll(k.events))!;
    const f = await other.storage.openWritable(k.events, 'existing');
    await f.write(Buffer.from('{"type":"user/message","seq":30,'), f.size);
    await f.sync();
    await f.close();
    const torn = (await other.storage.readAll(k.events))!;
    await other.storage.close();
    rmSync(other.tailDir, { recursive: true, force: true });

    const sick = cli(['doctor', 'imp', '--deep', ...store]);
    expect(sick.status).toBe(3);
    expect(sick.stdout).toMatch(/tail_torn @\d+ seq 30\+: .*repair cuts it/);
    const dry = cli(['repair', 'imp', '--dry-run', ...store]);
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/would back up the log to sessions\/imp\.events\.bak-\d{8}T\d{9}Z \(s3 store\)\n {2}would cut \d+ bytes/);
    expect((await objects.list(`${prefix}/sessions/imp/backup/`)).names).toEqual([]);
    const fixed = cli(['repair', 'imp', ...store]);
    expect(fixed.status, fixed.stderr).toBe(0);
    expect(fixed.stdout).toMatch(/status: ok\n$/);
    const backups = (await objects.list(`${prefix}/sessions/imp/backup/`)).names;
    expect(backups).toHaveLength(1);
    expect((await objects.getAll(backups[0]!)).equals(torn)).toBe(true);

    const reindex = cli(['reindex', ...store]);
    expect(reindex.status, reindex.stderr).toBe(0);
    expect(reindex.stdout).toMatch(/^reindexed gen-4-0: 300 events, .*, ok\nreindexed imp: 30 events, 31 frames, \d+ of \d+ bytes indexed, ok\n$/);
    const page = cli(['page', 'imp', '--max-messages', '1000', ...store]);
    expect(page.status, page.stderr).toBe(0);
    expect(expandRecords(JSON.parse(page.stdout).records)).toEqual(events);
    const check = makeS3Backend(objects, { location: { bucket: cfg.bucket, prefix } });
    try {
      expect((await check.storage.readAll(k.events))!.equals(good)).toBe(true);
    } finally {
      await check.storage.close();
      rmSync(check.tailDir, { recursive: true, force: true });
    }
  }, 300_000);
});
