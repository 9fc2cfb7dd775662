/**
 * Repeated pages come from the prepared-page cache (a session's newest page
 * at once, any other once asked for again), and only while the session is
 * unchanged: an append (in this process or another) or a damaged
 * file changes the session's stamp, so the next page is rebuilt.
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/core/types.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { PageCache } from '../src/main/page-cache.js';
import { writeRandomLog } from './helpers/random-log.js';

let dir: string;
let store: PagerStore;

function turns(from: number, n: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  for (let t = 0; t < n; t++) {
    out.push({ type: 'user/message', seq: from + out.length, time: 10 + from + out.length, data: { text: `q${t}` }, surfaceOp: 'append' });
    out.push({ type: 'assistant/message', seq: from + out.length, time: 10 + from + out.length, data: { text: `a${t}` }, surfaceOp: 'append' });
  }
  return out;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-cache-'));
  store = await openStore({ dataDir: dir, workers: 1 });
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('prepared-page cache', () => {
  it('serves a repeated page without decoding it again', async () => {
    await writeRandomLog({ events: turns(0, 20), batches: [{ size: 3, format: 'jsonl' }] }, { dataDir: dir, id: 'c1' });
    const first = await store.pageBuffer('c1', { maxMessages: 5 });
    const done = store.stats().pool.completed;
    const again = await store.pageBuffer('c1', { maxMessages: 5 });
    expect(again.body).toBe(first.body);
    expect(store.stats().pool.completed).toBe(done);
    expect(store.stats().cache.pageHits).toBeGreaterThan(0);
    // Other parameters are other pages.
    const other = await store.pageBuffer('c1', { maxMessages: 6 });
    expect(other.body).not.toBe(first.body);
  });

  it('keeps an older page only once it is asked for again', async () => {
    await writeRandomLog({ events: turns(0, 20), batches: [{ size: 3, format: 'jsonl' }] }, { dataDir: dir, id: 'c4' });
    const older = { beforeSeq: 20, maxMessages: 4 };
    const built = () => store.stats().pool.completed;
    const first = await store.pageBuffer('c4', older);
    let done = built();
    const second = await store.pageBuffer('c4', older);
    expect(built()).toBeGreaterThan(done); // built again: one request is no reason to keep it
    expect(second.body).not.toBe(first.body);
    expect(second.body.equals(first.body)).toBe(true);
    done = built();
    const third = await store.pageBuffer('c4', older);
    expect(built()).toBe(done);
    expect(third.body).toBe(second.body);
  });

  it('rebuilds after an append through the store', async () => {
    await store.create('c2', { type: 'session' });
    await store.append('c2', turns(0, 3));
    const before = await store.page('c2');
    await store.append('c2', turns(6, 1));
    const after = await store.page('c2');
    expect(after.throughSeq).toBe(before.throughSeq + 2);
    expect(after.toSeq).toBe(8);
  });

  it('rebuilds when the files change under it (another process, damage)', async () => {
    await writeRandomLog({ events: turns(0, 4), batches: [{ size: 2, format: 'jsonl' }] }, { dataDir: dir, id: 'c3' });
    const path = join(dir, 'sessions/c3.events');
    const clean = await store.page('c3', { maxMessages: 100 });
    appendFileSync(path, '{"type":"user/message","seq":8,"ti'); // a torn, unindexed tail
    const info = await store.info('c3');
    expect(info.status).toBe('degraded');
    const log = await readWholeLog(path, info.indexedLength);
    expect(await store.page('c3', { maxMessages: 100 })).toEqual(referencePage(log, 'c3', { maxMessages: 100 }));
    expect(clean).toEqual(referencePage(log, 'c3', { maxMessages: 100 }));
  });

  const page = (n: number) => ({ body: Buffer.alloc(n), sessionId: 's', throughSeq: 0, fromSeq: 0, toSeq: 0, hasMore: false, frames: 0, frameBytes: 0, logBytesRead: 0 });

  it('is bounded by bytes, least recently used first, and skips pages too big to keep', () => {
    const cache = new PageCache(1000);
    // Newest pages (true) are kept at once.
    cache.set('a', page(200), true);
    cache.set('b', page(200), true);
    cache.set('huge', page(300), true); // over a quarter of the bound
    expect(cache.get('huge')).toBeUndefined();
    cache.get('a'); // a is now the most recent
    cache.set('c', page(200), true);
    cache.set('d', page(200), true);
    cache.set('e', page(200), true); // 1000 bytes: still fits
    cache.set('f', page(200), true); // evicts the least recently used: b
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
    expect(cache.size).toBeLessThanOrEqual(1000);
  });

  it('keeps any other page on its second build among the last keys built', () => {
    const cache = new PageCache(1000, 250, 2);
    cache.set('x', page(10));
    expect(cache.get('x')).toBeUndefined();
    expect(cache.size).toBe(0);
    cache.set('x', page(10));
    expect(cache.get('x')).toBeDefined();
    // Only the last two keys built once are remembered: y is forgotten by the time it comes again.
    cache.set('y', page(10));
    cache.set('z', page(10));
    cache.set('w', page(10));
    cache.set('y', page(10));
    expect(cache.get('y')).toBeUndefined();
    cache.set('w', page(10));
    expect(cache.get('w')).toBeDefined();
  });
});
