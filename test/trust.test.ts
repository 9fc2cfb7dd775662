/**
 * Trust rules on the normal path (SPEC section 3): loadSessionState decides
 * ok / degraded / repair_required from the sidecars and bounded reads of the
 * log, with the exact reason, and writes nothing; discoverSession shows a
 * session whose sidecars are gone from its header frame alone.
 */
import { appendFileSync, readFileSync, rmSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { discoverSession, DISCOVERY_MAX_BYTES } from '../src/main/maintenance/discover.js';
import { importSession } from '../src/main/maintenance/import.js';
import { sessionPaths, type SessionPaths } from '../src/main/paths.js';
import { loadSessionState, type SessionState } from '../src/main/session-state.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { encodeBinaryFrame, encodeJsonlFrame } from '../src/streams/frame-codec.js';
import { entryReadStats } from '../src/streams/entries-file.js';
import { dshFixtures } from './helpers/fixtures.js';
import { conversation, makeSession, readEntries, snapshotTree, tempDataDir } from './helpers/maint.js';

let data: { dir: string; cleanup: () => void };
beforeEach(() => {
  data = tempDataDir('sp-trust-');
});
afterEach(() => data.cleanup());

/** Load the state and prove the load wrote nothing. */
async function load(p: SessionPaths): Promise<SessionState> {
  const before = snapshotTree(data.dir);
  const s = await loadSessionState(p);
  expect(snapshotTree(data.dir)).toEqual(before);
  return s;
}

function lines(path: string): string[] {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l.length > 0);
}

function writeLines(path: string, ls: string[]): void {
  writeFileSync(path, ls.map((l) => l + '\n').join(''));
}

/** Flip one byte of the file at `pos` to `value` (keeps the size). */
function poke(path: string, pos: number, value: number): void {
  const b = readFileSync(path);
  b[pos] = value;
  writeFileSync(path, b);
}

describe.each(['jsonl', 'binary'] as const)('trust rules (%s frames)', (format) => {
  let p: SessionPaths;
  beforeEach(async () => {
    await makeSession(data.dir, 's', format);
    p = sessionPaths(data.dir, 's');
  });

  it('a freshly written session is ok with fresh sidecars', async () => {
    const s = await load(p);
    expect(s.status).toBe('ok');
    expect(s.reasons).toEqual([]);
    expect(s.fingerprintFresh).toBe(true);
    expect(s.metaStale).toBe(false);
    expect(s.nextSeq).toBe(4 * 2 * 7);
    expect(s.indexedLength).toBe(s.logSize);
  });

  it('a new mtime alone (size equal, last frame valid) is not damage', async () => {
    utimesSync(p.events, new Date(), new Date(Date.now() + 5000));
    const s = await load(p);
    expect(s.status).toBe('ok');
    expect(s.fingerprintFresh).toBe(false);
    expect(s.reasons).toEqual([]);
  });

  it('a new mtime with the last indexed frame damaged in place is repair_required', async () => {
    const last = readEntries(p.entries).at(-1)!;
    // JSONL: break the JSON; binary: any payload byte fails the CRC.
    poke(p.events, last.offset + last.length - 3, 0x00);
    const s = await load(p);
    expect(s.status).toBe('repair_required');
    expect(s.problems[0]!.code).toBe('log_changed');
    expect(s.reasons[0]).toMatch(new RegExp(`^log changed since it was indexed: frame at offset ${last.offset}`));
  });

  it('stale metadata is caught up from the indexed tail, in memory only', async () => {
    // Metadata as it was after 2 batches, with sidecar and log from 4.
    rmSync(data.dir, { recursive: true, force: true });
    await makeSession(data.dir, 's', format, 2);
    const oldMeta = readFileSync(p.meta, 'utf8');
    const w = await SessionWriter.open(data.dir, 's');
    await w.append(conversation(w.nextSeq, 2));
    await w.append(conversation(w.nextSeq, 2));
    await w.close();
    const current = JSON.parse(readFileSync(p.meta, 'utf8'));
    writeFileSync(p.meta, oldMeta);
    const s = await load(p);
    expect(s.status).toBe('ok');
    expect(s.metaStale).toBe(true);
    expect(s.fingerprintFresh).toBe(false);
    for (const k of ['nextSeq', 'eventCount', 'frameCount', 'indexedLength', 'entriesLength', 'tokens', 'hasUserMessage', 'title', 'provider', 'model']) {
      expect((s.meta as unknown as Record<string, unknown>)[k], k).toEqual(current[k]);
    }
    expect(readFileSync(p.meta, 'utf8')).toBe(oldMeta);
  });

  it('a missing entry sidecar is repair_required', async () => {
    rmSync(p.entries);
    const s = await load(p);
    expect(s.status).toBe('repair_required');
    expect(s.reasons).toEqual(['entry sidecar is missing']);
  });

  it('a missing metadata sidecar is repair_required', async () => {
    rmSync(p.meta);
    const s = await load(p);
    expect(s.status).toBe('repair_required');
    expect(s.reasons).toEqual(['metadata sidecar is missing']);
  });

  it('a missing log is repair_required', async () => {
    rmSync(p.events);
    const s = await load(p);
    expect(s.reasons).toEqual(['log file is missing']);
  });

  it('an empty entry sidecar is repair_required', async () => {
    writeFileSync(p.entries, '');
    expect((await load(p)).reasons).toEqual(['entry sidecar is empty']);
  });

  it('a truncated (partial) last sidecar line is repair_required', async () => {
    const size = readFileSync(p.entries).length;
    truncateSync(p.entries, size - 5);
    const s = await load(p);
    expect(s.status).toBe('repair_required');
    expect(s.problems[0]!.code).toBe('entries_partial_line');
    expect(s.reasons[0]).toBe(`entry sidecar ends in a partial line (size ${size - 5})`);
  });

  it('a malformed last sidecar line is repair_required', async () => {
    const ls = lines(p.entries);
    ls[ls.length - 1] = '{"v":1,"seq":"x"}';
    writeLines(p.entries, ls);
    const s = await load(p);
    expect(s.problems[0]!.code).toBe('entries_malformed');
    expect(s.reasons[0]).toMatch(/^entry sidecar is malformed: entry sidecar line at byte \d+: entry seq is not a non-negative safe integer$/);
  });

  it('a first entry that is not offset 0 `session` is repair_required', async () => {
    for (const patch of [{ offset: 3 }, { kind: 'user/message' }, { count: 1 }, { seq: 2 }]) {
      const orig = lines(p.entries);
      const ls = [...orig];
      ls[0] = JSON.stringify({ ...JSON.parse(ls[0]!), ...patch });
      writeLines(p.entries, ls);
      const s = await load(p);
      expect(s.status, JSON.stringify(patch)).toBe('repair_required');
      expect(s.problems[0]!.code).toBe('entries_bad_first');
      expect(s.reasons[0]).toMatch(/^entry sidecar's first entry is not the session header at offset 0/);
      writeLines(p.entries, orig);
    }
  });

  it('a last entry out of order (before the header ends) is repair_required', async () => {
    const ls = lines(p.entries);
    const last = JSON.parse(ls.at(-1)!);
    ls[ls.length - 1] = JSON.stringify({ ...last, offset: 1 });
    writeLines(p.entries, ls);
    const s = await load(p);
    expect(s.problems[0]!.code).toBe('entries_out_of_order');
  });

  it('a sidecar ahead of the log (log cut short) is repair_required', async () => {
    const size = readFileSync(p.events).length;
    truncateSync(p.events, size - 10);
    const s = await load(p);
    expect(s.status).toBe('repair_required');
    expect(s.reasons[0]).toBe(`entry sidecar points past the log (indexes ${size} bytes, log has ${size - 10})`);
  });

  it('metadata ahead of the entry sidecar is repair_required', async () => {
    const m = JSON.parse(readFileSync(p.meta, 'utf8'));
    m.nextSeq += 5;
    writeFileSync(p.meta, JSON.stringify(m));
    const s = await load(p);
    expect(s.problems[0]!.code).toBe('meta_ahead');
  });

  it('a log ahead of the sidecar is degraded: the unindexed tail is not served', async () => {
    const size = readFileSync(p.events).length;
    const s0 = await load(p);
    const frame = format === 'binary' ? encodeBinaryFrame(conversation(s0.nextSeq, 1)[0]) : encodeJsonlFrame(conversation(s0.nextSeq, 1)[0]);
    appendFileSync(p.events, frame);
    const s = await load(p);
    expect(s.status).toBe('degraded');
    expect(s.indexedLength).toBe(size);
    expect(s.nextSeq).toBe(s0.nextSeq);
    expect(s.reasons).toEqual([`unindexed tail of ${frame.length} bytes at offset ${size} is not served`]);
  });

  it('a torn tail is degraded, not served and not indexed by readers', async () => {
    const size = readFileSync(p.events).length;
    appendFileSync(p.events, Buffer.from(format === 'binary' ? 'SPF2\x02\x00' : '{"type":"user/mess', 'latin1'));
    const s = await load(p);
    expect(s.status).toBe('degraded');
    expect(s.indexedLength).toBe(size);
    expect(s.problems[0]).toMatchObject({ code: 'unindexed_tail', offset: size });
  });

  it('metadata issues recorded by reindex make the session degraded', async () => {
    const m = JSON.parse(readFileSync(p.meta, 'utf8'));
    m.issues = [{ code: 'corrupt_frame', message: 'x is corrupt', offset: 100, seq: 3, toSeq: 5 }];
    writeFileSync(p.meta, JSON.stringify(m));
    const s = await load(p);
    expect(s.status).toBe('degraded');
    expect(s.problems).toEqual([{ code: 'corrupt_frame', message: 'x is corrupt', offset: 100, fromSeq: 3, toSeq: 5 }]);
  });

  it('metadata naming another session is repair_required', async () => {
    const m = JSON.parse(readFileSync(p.meta, 'utf8'));
    m.id = 'other';
    writeFileSync(p.meta, JSON.stringify(m));
    expect((await load(p)).problems[0]!.code).toBe('meta_mismatch');
  });

  it('reads the entry sidecar boundedly (first and last lines, not the whole file)', async () => {
    // Grow the sidecar well past a few reads' worth.
    const w = await SessionWriter.open(data.dir, 's', { durable: false });
    for (let i = 0; i < 40; i++) await w.append(conversation(w.nextSeq, 20));
    await w.close();
    const size = readFileSync(p.entries).length;
    expect(size).toBeGreaterThan(200_000);
    const before = entryReadStats.bytes;
    const s = await load(p);
    expect(s.status).toBe('ok');
    expect(entryReadStats.bytes - before).toBeLessThan(20_000);
  });
});

describe('discoverSession', () => {
  it('shows id, createdAt and header of a session whose sidecars are gone, writing nothing', async () => {
    const file = dshFixtures()[0]!;
    await importSession(data.dir, file, { id: 'd1' });
    const p = sessionPaths(data.dir, 'd1');
    rmSync(p.entries);
    rmSync(p.meta);
    const before = snapshotTree(data.dir);
    const s = await loadSessionState(p);
    expect(s.status).toBe('repair_required');
    const d = await discoverSession(p);
    expect(snapshotTree(data.dir)).toEqual(before);
    const header = JSON.parse(readFileSync(file, 'utf8').split('\n')[0]!);
    expect(d).toMatchObject({ id: 'd1', header, createdAt: header.createdAt, headerLength: Buffer.byteLength(readFileSync(file, 'utf8').split('\n')[0]!) + 1 });
    expect(d.reason).toBeUndefined();
  });

  it('reads a binary header frame', async () => {
    await makeSession(data.dir, 'b', 'binary', 1);
    const d = await discoverSession(sessionPaths(data.dir, 'b'));
    expect(d.header).toMatchObject({ type: 'session', id: 'b', createdAt: 1_000_000 });
  });

  it('reports an unreadable header with a reason instead of throwing', async () => {
    const p = sessionPaths(data.dir, 'g');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(`${data.dir}/sessions`, { recursive: true });
    writeFileSync(p.events, 'garbage\n');
    expect((await discoverSession(p)).reason).toMatch(/^header frame: frame at offset 0: first byte 0x67/);
    writeFileSync(p.events, '{"type":"user/message","seq":0,"time":1}\n');
    expect((await discoverSession(p)).reason).toBe('frame 0 is not a session header (type "user/message")');
    writeFileSync(p.events, '{"type":"session","id":"g"');
    expect((await discoverSession(p)).reason).toMatch(/torn|newline/);
    writeFileSync(p.events, '{"type":"session","pad":"' + 'x'.repeat(DISCOVERY_MAX_BYTES) + '"}\n');
    expect((await discoverSession(p)).reason).toBe(`header frame is longer than ${DISCOVERY_MAX_BYTES} bytes`);
    rmSync(p.events);
    expect((await discoverSession(p)).reason).toBe('log file is missing');
  });
});
