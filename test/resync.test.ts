/**
 * Repair and doctor --deep resynchronize past a damaged frame (issue 16
 * item 3): a damaged frame in the middle, even one whose length field is
 * wrong, is skipped the way LevelDB's log reader skips a corrupt record;
 * every valid frame after it stays indexed and served, the damaged bytes stay
 * in the log as one indexed damaged range (pages covering it fail with
 * corrupt_range naming its seqs), and only a tail that no valid frame follows
 * is cut, after a backup.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { analyzeLog } from '../src/main/maintenance/analyze.js';
import { repairSession } from '../src/main/maintenance/repair.js';
import { sessionPaths, type SessionPaths } from '../src/main/paths.js';
import { decodeWholeLog, referencePage, type ReferenceLog } from '../src/main/reference-reader.js';
import { loadSessionState } from '../src/main/session-state.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import type { EntryLine } from '../src/core/types.js';
import { makeSession, readEntries, runCli, tempDataDir } from './helpers/maint.js';

let data: { dir: string; cleanup: () => void };
beforeEach(() => {
  data = tempDataDir('sp-resync-');
});
afterEach(() => data.cleanup());

interface Original {
  p: SessionPaths;
  log: Buffer;
  entries: EntryLine[];
  ref: ReferenceLog;
}

async function original(format: 'jsonl' | 'binary'): Promise<Original> {
  await makeSession(data.dir, 's', format, 6, 2);
  const p = sessionPaths(data.dir, 's');
  const log = readFileSync(p.events);
  return { p, log, entries: readEntries(p.entries), ref: decodeWholeLog(log) };
}

function flipBit(path: string, pos: number, bit: number): void {
  const b = readFileSync(path);
  b[pos] = (b[pos] as number) ^ (1 << bit);
  writeFileSync(path, b);
}

/** Every page walked from the tail: equal to the reference reader's, or corrupt_range on exactly the damaged seqs. */
async function pagesAgree(store: PagerStore, o: Original, damaged: { fromSeq: number; toSeq: number }): Promise<void> {
  const n = o.ref.events.length;
  for (let maxMessages = 1; maxMessages <= 3; maxMessages++) {
    let before = n;
    while (before > 0) {
      const want = referencePage(o.ref, 's', { beforeSeq: before, maxMessages });
      const covers = want.fromSeq < damaged.toSeq && want.toSeq > damaged.fromSeq;
      if (covers) {
        await expect(store.page('s', { beforeSeq: before, maxMessages })).rejects.toMatchObject({ code: 'corrupt_range', details: { fromSeq: damaged.fromSeq, toSeq: damaged.toSeq } });
      } else {
        expect(await store.page('s', { beforeSeq: before, maxMessages })).toEqual(want);
      }
      before = want.fromSeq;
    }
  }
}

/** After repair: the log not cut, every frame but the victim indexed as before, the victim one damaged range. */
function keptAllBut(o: Original, victim: EntryLine): void {
  expect(readFileSync(o.p.events).length).toBe(o.log.length);
  const now = readEntries(o.p.entries);
  const others = (es: EntryLine[]) => es.filter((e) => e.offset !== victim.offset);
  expect(others(now)).toEqual(others(o.entries));
  expect(now.find((e) => e.offset === victim.offset)).toMatchObject({ kind: 'corrupt', seq: victim.seq, count: victim.count, length: victim.length });
}

describe('binary frames: every bit of the length field of a middle frame', () => {
  it('repair keeps every other frame, never cuts, pages exact around the damage', async () => {
    const o = await original('binary');
    // A middle frame, neither the first event frame nor the last.
    const victim = o.entries[Math.floor(o.entries.length / 2)] as EntryLine;
    expect(victim.count).toBeGreaterThan(0);
    for (let bit = 0; bit < 32; bit++) {
      writeFileSync(o.p.events, o.log);
      flipBit(o.p.events, victim.offset + 8 + (bit >> 3), bit & 7);
      const a = await analyzeLog(o.p.events);
      expect(a.tail).toBeNull();
      expect(a.eventCount).toBe(o.ref.events.length);
      expect(a.corrupt).toEqual([expect.objectContaining({ offset: victim.offset, length: victim.length, fromSeq: victim.seq, toSeq: victim.seq + victim.count })]);
      expect(a.corrupt[0]?.message).toMatch(/skipped bytes \[\d+, \d+\) up to the next valid frame|CRC-32 mismatch/);
      const out = await repairSession(o.p, { now: () => 1_700_000_000_000 + bit });
      expect(out.done.map((s) => s.kind)).toEqual(['reindex']);
      keptAllBut(o, victim);
      const state = await loadSessionState(o.p);
      expect(state.status).toBe('degraded');
      expect(state.nextSeq).toBe(o.ref.events.length);
      // A second repair has nothing to do.
      expect((await repairSession(o.p)).plan.steps).toEqual([]);
    }
    expect(readdirSync(join(data.dir, 'sessions')).filter((f) => f.includes('.bak-'))).toEqual([]);
    const store = await openStore({ dataDir: data.dir, workers: 1 });
    try {
      await pagesAgree(store, o, { fromSeq: victim.seq, toSeq: victim.seq + victim.count });
    } finally {
      await store.close();
    }
  });

  it('doctor --deep reports the skipped byte range and seq range, and that repair keeps it', async () => {
    const o = await original('binary');
    const victim = o.entries[5] as EntryLine;
    flipBit(o.p.events, victim.offset + 11, 6); // length + 2^30: past the end of the file
    const d = await runCli(['doctor', 's', '--deep', '--json', '--data', data.dir]);
    const rep = JSON.parse(d.stdout).sessions[0];
    expect(rep.issues.map((i: { code: string }) => i.code)).toContain('corrupt_frame');
    const c = rep.issues.find((i: { code: string }) => i.code === 'corrupt_frame');
    expect(c).toMatchObject({ offset: victim.offset, fromSeq: victim.seq, toSeq: victim.seq + victim.count, severity: 'degraded' });
    expect(c.message).toContain(`skipped bytes [${victim.offset}, ${victim.offset + victim.length})`);
    expect(rep.issues.map((i: { code: string }) => i.code)).not.toContain('tail_torn');
    expect(rep.eventCount).toBe(o.ref.events.length);
    const r = await runCli(['repair', 's', '--data', data.dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/cut /);
    expect(r.stdout).toMatch(/keep 1 corrupt frame\(s\) at offset \d+ \(\d+ bytes\) hold seq/);
    keptAllBut(o, victim);
  });
});

describe.each(['jsonl', 'binary'] as const)('%s frames', (format) => {
  it('a frame whose first byte is garbage is skipped; the frames after it stay', async () => {
    const o = await original(format);
    const victim = o.entries[7] as EntryLine;
    const b = Buffer.from(o.log);
    b[victim.offset] = 0x00;
    writeFileSync(o.p.events, b);
    await repairSession(o.p);
    keptAllBut(o, victim);
    const store = await openStore({ dataDir: data.dir, workers: 1 });
    try {
      await pagesAgree(store, o, { fromSeq: victim.seq, toSeq: victim.seq + victim.count });
    } finally {
      await store.close();
    }
  });

  it('garbage holding no event between two frames: the range takes the frame after it, nothing is cut', async () => {
    const o = await original(format);
    const at = o.entries[4] as EntryLine;
    const next = o.entries[5] as EntryLine;
    writeFileSync(o.p.events, Buffer.concat([o.log.subarray(0, at.offset + at.length), Buffer.from('garbage!'), o.log.subarray(at.offset + at.length)]));
    const a = await analyzeLog(o.p.events);
    expect(a.tail).toBeNull();
    expect(a.corrupt).toEqual([expect.objectContaining({ offset: next.offset, length: next.length + 8, fromSeq: next.seq, toSeq: next.seq + next.count })]);
    // Binary: the frame after the garbage is found by its magic, and taken into the range since the
    // garbage holds no event. JSONL: garbage and the line it runs into are one damaged line.
    expect(a.corrupt[0]?.message).toMatch(format === 'binary' ? /hold no event, so the range takes that frame too/ : /skipped bytes \[\d+, \d+\) up to the next valid frame/);
    expect(a.eventCount).toBe(o.ref.events.length);
  });

  it('a torn last frame is still cut after a backup; damage with a valid frame after it that cannot follow is kept for a human', async () => {
    const o = await original(format);
    const lastE = o.entries[o.entries.length - 1] as EntryLine;
    writeFileSync(o.p.events, o.log.subarray(0, o.log.length - 3));
    const a = await analyzeLog(o.p.events);
    expect(a.tail).toMatchObject({ offset: lastE.offset, clearlyInvalid: true });
    const out = await repairSession(o.p, { now: () => 1_700_000_000_000 });
    expect(out.done.map((s) => s.kind)).toEqual(['backup', 'truncate', 'reindex']);
    expect(readdirSync(join(data.dir, 'sessions')).filter((f) => f.includes('.bak-'))).toHaveLength(1);
    expect(readFileSync(o.p.events).length).toBe(lastE.offset);

    // Damage, then a valid frame of an earlier seq (a copy of frame 3): not a tail to cut.
    const f3 = o.entries[3] as EntryLine;
    writeFileSync(o.p.events, Buffer.concat([o.log.subarray(0, lastE.offset), Buffer.from('\u0000\u0001junk\n'), o.log.subarray(f3.offset, f3.offset + f3.length)]));
    const b = await analyzeLog(o.p.events);
    expect(b.tail).toMatchObject({ offset: lastE.offset, clearlyInvalid: false });
    expect(b.tail?.message).toMatch(/1 valid frame\(s\) follow \(the first at offset \d+, seq \d+\) that do not continue seq \d+, so the tail is kept for a human/);
  });
});

describe('JSONL: a line whose newline was damaged', () => {
  it('two lines run together are one damaged range holding both; the rest is kept', async () => {
    const o = await original('jsonl');
    const a1 = o.entries[6] as EntryLine;
    const a2 = o.entries[7] as EntryLine;
    const b = Buffer.from(o.log);
    b[a1.offset + a1.length - 1] = 0x20; // the newline becomes a space
    writeFileSync(o.p.events, b);
    const a = await analyzeLog(o.p.events);
    expect(a.tail).toBeNull();
    expect(a.corrupt).toEqual([expect.objectContaining({ offset: a1.offset, length: a1.length + a2.length, fromSeq: a1.seq, toSeq: a2.seq + a2.count })]);
    expect(a.eventCount).toBe(o.ref.events.length);
  });
});
