/**
 * `store.follow(id, { fromSeq })` (event-follow.ts): every event from
 * `fromSeq` on, in seq order, no gap and no duplicate, waiting for appends;
 * ending on break/return(), on store.close() and on an aborted signal, and
 * leaving no watcher behind; every error with its code; a slow consumer
 * holds one bounded chunk, read from the log by seq.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PagerError } from '../src/core/errors.js';
import type { SessionEvent } from '../src/core/types.js';
import { EventFollower, FOLLOW_CHUNK_EVENTS, type FollowSource } from '../src/main/event-follow.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { makeEvents, seedSession, sleep, tempStore, until, type TempStore } from './server-helpers.js';

let ts: TempStore;
let store: PagerStore;

beforeAll(async () => {
  ts = await tempStore();
  store = ts.store as PagerStore;
});

afterAll(async () => {
  await ts.cleanup();
});

/** Take `n` events from a follower, failing after `timeoutMs`. */
async function take(it: AsyncIterator<SessionEvent>, n: number, timeoutMs = 10_000): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  const deadline = Date.now() + timeoutMs;
  while (out.length < n) {
    const r = await Promise.race([it.next(), sleep(Math.max(1, deadline - Date.now())).then(() => 'timeout' as const)]);
    if (r === 'timeout') throw new Error(`timed out after ${out.length} of ${n} events`);
    if (r.done) throw new Error(`follower ended after ${out.length} of ${n} events`);
    out.push(r.value);
  }
  return out;
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PagerError);
  expect((err as PagerError).code).toBe(code);
}

describe('store.follow', () => {
  it('yields the stored events from fromSeq, then each append, exactly once and in order', async () => {
    await seedSession(store, 'f1', 40, 15);
    const f = store.follow('f1', { fromSeq: 5 });
    expect(await take(f, 35)).toEqual(makeEvents(5, 35));
    const more = take(f, 30);
    await store.append('f1', makeEvents(40, 10));
    await store.append('f1', makeEvents(50, 20));
    expect(await more).toEqual(makeEvents(40, 30));
    await f.return?.();
    expect(store.stats().follow).toEqual({ watchedSessions: 0, followers: 0 });
  });

  it('starts at the end by default (events appended from now on), and ends on break', async () => {
    await seedSession(store, 'f2', 20, 20);
    const got: SessionEvent[] = [];
    let stop = false;
    const loop = (async () => {
      for await (const e of store.follow('f2')) {
        got.push(e);
        if (got.length === 15) break;
      }
      stop = true;
    })();
    // Append 5 at a time until the follower has 15: when exactly it started is its own business.
    let next = 20;
    while (!stop && next < 2000) {
      await store.append('f2', makeEvents(next, 5));
      next += 5;
      await sleep(20);
    }
    await loop;
    const first = got[0]!.seq;
    expect(first).toBeGreaterThanOrEqual(20); // nothing of what was stored before it
    expect(got).toEqual(makeEvents(first, 15));
    expect(store.stats().follow).toEqual({ watchedSessions: 0, followers: 0 });
  });

  it('shares one watcher among the followers of a session', async () => {
    await seedSession(store, 'f3', 10, 10);
    const a = store.follow('f3', { fromSeq: 0 });
    const b = store.follow('f3', { fromSeq: 0 });
    await take(a, 10);
    await take(b, 10);
    expect(store.stats().follow).toEqual({ watchedSessions: 1, followers: 2 });
    await a.return?.();
    expect(store.stats().follow).toEqual({ watchedSessions: 1, followers: 1 });
    await b.return?.();
    expect(store.stats().follow).toEqual({ watchedSessions: 0, followers: 0 });
  });

  it('fails with the error each bad start deserves', async () => {
    await seedSession(store, 'f4', 10, 10);
    expect(() => store.follow('f4', { fromSeq: -1 })).toThrow(/fromSeq must be a non-negative integer/);
    expect(() => store.follow('f4', { fromSeq: 1.5 })).toThrow(PagerError);
    expect(() => store.follow('../x')).toThrow(/session id/);
    await rejectsWith(store.follow('f4', { fromSeq: 11 }).next(), 'invalid_request');
    await rejectsWith(store.follow('no-such-session').next(), 'session_not_found');
    expect(store.stats().follow).toEqual({ watchedSessions: 0, followers: 0 });
  });

  it('ends a waiting next() when its signal aborts', async () => {
    await seedSession(store, 'f5', 5, 5);
    const ac = new AbortController();
    const f = store.follow('f5', { signal: ac.signal });
    const pending = f.next();
    await sleep(50);
    ac.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(await f.next()).toEqual({ done: true, value: undefined });
    expect(store.stats().follow).toEqual({ watchedSessions: 0, followers: 0 });
  });

  it('ends on store.close(), waiting or not', async () => {
    const own = await openStore({ dataDir: ts.dir, workers: 1 });
    await seedSession(own, 'f6', 5, 5);
    const waiting = own.follow('f6');
    const pending = waiting.next();
    const unstarted = own.follow('f6', { fromSeq: 0 });
    await sleep(50);
    await own.close();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(await unstarted.next()).toEqual({ done: true, value: undefined });
    expect(own.stats().follow).toEqual({ watchedSessions: 0, followers: 0 });
    expect(() => own.follow('f6')).toThrow(/closed/);
  });

  it('sees appends made by another writer of the same data directory (not through this store)', async () => {
    // A second store on the same directory writes: its appends reach `store` only through the files.
    const other = await openStore({ dataDir: ts.dir, workers: 1 });
    try {
      await seedSession(other, 'f7', 10, 10);
      const f = store.follow('f7', { fromSeq: 10 });
      const got = take(f, 25);
      await sleep(20);
      await other.append('f7', makeEvents(10, 5));
      await other.append('f7', makeEvents(15, 20));
      expect(await got).toEqual(makeEvents(10, 25));
      await f.return?.();
    } finally {
      await other.close();
    }
  });
});

describe('EventFollower on a scripted source', () => {
  function source(total: number, failures: string[] = []) {
    const reads: [number, number][] = [];
    let listener: (() => void) | undefined;
    const src: FollowSource & { reads: [number, number][]; end: number; grow(n: number): void } = {
      reads,
      end: total,
      grow(n) {
        src.end += n;
        listener?.();
      },
      async nextSeq() {
        const code = failures.shift();
        if (code !== undefined) throw new PagerError(code as 'repair_required', `scripted ${code}`);
        return src.end;
      },
      async readEvents(_id, from, to) {
        expect(to - from).toBeLessThanOrEqual(FOLLOW_CHUNK_EVENTS);
        const got = makeEvents(from, Math.min(to, src.end) - from);
        if (got.length > 0) reads.push([from, from + got.length]);
        return got;
      },
      subscribe: () => () => undefined,
      watch(_id, fn) {
        listener = fn;
        return () => (listener = undefined);
      },
    };
    return src;
  }

  it('reads a far-behind consumer bounded chunk by chunk, each starting at the next seq', async () => {
    const src = source(5000);
    const f = new EventFollower(src, 's', { fromSeq: 0 }, () => undefined);
    for (let i = 0; i < 1200; i++) await f.next();
    src.grow(100);
    const rest = await take(f, 3900);
    expect(rest[0]!.seq).toBe(1200);
    expect(rest.at(-1)!.seq).toBe(5099);
    // Each chunk read starts where the last one ended: nothing read twice, nothing skipped.
    let at = 0;
    for (const [from, to] of src.reads) {
      expect(from).toBe(at);
      at = to;
    }
    expect(at).toBe(5100);
    await f.return();
  });

  it('tries a repair_required read again before believing it; other errors end it at once', async () => {
    const settles = source(10, ['repair_required', 'repair_required']);
    const a = new EventFollower(settles, 's', { fromSeq: 0 }, () => undefined);
    expect((await take(a, 10)).map((e) => e.seq)).toEqual([...Array(10).keys()]);
    await a.return();

    let ended = 0;
    const broken = source(10, Array(4).fill('repair_required'));
    const b = new EventFollower(broken, 's', { fromSeq: 0 }, () => ended++);
    await rejectsWith(b.next(), 'repair_required');
    expect(ended).toBe(1);
    expect(await b.next()).toEqual({ done: true, value: undefined });

    const gone = source(10, ['session_not_found']);
    const c = new EventFollower(gone, 's', { fromSeq: 0 }, () => undefined);
    await rejectsWith(c.next(), 'session_not_found');
    expect(gone.reads).toEqual([]);
  });
});
