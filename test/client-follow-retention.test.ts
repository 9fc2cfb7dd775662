/**
 * A follower, and the load harness's attach loop, let go of a delivered snapshot (its page and
 * every expanded event) while they wait for the next event: a quiet stream must not keep the
 * tail page of every open follow alive (docs/decisions.md, attach20). Checked with WeakRefs and
 * a forced full collection (V8's gc, exposed in this test process only).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { Follower, type FollowItem, type FollowSource } from '../src/client/follow.js';
import { attachLoop, type LoopContext } from '../src/loadtest/scenarios.js';
import { Recorder } from '../src/loadtest/recorder.js';
import type { SessionPagerClient } from '../src/client/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function collect(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 10));
    gc();
  }
}

/** A server stand-in: each follow answers one snapshot of 500 events, then stays open and quiet until aborted. */
function quietSource(): FollowSource {
  const records = [];
  for (let seq = 0; seq < 500; seq++) records.push({ event: { type: 'user/message', seq, time: 1, data: { content: [{ type: 'text', text: `message ${seq}` }] } } });
  const page = { sessionId: 's', throughSeq: 499, fromSeq: 0, toSeq: 500, hasMore: false, records };
  const bytes = new TextEncoder().encode(`retry: 1000\nevent: snapshot\nid: 499\ndata: ${JSON.stringify({ cursor: 499, page })}\n\n`);
  return {
    sessionUrl: (id, tail) => `http://stand-in/v1/sessions/${id}${tail ?? ''}`,
    readRange: async () => [],
    rawFetch: async (_url, init) => {
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < bytes.length; i += 4096) c.enqueue(bytes.subarray(i, i + 4096));
          init?.signal?.addEventListener('abort', () => c.error(new DOMException('aborted', 'AbortError')), { once: true });
        },
      });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    },
  };
}

describe('follow: a delivered snapshot is not retained while the stream is quiet', () => {
  it('the Follower holds neither the page nor its events while waiting for the next event', async () => {
    const f = new Follower(quietSource(), 's', { idleTimeoutMs: 0 });
    const it = f[Symbol.asyncIterator]();
    const refs = await it.next().then((r) => {
      const item = r.value as FollowItem;
      if (item.kind !== 'snapshot') throw new Error('expected the snapshot first');
      expect(item.events).toHaveLength(500);
      return { page: new WeakRef(item.page), events: new WeakRef(item.events) };
    });
    const waiting = it.next();
    await collect();
    expect(refs.events.deref()).toBeUndefined();
    expect(refs.page.deref()).toBeUndefined();
    f.close();
    await expect(waiting).resolves.toMatchObject({ done: true });
  });

  it("the attach loop holds no snapshot during an attach's hold", async () => {
    const source = quietSource();
    const refs: WeakRef<object>[] = [];
    let opened = 0;
    const client = {
      follow(id: string, opts: ConstructorParameters<typeof Follower>[2]) {
        opened++;
        const f = new Follower(source, id, { ...opts, idleTimeoutMs: 0 });
        const items = f[Symbol.asyncIterator]();
        // A plain iterator (no generator of its own to keep anything): it notes each snapshot.
        return {
          stats: f.stats,
          close: () => f.close(),
          [Symbol.asyncIterator]: () => ({
            next: async () => {
              const r = await items.next();
              if (r.done !== true && r.value.kind === 'snapshot') refs.push(new WeakRef(r.value.events));
              return r;
            },
          }),
        };
      },
    };
    const stop = new AbortController();
    const rec = new Recorder();
    const c = { client: client as unknown as SessionPagerClient, rec, stop: stop.signal, maxMessages: 500, rand: () => 0.5 } as LoopContext;
    const loop = attachLoop(c, [{ id: 's', lastSeq: 499 }], 60_000);
    while (refs.length === 0) await new Promise((r) => setTimeout(r, 5));
    await collect();
    expect(opened).toBe(1);
    expect(rec.snapshots).toBe(1);
    expect(refs[0]?.deref()).toBeUndefined();
    stop.abort();
    await loop;
  });
});
