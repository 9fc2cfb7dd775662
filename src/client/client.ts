/**
 * `session-pager/client`: a client of the HTTP API (SPEC section 6) for
 * Node and browsers. It uses only what both have (fetch, ReadableStream,
 * TextDecoder, AbortController, timers); a test keeps Node-only imports out
 * of this folder and of the core modules it uses.
 *
 * Every page it returns is checked and expanded (`page-check.ts`); walks
 * newest-first check each join (`continuity.ts`); `follow()` is a journal
 * reader (`follow.ts`).
 */
import type { Page, SessionEvent, SessionHeader } from '../core/types.js';
import { ClientError, errorFromResponse } from './errors.js';
import { Follower, type FollowOptions } from './follow.js';
import { checkJoin } from './continuity.js';
import { checkPage, type CheckedPage } from './page-check.js';
import { sleep } from './sleep.js';

export interface ClientOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Bearer token (SPEC section 6). */
  token?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** Retries of a request answered `overloaded` 503, after its `Retry-After` (default 2; 0 to see every 503). */
  overloadRetries?: number;
  /** Longest wait honoured from a `Retry-After`, ms (default 10,000). */
  maxRetryAfterMs?: number;
  /** Check that every page's records are the canonical packing of its events (default false: costs a re-pack). */
  checkCanonical?: boolean;
}

export interface PageQuery {
  throughSeq?: number;
  beforeSeq?: number;
  maxMessages?: number;
  maxBytes?: number;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

/** A catalog line (`GET /v1/sessions`); the fields the client relies on, the rest kept. */
export interface SessionEntry {
  id: string;
  status: 'ok' | 'degraded' | 'repair_required' | (string & {});
  reasons: string[];
  nextSeq: number;
  lastSeq: number;
  [key: string]: unknown;
}

export interface AppendResult {
  fromSeq: number;
  toSeq: number;
  nextSeq: number;
}

export class SessionPagerClient {
  readonly baseUrl: string;
  private readonly opts: ClientOptions;
  private readonly fetchImpl: typeof fetch;

  constructor(opts: ClientOptions) {
    this.opts = opts;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    if (opts.fetch === undefined && typeof globalThis.fetch !== 'function') throw new TypeError('no fetch implementation: pass options.fetch');
    // Called unbound, browsers refuse `fetch` ("Illegal invocation").
    this.fetchImpl = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Headers of every request: auth and the caller's extras. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { ...(this.opts.headers ?? {}), ...extra };
    if (this.opts.token !== undefined) h.authorization = `Bearer ${this.opts.token}`;
    return h;
  }

  sessionUrl(id: string, tail = ''): string {
    return `${this.baseUrl}/v1/sessions/${encodeURIComponent(id)}${tail}`;
  }

  /**
   * One request; non-2xx become ClientError with the SPEC code. An
   * `overloaded` 503 is retried after its Retry-After, `overloadRetries` times.
   */
  async request(url: string, init: RequestInit & { signal?: AbortSignal } = {}): Promise<Response> {
    const retries = this.opts.overloadRetries ?? 2;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchImpl(url, { ...init, headers: this.headers((init.headers ?? {}) as Record<string, string>) });
      } catch (err) {
        if (init.signal?.aborted) throw err;
        throw new ClientError('network', `request to ${url} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
      }
      if (res.ok) return res;
      const e = await errorFromResponse(res);
      if (res.status === 503 && attempt < retries) {
        await sleep(Math.min((e.retryAfter ?? 1) * 1000, this.opts.maxRetryAfterMs ?? 10_000), init.signal);
        continue;
      }
      throw e;
    }
  }

  private async json(url: string, init: RequestInit & { signal?: AbortSignal } = {}): Promise<unknown> {
    const res = await this.request(url, init);
    try {
      return await res.json();
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw new ClientError('protocol', `${url}: the response is not JSON`, { cause: err });
    }
  }

  /** The catalog. */
  async sessions(o: RequestOptions = {}): Promise<SessionEntry[]> {
    const body = (await this.json(`${this.baseUrl}/v1/sessions`, { signal: o.signal })) as { sessions?: unknown };
    if (!Array.isArray(body?.sessions)) throw new ClientError('protocol', 'catalog: "sessions" must be an array');
    return body.sessions as SessionEntry[];
  }

  /** One session's metadata and status. */
  async info(id: string, o: RequestOptions = {}): Promise<SessionEntry> {
    return (await this.json(this.sessionUrl(id), { signal: o.signal })) as SessionEntry;
  }

  /** Create a session from a header record (`PUT /v1/sessions/:id`). */
  async create(id: string, header: Partial<SessionHeader> | Record<string, unknown> = {}, o: RequestOptions = {}): Promise<SessionEntry> {
    return (await this.json(this.sessionUrl(id), {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(header),
      signal: o.signal,
    })) as SessionEntry;
  }

  /** Append events whose seqs continue the session's `nextSeq`; resolves once durable. */
  async append(id: string, events: readonly SessionEvent[], o: RequestOptions = {}): Promise<AppendResult> {
    return (await this.json(this.sessionUrl(id, '/events'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
      signal: o.signal,
    })) as AppendResult;
  }

  /** One page, checked against SPEC sections 2 and 4 and expanded into its events. */
  async page(id: string, q: PageQuery = {}, o: RequestOptions = {}): Promise<CheckedPage> {
    const params = new URLSearchParams();
    for (const k of ['throughSeq', 'beforeSeq', 'maxMessages', 'maxBytes'] as const) {
      const v = q[k];
      if (v !== undefined) params.set(k, String(v));
    }
    const qs = params.toString();
    const body = await this.json(this.sessionUrl(id, `/page${qs ? `?${qs}` : ''}`), { signal: o.signal });
    return checkPage(body, {
      sessionId: id,
      ...(q.throughSeq === undefined ? {} : { throughSeq: q.throughSeq }),
      ...(q.beforeSeq === undefined ? {} : { beforeSeq: q.beforeSeq }),
      canonical: this.opts.checkCanonical === true,
    });
  }

  /**
   * Pages newest-first: the tail page (or the one ending at `beforeSeq`),
   * then each older one by `beforeSeq = fromSeq`, pinned at the first
   * page's `throughSeq`, until `hasMore` is false. Every join is checked.
   */
  async *pages(id: string, q: Omit<PageQuery, 'beforeSeq'> & { beforeSeq?: number } = {}, o: RequestOptions = {}): AsyncGenerator<CheckedPage> {
    let cur = await this.page(id, q, o);
    yield cur;
    const through = cur.page.throughSeq;
    while (cur.page.hasMore) {
      const older = await this.page(id, { ...q, throughSeq: through, beforeSeq: cur.page.fromSeq }, o);
      checkJoin(cur.page, older.page);
      yield older;
      cur = older;
    }
  }

  /**
   * The logical events `[from, to)` (all committed), read by walking pages
   * back from `to` pinned at `to - 1`: what a journal reads to repair a gap.
   */
  async readRange(id: string, from: number, to: number, q: { maxMessages?: number } = {}, o: RequestOptions = {}): Promise<SessionEvent[]> {
    if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 0 && to >= from)) throw new RangeError(`bad range [${from}, ${to})`);
    if (to === from) return [];
    const chunks: SessionEvent[][] = [];
    let prev: Page | undefined;
    for await (const p of this.pages(id, { throughSeq: to - 1, beforeSeq: to, ...(q.maxMessages === undefined ? {} : { maxMessages: q.maxMessages }) }, o)) {
      if (prev === undefined && p.page.toSeq !== to) throw new ClientError('continuity', `range read ends at ${p.page.toSeq}, not ${to}`);
      prev = p.page;
      chunks.push(p.page.fromSeq < from ? p.events.slice(from - p.page.fromSeq) : p.events);
      if (p.page.fromSeq <= from) break;
    }
    const out = chunks.reverse().flat();
    if (out.length !== to - from || out[0]?.seq !== from) throw new ClientError('continuity', `range read gave ${out.length} events for [${from}, ${to})`);
    return out;
  }

  /** Follow a session live (SSE), as a journal: see `Follower`. */
  follow(id: string, opts: FollowOptions = {}): Follower {
    return new Follower(this, id, opts);
  }

  /** The raw fetch, with auth (for the follower and the load harness). */
  rawFetch(url: string, init: RequestInit = {}): Promise<Response> {
    return this.fetchImpl(url, { ...init, headers: this.headers((init.headers ?? {}) as Record<string, string>) });
  }
}
