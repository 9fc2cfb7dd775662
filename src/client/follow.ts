/**
 * Following a session live (SSE, SPEC section 6) the way a journal reader
 * must: every event exactly once, in seq order, whatever the connection does.
 *
 * - The first connection gets a `snapshot` (the tail page and its cursor);
 *   its events are delivered first.
 * - A dropped connection (an error, an end without `end`, silence longer than
 *   `idleTimeoutMs`, a server `end` at shutdown, an `overloaded` error or
 *   503) is reopened with `Last-Event-ID` set to the last seq delivered,
 *   after the server's `retry`/`Retry-After` or a capped backoff.
 * - Each incoming event is placed against the next seq needed: an older seq
 *   is a duplicate and dropped; a later one means events are missing, and
 *   the missing range is read from pages (`readRange`) before it goes on.
 * - An SSE `id` that is not the event's seq, or an event that is not valid,
 *   is a protocol error: the follower stops with it rather than guess.
 */
import type { Page, SessionEvent } from '../core/types.js';
import { validateEvent } from '../core/chunk-codec.js';
import { RecordError } from '../core/errors.js';
import { sleep } from './sleep.js';
import { place } from './continuity.js';
import { ClientError, errorFromResponse } from './errors.js';
import { checkPage } from './page-check.js';
import { SseParser, type SseFrame } from './sse.js';

export interface FollowOptions {
  /** Messages in the snapshot page (the server's default otherwise). */
  maxMessages?: number;
  /**
   * Resume after this seq instead of starting with a snapshot (-1: from the
   * start of the session).
   */
  after?: number;
  signal?: AbortSignal;
  /** First reconnect delay, ms (the server's `retry:` replaces it; default 1000). */
  retryMs?: number;
  /** Longest reconnect delay, ms (default 10,000). */
  maxRetryMs?: number;
  /** Give up after this many consecutive failed connections without progress (default 10). */
  maxFailures?: number;
  /** Reconnect when nothing (not even a heartbeat) arrived for this long, ms; 0 never (default 45,000). */
  idleTimeoutMs?: number;
  /** Messages per page when reading a missing range. */
  repairMaxMessages?: number;
}

export type FollowItem =
  | { kind: 'snapshot'; cursor: number; page: Page; events: SessionEvent[] }
  /** `repaired`: read from pages to fill a gap in the stream, not received live. */
  | { kind: 'event'; event: SessionEvent; repaired: boolean };

export interface FollowStats {
  connects: number;
  reconnects: number;
  /** Events received again (snapshot overlap, resume overlap) and dropped. */
  duplicates: number;
  /** Gaps found in the stream and repaired from pages. */
  gaps: number;
  repairedEvents: number;
  /** Events delivered (snapshot events not counted). */
  delivered: number;
}

class Reconnect {
  constructor(
    readonly reason: string,
    readonly delayMs?: number,
    /** The server's answer, when it gave one (503, 5xx, an overloaded error event). */
    readonly error?: ClientError,
  ) {}
}

/**
 * What a Follower needs of its client (client.ts's SessionPagerClient is
 * one): the session's address, authorized requests, and pages to read a
 * missed range from. Named here so follow.ts does not import client.ts,
 * which imports it.
 */
export interface FollowSource {
  sessionUrl(id: string, tail?: string): string;
  rawFetch(url: string, init?: RequestInit): Promise<Response>;
  readRange(id: string, from: number, to: number, q?: { maxMessages?: number }, o?: { signal?: AbortSignal }): Promise<SessionEvent[]>;
}

export class Follower implements AsyncIterable<FollowItem> {
  readonly stats: FollowStats = { connects: 0, reconnects: 0, duplicates: 0, gaps: 0, repairedEvents: 0, delivered: 0 };
  /** The next seq the reader needs (undefined before the snapshot). */
  next: number | undefined;
  /** Why the last connection ended, for diagnostics. */
  lastReconnectReason: string | undefined;
  private readonly ctrl = new AbortController();
  private started = false;

  constructor(
    private readonly client: FollowSource,
    readonly sessionId: string,
    private readonly opts: FollowOptions = {},
  ) {
    if (opts.after !== undefined) {
      if (!Number.isSafeInteger(opts.after) || opts.after < -1) throw new RangeError('after must be a seq or -1');
      this.next = opts.after + 1;
    }
    const outer = opts.signal;
    if (outer !== undefined) {
      if (outer.aborted) this.ctrl.abort(outer.reason);
      else {
        const onAbort = () => this.ctrl.abort(outer.reason);
        outer.addEventListener('abort', onAbort, { once: true });
        this.detach = () => outer.removeEventListener('abort', onAbort);
      }
    }
  }

  private detach: () => void = () => undefined;

  /** Stop following; a pending `next()` ends. */
  close(): void {
    this.detach();
    this.ctrl.abort(new DOMException('follow closed', 'AbortError'));
  }

  [Symbol.asyncIterator](): AsyncIterator<FollowItem> {
    if (this.started) throw new Error('a Follower can be iterated once');
    this.started = true;
    return this.run();
  }

  private get aborted(): boolean {
    return this.ctrl.signal.aborted;
  }

  private async *run(): AsyncGenerator<FollowItem> {
    const o = this.opts;
    let retryMs = o.retryMs ?? 1000;
    const maxRetryMs = o.maxRetryMs ?? 10_000;
    const maxFailures = o.maxFailures ?? 10;
    let failures = 0;
    let lastError: ClientError | undefined;
    try {
      while (!this.aborted) {
        let progressed = false;
        let delay: number | undefined;
        try {
          // The server's `retry:` applies unless the caller chose a delay.
          const items = this.connection((ms) => (retryMs = o.retryMs ?? ms));
          // Not `for await (const item of ...)`: V8 keeps a suspended generator's dead locals, so
          // `item` (a snapshot: its page and every expanded event) stayed reachable for as long
          // as the stream then stayed quiet, and each follower's snapshot lived on into the old
          // generation instead of dying young (docs/decisions.md, attach20).
          try {
            for (;;) {
              let step: IteratorResult<FollowItem> | undefined = await items.next();
              if (step.done === true) break;
              progressed = true;
              failures = 0;
              let item: FollowItem | undefined = step.value;
              step = undefined;
              yield item;
              item = undefined;
            }
          } finally {
            // As `for await` does when its loop is left early (the caller closed the follower while
            // it held an item): the connection's own finally runs (its reader cancelled).
            await items.return(undefined);
          }
          throw new Reconnect('the stream ended');
        } catch (err) {
          if (this.aborted) return;
          if (!(err instanceof Reconnect)) throw err;
          this.lastReconnectReason = err.reason;
          lastError = err.error;
          delay = err.delayMs;
        }
        if (!progressed) failures++;
        if (failures >= maxFailures) {
          // Give up with the server's last answer when there was one (e.g. overloaded), else `network`.
          const message = `follow ${this.sessionId}: ${failures} connection(s) in a row failed (last: ${this.lastReconnectReason})`;
          if (lastError !== undefined) throw new ClientError(lastError.code, message, { ...(lastError.status === undefined ? {} : { status: lastError.status }), ...(lastError.retryAfter === undefined ? {} : { retryAfter: lastError.retryAfter }), details: lastError.details });
          throw new ClientError('network', message);
        }
        const backoff = Math.min(maxRetryMs, retryMs * 2 ** Math.max(0, failures - 1));
        try {
          await sleep(delay ?? backoff, this.ctrl.signal);
        } catch {
          return;
        }
        this.stats.reconnects++;
      }
    } finally {
      this.close();
    }
  }

  /** One connection: yields delivered items; throws Reconnect when it should be reopened. */
  private async *connection(setRetry: (ms: number) => void): AsyncGenerator<FollowItem> {
    const c = this.client;
    const q = this.opts.maxMessages === undefined ? '' : `?maxMessages=${this.opts.maxMessages}`;
    const headers: Record<string, string> = { accept: 'text/event-stream', 'cache-control': 'no-cache' };
    if (this.next !== undefined) headers['last-event-id'] = String(this.next - 1);
    const conn = new AbortController();
    const onAbort = () => conn.abort(this.ctrl.signal.reason);
    this.ctrl.signal.addEventListener('abort', onAbort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    let idleFired = false;
    const idleMs = this.opts.idleTimeoutMs ?? 45_000;
    const touch = () => {
      if (idleMs <= 0) return;
      if (idle !== undefined) clearTimeout(idle);
      idle = setTimeout(() => {
        idleFired = true;
        conn.abort(new Error('idle'));
      }, idleMs);
    };
    try {
      this.stats.connects++;
      touch();
      let res: Response;
      try {
        res = await c.rawFetch(c.sessionUrl(this.sessionId, `/follow${q}`), { headers, signal: conn.signal });
      } catch (err) {
        if (this.aborted) throw err;
        throw new Reconnect(idleFired ? 'no answer within the idle timeout' : `connect failed: ${(err as Error)?.message ?? String(err)}`);
      }
      if (!res.ok) {
        const e = await errorFromResponse(res);
        if (res.status === 503 || res.status >= 500) throw new Reconnect(`${e.code}: ${e.message}`, e.retryAfter === undefined ? undefined : e.retryAfter * 1000, e);
        throw e;
      }
      if (res.body === null) throw new Reconnect('the response has no body');
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const parser = new SseParser();
      try {
        for (;;) {
          let chunk: Awaited<ReturnType<typeof reader.read>>;
          // The idle clock runs only while waiting for the server, not while the consumer holds an item.
          touch();
          try {
            chunk = await reader.read();
          } catch (err) {
            if (this.aborted) throw err;
            throw new Reconnect(idleFired ? `nothing received for ${idleMs} ms` : `the connection broke: ${(err as Error)?.message ?? String(err)}`);
          } finally {
            if (idle !== undefined) clearTimeout(idle);
          }
          if (chunk.done) break;
          let frames: SseFrame[] | undefined = parser.push(decoder.decode(chunk.value, { stream: true }));
          if (parser.retryMs !== undefined) setRetry(parser.retryMs);
          for (let i = 0; i < frames.length; i++) yield* this.frame(frames[i] as SseFrame);
          // Dropped before the next read waits (a snapshot frame's data is the whole page's text).
          frames = undefined;
        }
      } finally {
        reader.cancel().catch(() => undefined);
      }
    } finally {
      if (idle !== undefined) clearTimeout(idle);
      this.ctrl.signal.removeEventListener('abort', onAbort);
      conn.abort();
    }
  }

  private async *frame(f: SseFrame): AsyncGenerator<FollowItem> {
    switch (f.event) {
      case 'snapshot':
        yield* this.snapshot(f);
        return;
      case 'event': {
        let e: SessionEvent;
        try {
          e = validateEvent(JSON.parse(f.data));
        } catch (err) {
          const why = err instanceof RecordError ? err.message : 'data is not JSON';
          throw new ClientError('protocol', `follow ${this.sessionId}: bad event (${why})`);
        }
        if (f.id !== undefined && f.id !== String(e.seq)) throw new ClientError('protocol', `follow ${this.sessionId}: SSE id ${f.id} on the event of seq ${e.seq}`);
        if (this.next === undefined) throw new ClientError('protocol', `follow ${this.sessionId}: an event before the snapshot`);
        yield* this.live([e]);
        return;
      }
      case 'error': {
        let body: { error?: { code?: unknown; message?: unknown; retryAfter?: unknown } } = {};
        try {
          body = JSON.parse(f.data);
        } catch {
          // fall through with an unknown code
        }
        const code = typeof body.error?.code === 'string' ? body.error.code : 'protocol';
        const message = typeof body.error?.message === 'string' ? body.error.message : f.data.slice(0, 200);
        if (code === 'overloaded') {
          const ra = body.error?.retryAfter;
          const retryAfter = typeof ra === 'number' && ra >= 0 ? ra : undefined;
          throw new Reconnect(`overloaded: ${message}`, retryAfter === undefined ? undefined : retryAfter * 1000, new ClientError('overloaded', message, retryAfter === undefined ? {} : { retryAfter }));
        }
        throw new ClientError(code, `follow ${this.sessionId}: ${message}`);
      }
      case 'end':
        throw new Reconnect('the server ended the stream');
      default:
        return; // unknown event types are for newer clients
    }
  }

  private async *snapshot(f: SseFrame): AsyncGenerator<FollowItem> {
    let body: { cursor?: unknown; page?: unknown };
    try {
      body = JSON.parse(f.data);
    } catch {
      throw new ClientError('protocol', `follow ${this.sessionId}: snapshot data is not JSON`);
    }
    const checked = checkPage(body.page, { sessionId: this.sessionId });
    const cursor = body.cursor;
    if (cursor !== checked.page.throughSeq) throw new ClientError('protocol', `follow ${this.sessionId}: snapshot cursor ${String(cursor)} is not its page's throughSeq ${checked.page.throughSeq}`);
    if (f.id !== undefined && f.id !== String(cursor)) throw new ClientError('protocol', `follow ${this.sessionId}: snapshot SSE id ${f.id}, cursor ${String(cursor)}`);
    if (this.next === undefined) {
      this.next = checked.page.toSeq;
      yield { kind: 'snapshot', cursor: checked.page.throughSeq, page: checked.page, events: checked.events };
      return;
    }
    // A snapshot after a resume (a server that ignored Last-Event-ID): only its new events count.
    yield* this.live(checked.events);
  }

  /** Deliver live events in order: drop duplicates, repair gaps from pages. */
  private async *live(events: readonly SessionEvent[]): AsyncGenerator<FollowItem> {
    for (const e of events) {
      const p = place(this.next as number, e.seq);
      if (p.kind === 'duplicate') {
        this.stats.duplicates++;
        continue;
      }
      if (p.kind === 'gap') {
        this.stats.gaps++;
        let missing: SessionEvent[];
        try {
          missing = await this.client.readRange(this.sessionId, p.from, p.to, this.opts.repairMaxMessages === undefined ? {} : { maxMessages: this.opts.repairMaxMessages }, { signal: this.ctrl.signal });
        } catch (err) {
          // Transient: reconnect from the last delivered seq and meet the gap again.
          if (err instanceof ClientError && (err.code === 'network' || err.code === 'overloaded')) throw new Reconnect(`repair of [${p.from}, ${p.to}) failed: ${err.message}`);
          throw err;
        }
        for (const m of missing) {
          this.next = m.seq + 1;
          this.stats.repairedEvents++;
          this.stats.delivered++;
          yield { kind: 'event', event: m, repaired: true };
        }
      }
      this.next = e.seq + 1;
      this.stats.delivered++;
      yield { kind: 'event', event: e, repaired: false };
    }
  }
}
