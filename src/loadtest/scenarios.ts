/**
 * Scenarios of real client behaviour, each a loop that one connection runs
 * until the run stops. All but `random` go through the client library, so
 * every page is checked and every join and live event is held to the
 * journal's rules (a broken one is counted by its code); `random` is
 * autocannon's request loop (the fastest stateless client there is), with
 * one answer in 20 checked by the client library.
 *
 * A 503 is counted and the loop goes straight on (closed loop: the offered
 * load stays what the connections make, as at the edge of capacity).
 */
import autocannon from 'autocannon';
import { ClientError, SessionPagerClient, checkJoin, checkPage, type FollowItem, type SessionEvent } from '../client/index.js';
import type { Recorder } from './recorder.js';

export interface Target {
  id: string;
  lastSeq: number;
}

export interface LoopContext {
  client: SessionPagerClient;
  rec: Recorder;
  /**
   * Aborted when the run ends: loops stop and what is still in flight is not
   * counted. Plain requests are left to finish rather than aborted (an abort
   * while undici reads a body could leave the read pending for good here);
   * follow streams are closed.
   */
  stop: AbortSignal;
  maxMessages: number;
  rand: () => number;
}

const now = () => performance.now();

export function pick<T>(items: readonly T[], rand: () => number): T {
  return items[Math.floor(rand() * items.length)] as T;
}

/** Run `fn` as one timed request; errors are counted by code (not rethrown) unless the run is stopping. */
async function timed<T>(c: LoopContext, fn: () => Promise<T>): Promise<T | undefined> {
  const t0 = now();
  try {
    const v = await fn();
    if (!c.stop.aborted) c.rec.request(now() - t0, 200);
    return v;
  } catch (err) {
    if (c.stop.aborted) return undefined;
    if (err instanceof ClientError) c.rec.request(now() - t0, err.status ?? 'error', err.code);
    else c.rec.request(now() - t0, 'error', 'client');
    // Not a busy loop when every answer is an error.
    await new Promise((r) => setTimeout(r, 5));
    return undefined;
  }
}

/** Scroll up: the tail page, then older pages (checked joins) until the start, then another session. */
export async function scrollLoop(c: LoopContext, targets: readonly Target[]): Promise<void> {
  while (!c.stop.aborted) {
    const t = pick(targets, c.rand);
    let cur = await timed(c, () => c.client.page(t.id, { maxMessages: c.maxMessages }));
    while (cur !== undefined && cur.page.hasMore && !c.stop.aborted) {
      const newer = cur.page;
      const older = await timed(c, () => c.client.page(t.id, { maxMessages: c.maxMessages, throughSeq: newer.throughSeq, beforeSeq: newer.fromSeq }));
      if (older === undefined) break;
      try {
        checkJoin(newer, older.page);
      } catch (err) {
        c.rec.error((err as ClientError).code ?? 'continuity');
        break;
      }
      cur = older;
    }
  }
}

/**
 * How long one attach watches: drawn uniformly within holdMs x (1 +- 0.5), the mean
 * `holdMs`. With one hold for every follower, the attaches that one stall of the server
 * held up together came back together a hold later, and again after that, in step for
 * the rest of the run: bursts that people who each leave when they will do not make
 * (loadtest/overload-clients.mjs measured both; docs/benchmarks.md, 12-02 evening).
 */
export function holdFor(holdMs: number, rand: () => number): number {
  return holdMs * (0.5 + rand());
}

/**
 * Attach: follow a session (its snapshot is the tail page), watch it for
 * about `holdMs` (holdFor), detach, attach again. The request latency is the time to the
 * snapshot; live events give the delivery delay (now minus the event's
 * `time`, which the writer sets when it sends the batch).
 */
export async function attachLoop(c: LoopContext, targets: readonly Target[], holdMs: number): Promise<void> {
  while (!c.stop.aborted) {
    const t = pick(targets, c.rand);
    const f = c.client.follow(t.id, { maxMessages: c.maxMessages, signal: c.stop, maxFailures: 1, retryMs: 100 });
    const t0 = now();
    let snap = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      // Each item is recorded by `record`, not held in a `for await` binding: V8 keeps a suspended
      // async function's dead locals, and the snapshot (its page, every event) stayed reachable
      // for the whole hold, 64 to 256 of them promoted to the old generation (docs/decisions.md, attach20).
      const items = f[Symbol.asyncIterator]();
      const record = (item: FollowItem): void => {
        if (item.kind === 'snapshot') {
          snap = true;
          c.rec.request(now() - t0, 200);
          c.rec.snapshots++;
          timer = setTimeout(() => f.close(), holdFor(holdMs, c.rand));
          return;
        }
        if (!item.repaired) c.rec.delay(Date.now() - item.event.time);
        else c.rec.followEvents++;
      };
      for (;;) {
        let step: IteratorResult<FollowItem> | undefined = await items.next();
        if (step.done === true) break;
        record(step.value);
        step = undefined;
      }
    } catch (err) {
      if (c.stop.aborted) break;
      const e = err instanceof ClientError ? err : undefined;
      if (!snap) c.rec.request(now() - t0, e?.status ?? 'error', e?.code ?? 'client');
      else c.rec.error(e?.code ?? 'client');
      await new Promise((r) => setTimeout(r, 5));
    } finally {
      clearTimeout(timer);
      c.rec.reconnects += f.stats.reconnects;
      c.rec.gaps += f.stats.gaps;
    }
  }
}

/** Events as an agent host writes them: a user message, streamed deltas, the answer. */
export function hostEvents(from: number, n: number, time: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  for (let seq = from; seq < from + n; seq++) {
    const k = seq % 20;
    const turn = Math.floor(seq / 20);
    if (k === 0) out.push({ type: 'user/message', seq, time, data: { content: [{ type: 'text', text: `load test question ${turn}` }] } });
    else if (k < 19) out.push({ type: 'assistant/chunk', seq, time, data: { turn, step: 0, chunk: { type: 'text-delta', index: 0, text: ` token${seq}` } } });
    else out.push({ type: 'assistant/message', seq, time, data: { content: [{ type: 'text', text: `answer ${turn}` }] } });
  }
  return out;
}

/** A writer appending a batch every `intervalMs` (each answer after fsync) to its own session. */
export async function writerLoop(c: LoopContext, id: string, batch: number, intervalMs: number): Promise<void> {
  let next = 0;
  while (!c.stop.aborted) {
    const t0 = now();
    const ok = await timed(c, () => c.client.append(id, hostEvents(next, batch, Date.now())));
    if (ok !== undefined) {
      c.rec.appendLatencies.push(now() - t0);
      next = ok.nextSeq;
    } else if (!c.stop.aborted) {
      // After a failed append the session's end is what the server says it is.
      next = (await c.client.info(id).catch(() => ({ nextSeq: next }))).nextSeq;
    }
    const wait = intervalMs - (now() - t0);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
}

/** The 2xx answers of the random scenario read and checked by the client library: one in this many. */
export const CHECK_ONE_IN = 20;

/** What randomPages' text hook reads of autocannon 9's pipelined-requests queue (httpClient.js). */
interface PendingAnswer {
  body: string;
  headers: { statusCode?: number };
  /** The answer's body as it came, undecoded (this hook's). */
  chunks?: Buffer[];
}
interface AnswerQueue {
  peek(): PendingAnswer | undefined;
  addBody(data: Buffer): void;
  terminateRequest(): PendingAnswer | undefined;
}

/**
 * Makes an autocannon client turn into text only the answers `read` asks for (given the status),
 * and keep the others' bodies as the Buffers they came in, uncounted by the JS heap.
 *
 * autocannon 9 appends every body chunk to a string (`req.body += chunk`, a UTF-8 decode each)
 * whether anything reads it or not. With many connections of large pages, as many half-built
 * strings outlive each scavenge of the young generation, so the generator's GC, and its CPU a
 * request, grew with the connections, taken from the server it measures when both share the
 * machine's cores: the harness read a loss of goodput that was its own (docs/decisions.md, cap20).
 */
function decodeOnlyRead(client: { pipelinedRequests?: AnswerQueue }, read: (status: number) => boolean): void {
  const q = client.pipelinedRequests;
  if (q === undefined || typeof q.addBody !== 'function' || typeof q.terminateRequest !== 'function') throw new Error('autocannon: no pipelined-requests queue to hook (a version other than 9?)');
  const terminate = q.terminateRequest;
  q.addBody = function addBody(this: AnswerQueue, data: Buffer) {
    const a = this.peek();
    if (a !== undefined) (a.chunks ??= []).push(data);
  };
  q.terminateRequest = function terminateRequest(this: AnswerQueue) {
    const a = terminate.call(this);
    if (a?.chunks !== undefined) {
      if (read(a.headers.statusCode ?? 0)) a.body = Buffer.concat(a.chunks).toString('utf8');
      a.chunks = undefined;
    }
    return a;
  };
}

/**
 * Random 50-message pages over many sessions (autocannon): each request a
 * random session and a random `beforeSeq`, pinned at the session's last seq.
 * Every error answer's body is read (its code); of the 2xx, one in CHECK_ONE_IN is checked.
 */
export function randomPages(c: LoopContext, o: { url: string; headers: Record<string, string>; connections: number; durationS: number; targets: readonly Target[] }): Promise<unknown> {
  let n = 0;
  // Whether the answer autocannon hands to onResponse next was decoded (decided as it ends, by its status).
  let checkNext = false;
  const read = (status: number) => (checkNext = status >= 300 || n++ % CHECK_ONE_IN === 0);
  const inst = autocannon({
    url: o.url,
    connections: o.connections,
    duration: o.durationS,
    headers: o.headers,
    timeout: 30,
    setupClient: (client: { pipelinedRequests?: AnswerQueue }) => decodeOnlyRead(client, read),
    requests: [
      {
        setupRequest: (req: Record<string, unknown>, context: Record<string, unknown>) => {
          const t = pick(o.targets, c.rand);
          const before = 1 + Math.floor(c.rand() * (t.lastSeq + 1));
          context.id = t.id;
          context.before = before;
          context.through = t.lastSeq;
          return { ...req, method: 'GET', path: `/v1/sessions/${encodeURIComponent(t.id)}/page?throughSeq=${t.lastSeq}&beforeSeq=${before}&maxMessages=${c.maxMessages}` };
        },
        onResponse: (status: number, body: string, context: Record<string, unknown>) => {
          if (status >= 300) {
            let code = `http_${status}`;
            try {
              const e = (JSON.parse(body) as { error?: { code?: unknown } }).error;
              if (typeof e?.code === 'string') code = e.code;
            } catch {
              // not a SPEC error body: keep the status
            }
            c.rec.error(code);
          } else if (checkNext) {
            try {
              checkPage(JSON.parse(body), { sessionId: context.id as string, throughSeq: context.through as number, beforeSeq: context.before as number });
            } catch (err) {
              c.rec.error(err instanceof ClientError ? err.code : 'invalid_page');
            }
          }
        },
      },
    ],
  } as autocannon.Options);
  inst.on('response', (_client: unknown, status: number, bytes: number, ms: number) => {
    c.rec.bytes += bytes;
    c.rec.request(ms, status, undefined, false);
  });
  inst.on('reqError', () => c.rec.failed('network'));
  c.stop.addEventListener('abort', () => inst.stop(), { once: true });
  return inst as unknown as Promise<unknown>;
}
