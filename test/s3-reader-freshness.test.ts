/**
 * How fresh a reader over a network store is (docs/s3-layout.md, "Readers'
 * freshness"): a reader keeps the manifest it looked up for `freshMs`, and
 * - a client asking a page pinned at a seq the reader has not seen yet
 *   (learned from the writer's acknowledgment) makes it look again at once:
 *   the page is served, not `invalid_request`;
 * - a look asked for after an append's message never answers with a look
 *   that began before the message (it used to: the page then lagged one
 *   append behind a follower on the same reader);
 * - with an append bus, appends that come without a message (lost, or a
 *   restarted writer's recovered tail) still reach followers by the slow
 *   backstop poll.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/core/types.js';
import { decodeWholeLog, referencePage } from '../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import type { AppendBus } from '../src/main/store/append-bus.js';
import type { StorageBackend } from '../src/storage/backend.js';
import { sessionKeys } from '../src/storage/layout.js';
import { MemoryObjectStore, type ListResult, type ObjectStore } from '../src/storage/s3/object-store.js';
import type { S3BackendOptions } from '../src/storage/s3/s3-backend.js';
import { makeS3Backend } from './helpers/backends.js';

const chat = (from: number, n: number): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => {
    const seq = from + i;
    return seq % 4 === 0
      ? { type: 'user/message', seq, time: 1000 + seq, data: { text: `question ${seq}` } }
      : { type: 'assistant/message', seq, time: 1000 + seq, data: { text: `answer ${seq}` } };
  });

/** An object store whose LIST answers can be held back: the listing is taken when asked, delivered when let go. */
class HeldLists implements ObjectStore {
  private held: (() => void)[] | null = null;
  constructor(private readonly inner: ObjectStore) {}
  hold(): void {
    this.held = [];
  }
  letGo(): void {
    const h = this.held ?? [];
    this.held = null;
    for (const go of h) go();
  }
  get heldCount(): number {
    return this.held?.length ?? 0;
  }
  get(n: string, s: number, e: number) {
    return this.inner.get(n, s, e);
  }
  getAll(n: string) {
    return this.inner.getAll(n);
  }
  put(n: string, d: Uint8Array, o?: { ifAbsent?: boolean }) {
    return this.inner.put(n, d, o);
  }
  async list(p: string, o?: { startAfter?: string; delimiter?: string }): Promise<ListResult> {
    const r = await this.inner.list(p, o);
    const held = this.held;
    if (held !== null) await new Promise<void>((go) => held.push(go));
    return r;
  }
  remove(n: string[]) {
    return this.inner.remove(n);
  }
}

/** A bus that delivers nothing (every message lost). */
const silentBus: AppendBus = {
  publish: () => undefined,
  subscribe: () => () => undefined,
  stats: () => ({ kind: 'silent', connected: true, published: 0, received: 0, rejected: 0 }),
  close: async () => undefined,
};

describe('a reader over a network store', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  function backend(objects: ObjectStore, opts: Partial<S3BackendOptions> = {}) {
    const b = makeS3Backend(objects, opts);
    cleanups.push(b.dispose);
    return b;
  }

  async function storeOn(storage: StorageBackend, more: { appendBus?: AppendBus; watchPollMs?: number } = {}): Promise<PagerStore> {
    const s = await openStore({ storage, workers: 1, pageCacheBytes: 0, warmUp: { jit: false, pagePath: false }, ...more });
    cleanups.push(() => s.close());
    return s;
  }

  async function expectTail(reader: PagerStore, writer: StorageBackend, id: string, throughSeq: number): Promise<void> {
    const bytes = (await writer.readAll(sessionKeys(id).events)) as Buffer;
    const want = referencePage(decodeWholeLog(bytes), id, { throughSeq, maxMessages: 3 });
    expect(await reader.page(id, { maxMessages: 3 })).toEqual(want);
  }

  it('a page pinned at a seq the reader has not seen yet is looked up again and served; one past the end is invalid_request', async () => {
    const objects = new MemoryObjectStore();
    const w = backend(objects);
    const r = backend(objects, { location: { bucket: 'b', prefix: w.prefix }, freshMs: 60_000 });
    const writer = await storeOn(w.storage);
    const reader = await storeOn(r.storage);
    await writer.create('pin', { createdAt: 1 });
    await writer.append('pin', chat(0, 10));
    expect((await reader.page('pin', { maxMessages: 2 })).throughSeq).toBe(9);
    await writer.append('pin', chat(10, 10));
    // Within its freshness window the reader's unpinned cut is still the one it looked up...
    expect((await reader.page('pin', { maxMessages: 2 })).throughSeq).toBe(9);
    // ...but a client that knows seq 19 gets it, and the page equals the reference.
    const bytes = (await w.storage.readAll(sessionKeys('pin').events)) as Buffer;
    expect(await reader.page('pin', { throughSeq: 19, maxMessages: 2 })).toEqual(referencePage(decodeWholeLog(bytes), 'pin', { throughSeq: 19, maxMessages: 2 }));
    expect((await reader.page('pin', { maxMessages: 2 })).throughSeq).toBe(19);
    await expect(reader.page('pin', { throughSeq: 20 })).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('a look asked for after an append never answers with a look that began before it', async () => {
    const objects = new MemoryObjectStore();
    const w = backend(objects);
    const held = new HeldLists(objects);
    const r = backend(held, { location: { bucket: 'b', prefix: w.prefix }, freshMs: 40 });
    const writer = await storeOn(w.storage);
    const reader = await storeOn(r.storage);
    await writer.create('race', { createdAt: 1 });
    await writer.append('race', chat(0, 8));
    await expectTail(reader, w.storage, 'race', 7);
    await new Promise((res) => setTimeout(res, 60));
    // A page starts a look (the window has passed); its listing is taken now, before the append.
    held.hold();
    const early = reader.page('race', { maxMessages: 3 });
    for (let i = 0; i < 100 && held.heldCount === 0; i++) await new Promise((res) => setTimeout(res, 5));
    expect(held.heldCount).toBe(1);
    await writer.append('race', chat(8, 8));
    // The append's message arrives: the reader is told to look again (what remote-appends.ts does).
    const told = r.storage.refresh(sessionKeys('race').meta);
    held.letGo();
    // The page asked before the append may show it or not; either cut is a committed one.
    expect([7, 15]).toContain((await early).throughSeq);
    await told;
    // Within the window again, yet the cut is the append's: the look it was told of began after it.
    await expectTail(reader, w.storage, 'race', 15);
  });

  it('with an append bus, an append that comes without a message reaches a follower by the backstop poll', async () => {
    const objects = new MemoryObjectStore();
    const w = backend(objects);
    const r = backend(objects, { location: { bucket: 'b', prefix: w.prefix }, freshMs: 20 });
    const writer = await storeOn(w.storage);
    const reader = await storeOn(r.storage, { appendBus: silentBus, watchPollMs: 100 });
    await writer.create('lost', { createdAt: 1 });
    await writer.append('lost', chat(0, 4));
    const ac = new AbortController();
    const it = reader.follow('lost', { fromSeq: 4, signal: ac.signal });
    const first = it.next();
    // The follower has looked and waits (its look saw nothing past seq 3) before the append is made.
    await new Promise((res) => setTimeout(res, 150));
    await writer.append('lost', chat(4, 4));
    const deadline = setTimeout(() => ac.abort(), 5_000);
    const got: number[] = [];
    const one = await first;
    if (one.done !== true) got.push(one.value.seq);
    while (got.length < 4) {
      const n = await it.next();
      if (n.done === true) break;
      got.push(n.value.seq);
    }
    clearTimeout(deadline);
    ac.abort();
    expect(got).toEqual([4, 5, 6, 7]);
  });
});
