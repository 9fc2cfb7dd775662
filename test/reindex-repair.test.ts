/**
 * reindex and repair: sidecars are rebuilt from the canonical log with
 * nothing lost; a corrupt middle frame is kept and the session degraded;
 * only a clearly invalid tail is cut, after a backup; repair is idempotent.
 */
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { importSession } from '../src/main/maintenance/import.js';
import { reindexSession } from '../src/main/maintenance/reindex.js';
import { repairSession } from '../src/main/maintenance/repair.js';
import { sessionPaths, type SessionPaths } from '../src/main/paths.js';
import { decodeWholeLog, referencePage } from '../src/main/reference-reader.js';
import { loadSessionState } from '../src/main/session-state.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { encodeBinaryFrame, encodeJsonlFrame } from '../src/streams/frame-codec.js';
import { dshFixtures } from './helpers/fixtures.js';
import { conversation, eventsViaSidecar, makeSession, readEntries, runCli, snapshotTree, tempDataDir } from './helpers/maint.js';

let data: { dir: string; cleanup: () => void };
beforeEach(() => {
  data = tempDataDir('sp-repair-');
});
afterEach(() => data.cleanup());

function poke(path: string, pos: number, value: number): void {
  const b = readFileSync(path);
  b[pos] = value;
  writeFileSync(path, b);
}

function pages(p: SessionPaths): unknown[] {
  const log = decodeWholeLog(readFileSync(p.events));
  const out: unknown[] = [];
  let before: number | undefined;
  for (;;) {
    const page = referencePage(log, p.id, { maxMessages: 2, ...(before === undefined ? {} : { beforeSeq: before }) });
    out.push(page);
    if (!page.hasMore) break;
    before = page.fromSeq;
  }
  return out;
}

function backups(p: SessionPaths): string[] {
  return readdirSync(`${data.dir}/sessions`).filter((n) => n.startsWith(`${p.id}.events.bak-`));
}

describe('reindex', () => {
  it.each(['entries', 'meta', 'both'] as const)('restores deleted sidecars (%s) exactly: nothing is lost', async (which) => {
    const file = dshFixtures()[11]!;
    await importSession(data.dir, file, { id: 'imp' });
    await makeSession(data.dir, 'bin', 'binary');
    for (const id of ['imp', 'bin']) {
      const p = sessionPaths(data.dir, id);
      const entries = readFileSync(p.entries);
      const meta = JSON.parse(readFileSync(p.meta, 'utf8'));
      const pagesBefore = pages(p);
      const events = eventsViaSidecar(p.events, p.entries);
      if (which !== 'meta') rmSync(p.entries);
      if (which !== 'entries') rmSync(p.meta);
      expect((await loadSessionState(p)).status).toBe('repair_required');
      const r = await runCli(['reindex', id, '--data', data.dir]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^reindexed ${id}: ${meta.nextSeq} events, ${meta.frameCount} frames, .* ok\\n$`));
      expect(readFileSync(p.entries).equals(entries)).toBe(true);
      const rebuilt = JSON.parse(readFileSync(p.meta, 'utf8'));
      // The writer stamps updatedAt with the clock; reindex with the last event's time.
      expect({ ...rebuilt, updatedAt: 0 }).toEqual({ ...meta, updatedAt: 0 });
      expect(pages(p)).toEqual(pagesBefore);
      expect(eventsViaSidecar(p.events, p.entries)).toEqual(events);
      const s = await loadSessionState(p);
      expect(s.status).toBe('ok');
      expect(s.fingerprintFresh).toBe(true);
    }
  });

  it('reindexes every session when no id is given', async () => {
    await makeSession(data.dir, 'a', 'jsonl', 1);
    await makeSession(data.dir, 'b', 'binary', 1);
    rmSync(sessionPaths(data.dir, 'a').entries);
    rmSync(sessionPaths(data.dir, 'b').meta);
    const r = await runCli(['reindex', '--data', data.dir]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toHaveLength(2);
    for (const id of ['a', 'b']) expect((await loadSessionState(sessionPaths(data.dir, id))).status).toBe('ok');
  });

  it.each(['jsonl', 'binary'] as const)('keeps a corrupt middle frame (%s), indexes around it, marks the session degraded', async (format) => {
    await makeSession(data.dir, 's', format);
    const p = sessionPaths(data.dir, 's');
    const before = readEntries(p.entries);
    const victim = before[9]!;
    // Binary: a payload byte fails the CRC. JSONL: the first key's quote breaks the JSON.
    poke(p.events, format === 'binary' ? victim.offset + 20 : victim.offset + 1, format === 'binary' ? readFileSync(p.events)[victim.offset + 20]! ^ 0xff : 0x23);
    // The normal path cannot see it (size equal, last frame valid): pages will.
    expect((await loadSessionState(p)).status).toBe('ok');
    await reindexSession(p);
    const after = readEntries(p.entries);
    expect(after).toHaveLength(before.length);
    after.forEach((e, i) => {
      if (i === 9) expect(e).toEqual({ v: 1, seq: victim.seq, count: victim.count, offset: victim.offset, length: victim.length, kind: 'corrupt', schema: 1 });
      else expect(e).toEqual(before[i]);
    });
    const s = await loadSessionState(p);
    expect(s.status).toBe('degraded');
    expect(s.nextSeq).toBe(before.at(-1)!.seq + before.at(-1)!.count);
    expect(s.problems).toEqual([
      {
        code: 'corrupt_frame',
        message: expect.stringMatching(new RegExp(`^1 corrupt frame\\(s\\) at offset ${victim.offset} \\(${victim.length} bytes\\) hold seq ${victim.seq}\\.\\.${victim.seq + victim.count - 1}: frame at offset ${victim.offset}: ${format === 'binary' ? 'CRC-32 mismatch' : 'invalid JSON'}`)),
        offset: victim.offset,
        fromSeq: victim.seq,
        toSeq: victim.seq + victim.count,
      },
    ]);
    // Pages that do not cover it are served; a page that does fails with corrupt_range naming its seqs.
    const { openStore } = await import('../src/main/store.js');
    const store = await openStore({ dataDir: data.dir, workers: 1 });
    try {
      const older = await store.page('s', { beforeSeq: victim.seq, maxMessages: 1000 });
      expect(older.toSeq).toBe(victim.seq);
      const newest = await store.page('s', { maxMessages: 1 });
      expect(newest.fromSeq).toBeGreaterThanOrEqual(victim.seq + victim.count);
      await expect(store.page('s', { maxMessages: 1000 })).rejects.toMatchObject({ code: 'corrupt_range', details: { fromSeq: victim.seq, toSeq: victim.seq + victim.count } });
    } finally {
      await store.close();
    }
    // A writer can still append after it.
    const w = await SessionWriter.open(data.dir, 's');
    await w.append(conversation(w.nextSeq, 1));
    await w.close();
    const s2 = await loadSessionState(p);
    expect(s2.status).toBe('degraded');
    expect(s2.nextSeq).toBe(s.nextSeq + 7);
  });

  it('does not index a torn tail, and the session shows degraded', async () => {
    await makeSession(data.dir, 's', 'binary');
    const p = sessionPaths(data.dir, 's');
    const size = readFileSync(p.events).length;
    const entries = readFileSync(p.entries);
    appendFileSync(p.events, encodeBinaryFrame(conversation(56, 1)[0]).subarray(0, 20));
    await reindexSession(p);
    expect(readFileSync(p.entries).equals(entries)).toBe(true);
    const s = await loadSessionState(p);
    expect(s.status).toBe('degraded');
    expect(s.indexedLength).toBe(size);
  });

  it('takes the writer lock: never races a writer', async () => {
    await makeSession(data.dir, 's', 'jsonl', 1);
    const w = await SessionWriter.open(data.dir, 's');
    try {
      await expect(reindexSession(sessionPaths(data.dir, 's'))).rejects.toMatchObject({ code: 'session_busy' });
      const r = await runCli(['reindex', 's', '--data', data.dir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^session-pager reindex: session_busy: session s is being written by process \d+/);
      expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    } finally {
      await w.close();
    }
  });

  it('refuses a log whose header frame is invalid, and an unknown session', async () => {
    await makeSession(data.dir, 's', 'jsonl', 1);
    const p = sessionPaths(data.dir, 's');
    poke(p.events, 0, 0x20);
    const r = await runCli(['reindex', 's', '--data', data.dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^session-pager reindex: repair_required: session s cannot be reindexed: header frame: frame at offset 0: first byte 0x20/);
    const u = await runCli(['reindex', 'nope', '--data', data.dir]);
    expect(u.code).toBe(1);
    expect(u.stderr).toBe('session-pager reindex: session_not_found: session nope not found\n');
  });
});

describe('repair', () => {
  it('backs the log up, cuts a torn tail, reindexes; a second run changes nothing', async () => {
    await makeSession(data.dir, 's', 'jsonl');
    const p = sessionPaths(data.dir, 's');
    const good = readFileSync(p.events);
    const entries = readFileSync(p.entries);
    appendFileSync(p.events, '{"type":"user/message","seq":56,"ti');
    const torn = readFileSync(p.events);
    const r = await runCli(['repair', 's', '--data', data.dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`cut ${torn.length - good.length} bytes at offset ${good.length} (torn:`);
    expect(r.stdout).toContain('status: ok');
    const bak = backups(p);
    expect(bak).toHaveLength(1);
    expect(readFileSync(`${data.dir}/sessions/${bak[0]}`).equals(torn)).toBe(true);
    expect(readFileSync(p.events).equals(good)).toBe(true);
    expect(readFileSync(p.entries).equals(entries)).toBe(true);
    expect((await loadSessionState(p)).status).toBe('ok');

    const snap = snapshotTree(data.dir);
    const again = await runCli(['repair', 's', '--data', data.dir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^repair s: nothing to do\n/);
    expect(snapshotTree(data.dir)).toEqual(snap);
  });

  it('--dry-run prints the plan and writes nothing', async () => {
    await makeSession(data.dir, 's', 'binary');
    const p = sessionPaths(data.dir, 's');
    appendFileSync(p.events, Buffer.from('SPF2\x02\x00\x01\x00\xff\x00\x00\x00', 'latin1'));
    rmSync(p.meta);
    const snap = snapshotTree(data.dir);
    const r = await runCli(['repair', 's', '--dry-run', '--data', data.dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^repair s plan \(dry run, nothing written\):\n  would back up the log to .*s\.events\.bak-\d{8}T\d+Z\n  would cut 12 bytes at offset \d+ \(torn: .*\)\n  would rebuild the sidecars \(the log was cut\)\n$/);
    expect(snapshotTree(data.dir)).toEqual(snap);
  });

  it.each(['jsonl', 'binary'] as const)('cuts a last frame that fails its checksum or decode (%s)', async (format) => {
    await makeSession(data.dir, 's', format);
    const p = sessionPaths(data.dir, 's');
    const all = readEntries(p.entries);
    const last = all.at(-1)!;
    poke(p.events, last.offset + last.length - 3, 0x00);
    expect((await loadSessionState(p)).status).toBe('repair_required');
    const r = await runCli(['repair', 's', '--data', data.dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`cut ${last.length} bytes at offset ${last.offset} (damaged: 1 undecodable frame(s) at the end`);
    expect(backups(p)).toHaveLength(1);
    const s = await loadSessionState(p);
    expect(s.status).toBe('ok');
    expect(s.nextSeq).toBe(last.seq);
    expect(readEntries(p.entries)).toEqual(all.slice(0, -1));
  });

  it('keeps a corrupt middle frame and marks the session degraded; idempotent, no backup', async () => {
    await makeSession(data.dir, 's', 'binary');
    const p = sessionPaths(data.dir, 's');
    const victim = readEntries(p.entries)[4]!;
    poke(p.events, victim.offset + 18, 0x01);
    const log = readFileSync(p.events);
    const r = await runCli(['repair', 's', '--data', data.dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('rebuild the sidecars (metadata issues differ from the corrupt frames found)');
    expect(r.stdout).toContain(`keep 1 corrupt frame(s) at offset ${victim.offset}`);
    expect(r.stdout).toContain('status: degraded');
    expect(readFileSync(p.events).equals(log)).toBe(true);
    expect(backups(p)).toEqual([]);
    const s = await loadSessionState(p);
    expect(s.status).toBe('degraded');
    expect(s.problems[0]).toMatchObject({ code: 'corrupt_frame', offset: victim.offset, fromSeq: victim.seq, toSeq: victim.seq + victim.count });
    const snap = snapshotTree(data.dir);
    const again = await runCli(['repair', 's', '--data', data.dir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^repair s: nothing to do\n  keep 1 corrupt frame/);
    expect(snapshotTree(data.dir)).toEqual(snap);
  });

  it('a sidecar ahead of a log cut mid-frame: cuts the torn rest, reindexes what the log holds', async () => {
    await makeSession(data.dir, 's', 'binary');
    const p = sessionPaths(data.dir, 's');
    const all = readEntries(p.entries);
    const last = all.at(-1)!;
    const { truncateSync } = await import('node:fs');
    truncateSync(p.events, last.offset + 5);
    expect((await loadSessionState(p)).problems[0]!.code).toBe('entries_past_log');
    const out = await repairSession(p);
    expect(out.done.map((d) => d.kind)).toEqual(['backup', 'truncate', 'reindex']);
    expect(out.after.status).toBe('ok');
    expect(readEntries(p.entries)).toEqual(all.slice(0, -1));
    expect(readFileSync(p.events).length).toBe(last.offset);
  });

  it('rebuilds missing or broken sidecars without touching the log', async () => {
    await makeSession(data.dir, 's', 'jsonl');
    const p = sessionPaths(data.dir, 's');
    const entries = readFileSync(p.entries);
    writeFileSync(p.entries, entries.subarray(0, entries.length - 7));
    const out = await repairSession(p);
    expect(out.done.map((d) => d.kind)).toEqual(['reindex']);
    expect(readFileSync(p.entries).equals(entries)).toBe(true);
    expect(out.after.status).toBe('ok');
    expect(backups(p)).toEqual([]);
  });

  it('cuts a zero-filled tail; garbage followed by a valid frame is never cut (a damaged range when the frame continues the log, for a human when it cannot)', async () => {
    await makeSession(data.dir, 's', 'jsonl');
    const p = sessionPaths(data.dir, 's');
    const good = readFileSync(p.events);
    appendFileSync(p.events, Buffer.alloc(300));
    expect((await runCli(['repair', 's', '--data', data.dir])).code).toBe(0);
    expect(readFileSync(p.events).equals(good)).toBe(true);

    // Garbage, then the frame that continues seq 56: resync keeps both as one damaged range (docs/decisions.md).
    appendFileSync(p.events, Buffer.concat([Buffer.from('xx\n'), encodeJsonlFrame(conversation(56, 1)[0])]));
    const withGarbage = readFileSync(p.events);
    const kept = await runCli(['repair', 's', '--data', data.dir]);
    expect(kept.code).toBe(0);
    expect(kept.stdout).toMatch(/keep 1 corrupt frame\(s\) at offset \d+ \(\d+ bytes\) hold seq 56\.\.56: .*skipped bytes/);
    expect(readFileSync(p.events).equals(withGarbage)).toBe(true);
    expect((await loadSessionState(p)).status).toBe('degraded');

    // Garbage, then a valid frame whose seq cannot follow: kept for a human, nothing cut.
    appendFileSync(p.events, Buffer.concat([Buffer.from('yy\n'), encodeJsonlFrame({ type: 'user/message', seq: 99, time: 5, data: {} })]));
    const withTail = readFileSync(p.events);
    const r = await runCli(['repair', 's', '--data', data.dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('cannot fix: tail at offset');
    expect(r.stderr).toMatch(/^session-pager repair: session s still needs attention: tail at offset \d+ kept \(garbage\): .*1 valid frame\(s\) follow/);
    expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(readFileSync(p.events).equals(withTail)).toBe(true);
    expect((await loadSessionState(p)).status).toBe('degraded');
  });

  it('leaves a seq gap for a human: indexes up to it, exit 1', async () => {
    await makeSession(data.dir, 's', 'jsonl', 2);
    const p = sessionPaths(data.dir, 's');
    const size = readFileSync(p.events).length;
    appendFileSync(p.events, encodeJsonlFrame({ type: 'user/message', seq: 99, time: 5, data: {} }));
    const r = await runCli(['repair', 's', '--data', data.dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/tail at offset \d+ kept \(seq_gap\): frame at offset \d+ holds seq 99, expected 28/);
    const s = await loadSessionState(p);
    expect(s.status).toBe('degraded');
    expect(s.indexedLength).toBe(size);
  });

  it('refuses a missing session id and usage errors', async () => {
    expect((await runCli(['repair', 'nope', '--data', data.dir])).stderr).toBe('session-pager repair: session_not_found: session nope not found\n');
    const u = await runCli(['repair', '--data', data.dir]);
    expect(u.code).toBe(2);
    expect(existsSync(`${data.dir}/sessions`)).toBe(false);
  });
});
