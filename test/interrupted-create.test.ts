/**
 * Creates are atomic (issue 16 item 1): a create cut by a crash never blocks
 * its id. What a crash can leave (an empty log, a header cut short, a whole
 * header without metadata, a stray temp log) is an interrupted create: the
 * catalog says so, PUT takes the id over, doctor names it and repair ends it
 * (removed, or kept as an empty session), without refusing.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classifyHeaderOnly } from '../src/main/interrupted-create.js';
import { sessionPaths, type SessionPaths } from '../src/main/paths.js';
import { loadSessionState } from '../src/main/session-state.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { encodeBinaryFrame, encodeJsonlFrame } from '../src/streams/frame-codec.js';
import { conversation, runCli, snapshotTree, tempDataDir } from './helpers/maint.js';

let data: { dir: string; cleanup: () => void };
beforeEach(() => {
  data = tempDataDir('sp-create-');
});
afterEach(() => data.cleanup());

const header = { type: 'session', version: 1, id: 's', createdAt: 1700000000000 };

/** What a create cut by SIGKILL may leave: the log (some bytes of it), maybe the header entry, never the metadata. */
function leave(p: SessionPaths, bytes: Buffer, withEntries = false): void {
  writeFileSync(p.events, bytes);
  if (withEntries) writeFileSync(p.entries, `{"v":1,"seq":0,"count":0,"offset":0,"length":${bytes.length},"kind":"session","schema":1}\n`);
}

function created(): Promise<SessionWriter> {
  return SessionWriter.create(data.dir, 's', header);
}

async function makeDirs(): Promise<SessionPaths> {
  const w = await SessionWriter.create(data.dir, 'other', { type: 'session', id: 'other' });
  await w.close();
  return sessionPaths(data.dir, 's');
}

describe.each(['jsonl', 'binary'] as const)('interrupted creates (%s header)', (format) => {
  const full = format === 'jsonl' ? encodeJsonlFrame(header) : encodeBinaryFrame(header);
  const cases: [string, Buffer, boolean][] = [
    ['an empty log', Buffer.alloc(0), false],
    ['a header cut after 1 byte', full.subarray(0, 1), false],
    ['a header cut short', full.subarray(0, full.length - 3), true],
    ['a whole header frame', full, true],
  ];

  it.each(cases)('%s: repair_required with the reason, and a new create takes the id', async (_what, bytes, withEntries) => {
    const p = await makeDirs();
    leave(p, bytes, withEntries);
    const s = await loadSessionState(p);
    expect(s.status).toBe('repair_required');
    expect(s.problems[0]?.code).toBe('create_interrupted');
    expect(s.reasons[0]).toMatch(/^create was interrupted before it was acknowledged: .* and there is no metadata sidecar; PUT the session again/);
    const w = await created();
    await w.append([{ type: 'user/message', seq: 0, time: 1, data: { text: 'hi' } }]);
    await w.close();
    const after = await loadSessionState(p);
    expect(after.status).toBe('ok');
    expect(after.nextSeq).toBe(1);
    // The new create's own header (jsonl, the writer's default), nothing of the old bytes.
    expect(readFileSync(p.events).subarray(0, encodeJsonlFrame(header).length).equals(encodeJsonlFrame(header))).toBe(true);
    expect(after.indexedLength).toBe(readFileSync(p.events).length);
  });

  it.each(cases)('%s: doctor names it, repair ends it with exit 0', async (_what, bytes, withEntries) => {
    const p = await makeDirs();
    leave(p, bytes, withEntries);
    const before = snapshotTree(data.dir);
    for (const deep of [[], ['--deep']]) {
      const d = await runCli(['doctor', 's', ...deep, '--json', '--data', data.dir]);
      expect(d.code).toBe(4);
      const rep = JSON.parse(d.stdout).sessions[0];
      expect(rep.issues.map((i: { code: string }) => i.code)).toEqual(['create_interrupted']);
      expect(rep.sidecars).toBe('missing');
    }
    expect(snapshotTree(data.dir)).toEqual(before);
    const r = await runCli(['repair', 's', '--data', data.dir]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const complete = bytes.length === full.length;
    if (complete) {
      expect(r.stdout).toMatch(/rebuild the sidecars/);
      expect(r.stdout).toMatch(/status: ok/);
      const s = await loadSessionState(p);
      expect(s.status).toBe('ok');
      expect(s.nextSeq).toBe(0);
      expect(s.meta?.header).toEqual(header);
    } else {
      expect(r.stdout).toMatch(/remove the log and its sidecars \(create was interrupted/);
      expect(r.stdout).toMatch(/status: removed \(session s was never created; the id is free\)/);
      expect(existsSync(p.events)).toBe(false);
      expect(existsSync(p.entries)).toBe(false);
      const backups = readdirSync(join(data.dir, 'sessions')).filter((n) => n.startsWith('s.events.bak-'));
      expect(backups.length).toBe(bytes.length > 0 ? 1 : 0);
      const d = await runCli(['doctor', '--data', data.dir]);
      expect(d.stdout).not.toMatch(/^s /m);
      const w = await created();
      await w.close();
      expect((await loadSessionState(p)).status).toBe('ok');
    }
    // A second repair has nothing to do (or no session left to repair).
    const again = await runCli(['repair', 's', '--data', data.dir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/nothing to do/);
  });
});

describe('what is not an interrupted create', () => {
  it('a log with metadata, or with any frame past its header, is never taken over', async () => {
    const w = await SessionWriter.create(data.dir, 's', header);
    await w.close();
    const p = sessionPaths(data.dir, 's');
    await expect(SessionWriter.create(data.dir, 's', header)).rejects.toMatchObject({ code: 'session_exists' });
    // Metadata deleted, but the log holds an event: data, never replaced.
    const w2 = await SessionWriter.open(data.dir, 's');
    await w2.append(conversation(0, 2));
    await w2.close();
    rmSync(p.meta);
    const s = await loadSessionState(p);
    expect(s.problems[0]?.code).toBe('meta_missing');
    const log = readFileSync(p.events);
    await expect(SessionWriter.create(data.dir, 's', header)).rejects.toMatchObject({ code: 'session_exists' });
    expect(readFileSync(p.events).equals(log)).toBe(true);
  });

  it('classifies bytes exactly', () => {
    const f = encodeJsonlFrame(header);
    expect(classifyHeaderOnly(Buffer.alloc(0))).toMatchObject({ headerComplete: false, logSize: 0 });
    expect(classifyHeaderOnly(f)).toMatchObject({ headerComplete: true });
    expect(classifyHeaderOnly(f.subarray(0, 5))).toMatchObject({ headerComplete: false });
    expect(classifyHeaderOnly(Buffer.concat([f, f.subarray(0, 3)]))).toBeNull();
    expect(classifyHeaderOnly(Buffer.from('xyz'))).toBeNull();
    expect(classifyHeaderOnly(encodeJsonlFrame({ type: 'user/message', seq: 0, time: 0, data: {} }))).toBeNull();
  });

  it('a create leaves no temp file behind, and removes those of crashed creates of its id', async () => {
    await makeDirs();
    const dir = join(data.dir, 'sessions');
    writeFileSync(join(dir, '.s.events.123.456.creating'), 'junk');
    writeFileSync(join(dir, '.s2.events.123.456.creating'), 'junk');
    const w = await SessionWriter.create(data.dir, 's', header);
    await w.close();
    expect(readdirSync(dir).filter((n) => n.startsWith('.'))).toEqual(['.s2.events.123.456.creating']);
  });
});
