/**
 * What a page request sees of a session's files (src/main/store/session-views.ts): every request
 * stats the log, the entry sidecar and the metadata sidecar once, and its later checks use those
 * stats (no second look at the same file within the request, no view kept across requests
 * without a look). So an append by another process, or a file replaced (even at the same size
 * and mtime: a new inode), before a request began is seen by it; and the SPEC's trust rules hold
 * on the way (section 3: a new mtime alone at an equal size is not damage; sidecars are checked,
 * never trusted as they stand).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/core/types.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { sessionKeys } from '../src/storage/layout.js';
import { LocalBackend } from '../src/storage/local/local-backend.js';
import type { ObjectStat } from '../src/storage/backend.js';
import { tickEvents } from './helpers/tick-events.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const child = resolve(here, 'helpers/append-child.mjs');
const dist = resolve(here, '../dist/main/index.js');
const ticks = tickEvents as (from: number, n: number) => SessionEvent[];

/** The local backend, counting its stats by key. */
class CountingBackend extends LocalBackend {
  readonly stats = new Map<string, number>();
  override async stat(key: string): Promise<ObjectStat | null> {
    this.stats.set(key, (this.stats.get(key) ?? 0) + 1);
    const held = this.held;
    if (held === null || held.key !== key) return super.stat(key);
    this.held = null;
    const now = await super.stat(key);
    this.holding = true;
    await held.gate;
    this.holding = false;
    return now;
  }
  private held: { key: string; gate: Promise<void> } | null = null;
  holding = false;
  /** The next stat of `key` is taken at once and answered once `gate` resolves. */
  holdNext(key: string, gate: Promise<void>): void {
    this.held = { key, gate };
  }
  /** Stats of the session's three objects since the last call. */
  take(id: string): { events: number; entries: number; meta: number } {
    const k = sessionKeys(id);
    const out = { events: this.stats.get(k.events) ?? 0, entries: this.stats.get(k.entries) ?? 0, meta: this.stats.get(k.meta) ?? 0 };
    this.stats.clear();
    return out;
  }
}

let dir: string;
let storage: CountingBackend;
let store: PagerStore;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sp-view-fresh-'));
  const w = await SessionWriter.create(dir, 'f', { title: 'freshness' });
  await w.append(ticks(0, 10));
  await w.close();
  storage = new CountingBackend(dir);
  // No follower here: pages alone must see the changes (the watch machinery is not involved).
  store = await openStore({ storage, workers: 1, readOnly: true, watchPollMs: 10 * 60_000 });
});

afterEach(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A page request as the HTTP route makes it: the version (the tag's), then the page built from it. */
async function request(id: string): Promise<{ nextSeq: number; servable: boolean; toSeq?: number; error?: string }> {
  const v = await store.pageVersion(id);
  if (!v.servable) return { nextSeq: v.nextSeq, servable: false };
  try {
    const pb = await store.pageBuffer(id, { maxMessages: 1000 }, undefined, undefined, v);
    pb.release?.();
    return { nextSeq: v.nextSeq, servable: true, toSeq: pb.toSeq };
  } catch (err) {
    return { nextSeq: v.nextSeq, servable: true, error: (err as { code?: string }).code };
  }
}

function appendFromChild(id: string, batches: number, size: number): Promise<void> {
  return new Promise((ok, fail) => {
    const p = spawn(process.execPath, [child, dist, dir, id, String(batches), String(size), '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => (err += d));
    p.on('error', fail);
    p.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`writer process exited ${code}: ${err}`))));
  });
}

/** Replace `path` by `bytes` through a rename (a new inode), keeping its mtime: only the inode tells. */
function replaceKeepingTimes(path: string, bytes: Buffer): void {
  const before = statSync(path);
  const tmp = `${path}.replacing`;
  writeFileSync(tmp, bytes);
  // touch -r: the times to the nanosecond (utimes from JavaScript rounds them).
  expect(spawnSync('touch', ['-r', path, tmp]).status).toBe(0);
  renameSync(tmp, path);
  expect(statSync(path).mtimeMs).toBe(before.mtimeMs);
  expect(statSync(path).ino).not.toBe(before.ino);
}

describe('a page request sees what happened before it began', () => {
  it("another process's append between two requests is seen by the second", async () => {
    expect(existsSync(dist), 'dist/ is built by `npm test` (tsc) before the tests run').toBe(true);
    expect(await request('f')).toEqual({ nextSeq: 10, servable: true, toSeq: 10 });
    // The same again: served from the view kept under the same stamp.
    expect(await request('f')).toEqual({ nextSeq: 10, servable: true, toSeq: 10 });
    await appendFromChild('f', 1, 5);
    expect(await request('f')).toEqual({ nextSeq: 15, servable: true, toSeq: 15 });
    await appendFromChild('f', 2, 3);
    expect(await request('f')).toEqual({ nextSeq: 21, servable: true, toSeq: 21 });
    expect(await store.nextSeq('f')).toBe(21);
  }, 30_000);

  it('an entry sidecar replaced at the same size and mtime is seen (and checked, not trusted)', async () => {
    expect(await request('f')).toMatchObject({ nextSeq: 10, servable: true });
    const entries = join(dir, sessionKeys('f').entries);
    const bytes = readFileSync(entries);
    // The last line's opening brace made garbage: the same length, and no longer an entry line.
    const lastLine = bytes.lastIndexOf(0x0a, bytes.length - 2) + 1;
    const broken = Buffer.from(bytes);
    broken[lastLine] = 0x78;
    replaceKeepingTimes(entries, broken);
    const after = await request('f');
    expect(after.servable).toBe(false);
    expect((await store.info('f')).status).toBe('repair_required');
    // Put back (again a new inode): served again.
    replaceKeepingTimes(entries, bytes);
    expect(await request('f')).toEqual({ nextSeq: 10, servable: true, toSeq: 10 });
  });

  it('a metadata sidecar replaced by one that claims more than the entry sidecar holds is seen, and not believed', async () => {
    expect(await request('f')).toMatchObject({ nextSeq: 10, servable: true });
    const metaPath = join(dir, sessionKeys('f').meta);
    const original = readFileSync(metaPath);
    const meta = JSON.parse(original.toString('utf8'));
    meta.nextSeq += 5;
    meta.eventCount = meta.nextSeq;
    writeFileSync(`${metaPath}.new`, JSON.stringify(meta));
    renameSync(`${metaPath}.new`, metaPath);
    expect((await request('f')).servable).toBe(false);
    expect((await store.info('f')).reasons.join(' ')).toMatch(/metadata does not match the entry sidecar/);
  });

  it('a log whose mtime alone changed (the same size) is not damage: checked and served', async () => {
    expect(await request('f')).toEqual({ nextSeq: 10, servable: true, toSeq: 10 });
    const log = join(dir, sessionKeys('f').events);
    const later = new Date(statSync(log).mtimeMs + 60_000);
    utimesSync(log, later, later);
    storage.take('f');
    expect(await request('f')).toEqual({ nextSeq: 10, servable: true, toSeq: 10 });
    // The view was read again (its stamp moved): the log was looked at, and found the same.
    expect(storage.take('f').events).toBeGreaterThanOrEqual(1);
    const info = await store.info('f');
    expect(info.status).toBe('ok');
  });

  it('a log replaced by another one (a new inode, the same size and mtime) is seen', async () => {
    expect(await request('f')).toEqual({ nextSeq: 10, servable: true, toSeq: 10 });
    const log = join(dir, sessionKeys('f').events);
    const bytes = readFileSync(log);
    // The same bytes but the last frame's last byte before its newline: the frame no longer decodes.
    const broken = Buffer.from(bytes);
    broken[broken.length - 2] = 0x21;
    replaceKeepingTimes(log, broken);
    const after = await request('f');
    expect(after.servable === false || after.error !== undefined).toBe(true);
  });
});

describe('requests in flight together', () => {
  it('a request begun while an earlier request\'s stats are in flight, after an append, does not use them: it sees the append', async () => {
    await request('f');
    // The next stat of the metadata (the last of a look's three) is taken now and answered only
    // once `release` is called: the earlier request's look at the files is all from before the
    // append, and still on its way when the later request begins.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    storage.holdNext(sessionKeys('f').meta, gate);
    const first = store.pageVersion('f');
    await new Promise((r) => setTimeout(r, 20));
    expect(storage.holding).toBe(true);
    const w = await SessionWriter.open(dir, 'f');
    await w.append(ticks(10, 3));
    await w.close();
    const second = request('f');
    await new Promise((r) => setTimeout(r, 20));
    release();
    // The earlier request may show either (it began before the append).
    expect([10, 13]).toContain((await first).nextSeq);
    expect(await second).toEqual({ nextSeq: 13, servable: true, toSeq: 13 });
  });
});

describe('one stat of each of the three files a page request', () => {
  it('a request served from the kept view stats each file once', async () => {
    await request('f');
    await request('f');
    storage.take('f');
    await request('f');
    expect(storage.take('f')).toEqual({ events: 1, entries: 1, meta: 1 });
    // A page asked without a version (the library's call) too.
    (await store.pageBuffer('f', { maxMessages: 5 })).release?.();
    expect(storage.take('f')).toEqual({ events: 1, entries: 1, meta: 1 });
  });

  it('a request after another process appended reads the session again with the same stats, and stamps once more to check nothing moved meanwhile', async () => {
    await request('f');
    await appendFromChild('f', 1, 4);
    storage.take('f');
    expect(await request('f')).toEqual({ nextSeq: 14, servable: true, toSeq: 14 });
    // The stamp, and the stamp again after the reads: the reads themselves stat nothing again.
    expect(storage.take('f')).toEqual({ events: 2, entries: 2, meta: 2 });
  }, 30_000);
});
