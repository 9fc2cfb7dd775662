/**
 * Symbolic links planted in the data directory never have the server write
 * outside it (docs/reliability.md, "What is promised"): a session's log that
 * is a link to a file elsewhere was adopted by `repair` and then appended
 * through, and a projection folder that is a link had its files written and
 * removed where it pointed (found by hand). Writes refuse them (ELOOP); the
 * files they name stay as they were.
 *
 * Two links are the operator's, not planted: the data directory itself, and
 * its `sessions/` folder (put on another disk with a link, as operators do).
 * `sessions/` is followed once, when the store opens, and its target is then
 * the root of the sessions: everything below it is held to the rules above
 * (docs/decisions.md, "A linked sessions/ folder").
 */
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionWriter } from '../src/main/session-writer.js';
import { openStore } from '../src/main/store.js';
import { LocalBackend } from '../src/storage/local/local-backend.js';
import { makeEvents } from './server-helpers.js';

const header = { type: 'session', version: 1, id: 's', createdAt: 1700000000000 };
const ev = (seq: number) => ({ type: 'custom/x', seq, time: 1700000000000 + seq, data: { n: seq } });

let root: string;
let dir: string;
let outside: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sp-links-'));
  dir = join(root, 'data');
  outside = join(root, 'outside');
  mkdirSync(outside);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

async function session(): Promise<void> {
  const w = await SessionWriter.create(dir, 's', header);
  await w.append([ev(0)]);
  await w.close();
}

const tree = (d: string) => Object.fromEntries(readdirSync(d).map((n) => [n, readFileSync(join(d, n)).toString('base64')]));

describe('links in the data directory', () => {
  it("a session's log that is a link to a file outside is never written through", async () => {
    await session();
    // The log moved out and linked back in.
    renameSync(join(dir, 'sessions', 's.events'), join(outside, 's.events'));
    symlinkSync(join(outside, 's.events'), join(dir, 'sessions', 's.events'));
    const before = tree(outside);
    // It was opened and the append written into the file outside.
    await expect(SessionWriter.open(dir, 's').then((w) => w.append([ev(1)]).finally(() => w.close()))).rejects.toMatchObject({ code: 'ELOOP' });
    expect(tree(outside)).toEqual(before);
  });

  it("a projection folder that is a link is neither written nor emptied where it points, and appends go on", async () => {
    await session();
    const projections = join(dir, 'sessions', 'index', 's');
    cpSync(projections, join(outside, 's'), { recursive: true });
    rmSync(projections, { recursive: true });
    symlinkSync(join(outside, 's'), projections);
    writeFileSync(join(outside, 's', 'unrelated.txt'), 'kept');
    const before = tree(join(outside, 's'));
    const w = await SessionWriter.open(dir, 's');
    await w.append([ev(1), ev(2)]);
    await w.close();
    // Its files were appended to, or removed as a stale projection.
    expect(tree(join(outside, 's'))).toEqual(before);
    const again = await SessionWriter.open(dir, 's');
    expect(await again.append([ev(3)])).toMatchObject({ nextSeq: 4 });
    await again.close();
  });
});

describe("a data directory whose sessions/ folder is a link (to another disk)", () => {
  /** data/sessions -> elsewhere/sessions-disk (an empty folder, as an operator makes it). */
  function linkedSessions(): string {
    const disk = join(root, 'disk2', 'pager-sessions');
    mkdirSync(disk, { recursive: true });
    mkdirSync(dir, { recursive: true });
    symlinkSync(disk, join(dir, 'sessions'));
    return disk;
  }

  it('creates, appends, serves and reopens sessions there; the files are on the other disk', async () => {
    const disk = linkedSessions();
    // Refused with ELOOP before: a folder of the data directory is a link.
    await session();
    const store = await openStore({ dataDir: dir, workers: 1 });
    try {
      await store.append('s', [ev(1), ev(2)]);
      await store.create('t', { title: 'two' });
      await store.append('t', [ev(0)]);
      const page = await store.page('s', { maxMessages: 10 });
      expect(page.fromSeq).toBe(0);
      expect((await store.info('s')).nextSeq).toBe(3);
      expect((await store.list()).map((e) => [e.id, e.status])).toEqual([['s', 'ok'], ['t', 'ok']].sort());
    } finally {
      await store.close();
    }
    // The link is still a link, and the sessions' files are where it points.
    expect(lstatSync(join(dir, 'sessions')).isSymbolicLink()).toBe(true);
    expect(existsSync(join(disk, 's.events'))).toBe(true);
    expect(existsSync(join(disk, 'index', 's.index.json'))).toBe(true);
    const again = await SessionWriter.open(dir, 's');
    expect(await again.append([ev(3)])).toMatchObject({ nextSeq: 4 });
    await again.close();
  });

  it('is followed once, at open: the backend keeps the folder it found', async () => {
    const disk = linkedSessions();
    const backend = new LocalBackend(dir);
    await backend.replace('sessions/a.txt', Buffer.from('one'));
    // The link is moved to another folder after the open: this backend still writes where it pointed at open.
    const other = join(root, 'disk3');
    mkdirSync(other);
    rmSync(join(dir, 'sessions'));
    symlinkSync(other, join(dir, 'sessions'));
    await backend.replace('sessions/b.txt', Buffer.from('two'));
    expect(readdirSync(disk).sort()).toEqual(['a.txt', 'b.txt']);
    expect(readdirSync(other)).toEqual([]);
    expect((await backend.readAll('sessions/a.txt'))?.toString()).toBe('one');
  });

  it('pages are read where the link pointed at open, by the page workers too: moving it later changes nothing served', async () => {
    const disk = linkedSessions();
    await SessionWriter.create(dir, 's', header).then(async (w) => {
      await w.append(makeEvents(0, 120));
      await w.close();
    });
    // Another folder holding another log for `s` (other events, other byte offsets).
    const otherDir = join(root, 'other-data');
    await SessionWriter.create(otherDir, 's', header).then(async (w) => {
      await w.append(makeEvents(0, 120).map((e) => ({ ...e, data: { padding: 'y'.repeat(37 + (e.seq % 13)) } })));
      await w.close();
    });
    const queries = [{ maxMessages: 5 }, { maxMessages: 40 }, { beforeSeq: 60, maxMessages: 20 }, { throughSeq: 30, maxMessages: 10 }];
    const store = await openStore({ dataDir: dir, workers: 1 });
    // A second data directory whose sessions/ links to the same folder: the reference.
    const refDir = join(root, 'ref');
    mkdirSync(refDir);
    symlinkSync(disk, join(refDir, 'sessions'));
    const ref = await openStore({ dataDir: refDir, workers: 1 });
    try {
      // The link moved after the open: before 12-03 the workers opened `<data>/sessions/s.events`
      // through it, so read the other folder's log at this one's offsets.
      rmSync(join(dir, 'sessions'));
      symlinkSync(join(otherDir, 'sessions'), join(dir, 'sessions'));
      for (const q of queries) {
        const want = await ref.page('s', q);
        expect(want.records.length, JSON.stringify(q)).toBeGreaterThan(0);
        expect(await store.page('s', q), JSON.stringify(q)).toEqual(want);
      }
      // Appends still go where the link pointed at open, and are served.
      await store.append('s', makeEvents(120, 5));
      expect((await store.page('s', { maxMessages: 5 })).toSeq).toBe(125);
    } finally {
      await store.close();
      await ref.close();
    }
    expect(readdirSync(join(otherDir, 'sessions')).sort()).toEqual(['index', 's.events']);
  });

  it("a session's log inside it that is a link is still never written through", async () => {
    const disk = linkedSessions();
    await session();
    renameSync(join(disk, 's.events'), join(outside, 's.events'));
    symlinkSync(join(outside, 's.events'), join(disk, 's.events'));
    const before = tree(outside);
    await expect(SessionWriter.open(dir, 's').then((w) => w.append([ev(1)]).finally(() => w.close()))).rejects.toMatchObject({ code: 'ELOOP' });
    expect(tree(outside)).toEqual(before);
  });

  it('a folder inside it that is a link (index/) is still refused, nothing written where it points', async () => {
    const disk = linkedSessions();
    mkdirSync(join(outside, 'index'));
    symlinkSync(join(outside, 'index'), join(disk, 'index'));
    await expect(SessionWriter.create(dir, 's', header)).rejects.toMatchObject({ code: 'ELOOP' });
    expect(readdirSync(join(outside, 'index'))).toEqual([]);
  });

  it('a link in sessions/ made after the open (or to a file) is not followed: refused as any other', async () => {
    mkdirSync(join(dir), { recursive: true });
    const backend = new LocalBackend(dir);
    const disk = join(root, 'disk2');
    mkdirSync(disk);
    symlinkSync(disk, join(dir, 'sessions'));
    await expect(backend.replace('sessions/a.txt', Buffer.from('x'))).rejects.toMatchObject({ code: 'ELOOP' });
    expect(readdirSync(disk)).toEqual([]);
    // A link to a file where sessions/ should be a folder: refused, not followed.
    rmSync(join(dir, 'sessions'));
    writeFileSync(join(outside, 'f'), 'kept');
    symlinkSync(join(outside, 'f'), join(dir, 'sessions'));
    await expect(new LocalBackend(dir).replace('sessions/a.txt', Buffer.from('x'))).rejects.toMatchObject({ code: expect.stringMatching(/^(ELOOP|ENOTDIR|EEXIST)$/) });
    expect(readFileSync(join(outside, 'f'), 'utf8')).toBe('kept');
  });
});
