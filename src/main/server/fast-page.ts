/**
 * The page route's common case answered on node's request and response,
 * without the framework (issue 15: random pages over HTTP against the SQLite
 * peer). At 16 connections the main thread is the serial stage, and a page
 * through fastify cost, besides the page itself, a request and reply object, a
 * child logger, the router, a dozen hooks (each onSend and onRequest its own
 * runner), the query's validation, the handler's promise and the reply's
 * send path: ~15-20% of the main thread's CPU a page (docs/benchmarks.md,
 * "proof (thirteenth session, 2026-12-03)").
 *
 * What is answered here is exactly what the route answers (page-answer.ts
 * builds both), with the headers its hooks set (ETag, Cache-Control, Vary,
 * Content-Type, Content-Encoding, x-request-id; Connection: close while the
 * server closes), the same metrics (request latency, bytes out, pages, 304s,
 * errors, aborted requests), the same errors in the SPEC's shape and the same
 * request log lines (metrics.ts's "request completed" and "request aborted by
 * the client", the error handler's "request failed"; the framework's own
 * request logging is off, server/index.ts). Only a
 * request the route would answer from its common path comes here: a GET of
 * `/v1/sessions/<id>/page` with a plain query (each of its four parameters
 * at most once, plain decimal digits in range, nothing percent-encoded), no
 * body, a Host header on HTTP/1.1, a valid token, CORS off, the app ready
 * and not closing, nothing
 * to shed and an admission slot free at once. Anything else (an invalid
 * parameter, a request that would queue or be shed, HEAD, ...) goes to the
 * framework as before, which answers it as it always has.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { PagerError } from '../../core/errors.js';
import { MAX_MAX_MESSAGES } from '../../core/page-rule.js';
import type { PageParams } from '../../core/types.js';
import type { Admission, Release } from './admission.js';
import { bodyUnread } from './early-answer.js';
import { toPagerError } from './errors.js';
import type { ServerMetrics } from './metrics.js';
import { checkLoop, checkPool, type OverloadPolicy, type ShedPacer } from './overload.js';
import { answerPage, PAGE_ROUTE, type PageAnswerContext } from './page-answer.js';
import { IMMUTABLE, REVALIDATE } from './page-caching.js';
import { RequestAbort } from './request-abort.js';
import { genReqId, REQUEST_ID_HEADER } from './request-id.js';
import { SESSION_ID_PATTERN } from './schemas.js';

/** The part of the app's logger used here (fastify's, pino's). */
export interface FastPageLogger {
  isLevelEnabled?: (level: string) => boolean;
  error: (obj: object, msg: string) => void;
  info: (obj: object, msg: string) => void;
  debug: (obj: object, msg: string) => void;
}

/**
 * Whether the logger writes `level`. Fastify's null logger (no `logger` option) has no levels
 * and writes nothing: no line's object is built for it.
 */
function logs(log: FastPageLogger, level: 'info' | 'debug'): boolean {
  return typeof log.isLevelEnabled === 'function' && log.isLevelEnabled(level);
}

export interface FastPageOptions {
  pages: PageAnswerContext;
  admission: Admission;
  pacer: ShedPacer;
  policy: OverloadPolicy;
  /** Whether an Authorization header value is accepted (auth.ts's tokenChecker). */
  authorized: (authorization: string | undefined) => boolean;
  maxUrlLength: number;
  /** The route's handler timeout, ms (0: none). */
  pageTimeoutMs: number;
  retryAfterSeconds: number;
  metrics: ServerMetrics;
  log: FastPageLogger;
  /** The app is ready (its hooks and routes are in place). */
  ready: () => boolean;
  /** The server is closing. */
  closing: () => boolean;
  /**
   * Counts the request's connection as a client while the request is open (server/index.ts's
   * ActiveClients): `started` as it is taken, `ended` as its response closes.
   */
  clients: { started: (socket: Socket) => void; ended: (socket: Socket) => void };
}

/**
 * The page facts of the request log lines (metrics.ts RequestFacts, as the route sets them), and
 * the built body's release, called as the response closes (PageAsk.bodyHolder): the one 'close'
 * listener of the request does all its closing work (three listeners a response made node's
 * emitter copy its listener array and call two more wrappers a request).
 */
interface LogFacts {
  sessionId: string | undefined;
  page: { fromSeq: number; toSeq: number; events: number; bytes: number; frames: number } | undefined;
  releaseBody: (() => void) | undefined;
}

/** The page path; the id as the route's schema takes it (schemas.ts), the query after `?`. */
const PAGE_PATH = new RegExp(`^/v1/sessions/(${SESSION_ID_PATTERN.slice(1, -1)})/page(?:\\?([^#%+]*))?$`);
/** What the route's validation turns into an integer (validation.ts: plain decimal digits). */
const DECIMAL = /^(0|[1-9][0-9]*)$/;
/** The page query's parameters and their ranges (schemas.ts PAGE_SCHEMA). */
const RANGES: Record<string, readonly [number, number]> = {
  throughSeq: [0, Number.MAX_SAFE_INTEGER],
  beforeSeq: [0, Number.MAX_SAFE_INTEGER],
  maxMessages: [1, MAX_MAX_MESSAGES],
  maxBytes: [1, Number.MAX_SAFE_INTEGER],
};
/** maxMessages when the query has none (the route schema's default). */
const DEFAULT_MAX_MESSAGES = 50;
const JSON_TYPE = 'application/json; charset=utf-8';
const VARY = 'Accept-Encoding';
const TIMED_OUT = 'the request took too long; retry shortly';

/** The query's page parameters, or null for anything but the plain form (the framework judges it). */
export function plainPageQuery(query: string | undefined): PageParams | null {
  // One literal of all four, undefined until the query gives one (what PageParams's absent
  // parameter means): the parameters passed through the page path keep one hidden class, the
  // literal's, which lives as long as this code; added one by one as the query orders them, each
  // order's classes died with the last request's parameters, and a full collection between
  // requests could discard the code that reads them ("weak objects" in --trace-deopt).
  const out: PageParams = { throughSeq: undefined, beforeSeq: undefined, maxMessages: undefined, maxBytes: undefined };
  if (query !== undefined && query !== '') {
    for (const part of query.split('&')) {
      const eq = part.indexOf('=');
      if (eq <= 0) return null;
      const key = part.slice(0, eq);
      const range = RANGES[key];
      if (range === undefined || (out as Record<string, unknown>)[key] !== undefined) return null;
      const text = part.slice(eq + 1);
      if (!DECIMAL.test(text)) return null;
      const v = Number(text);
      if (v < range[0] || v > range[1]) return null;
      (out as Record<string, number>)[key] = v;
    }
  }
  out.maxMessages ??= DEFAULT_MAX_MESSAGES;
  return out;
}

/** A handler that answers a page request it can take whole, and says whether it did. */
export function fastPager(o: FastPageOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { admission, pacer, policy, metrics } = o;
  // The Authorization value a connection last passed with (auth.ts's addAuth does the same).
  const passed = new WeakMap<object, string>();
  const allowed = (req: IncomingMessage): boolean => {
    const authorization = req.headers.authorization;
    const socket = req.socket as object | null;
    if (authorization !== undefined && socket !== null && passed.get(socket) === authorization) return true;
    if (!o.authorized(authorization)) return false;
    if (authorization !== undefined && socket !== null) passed.set(socket, authorization);
    return true;
  };
  return (req, res) => {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || url.length > o.maxUrlLength || !o.ready() || o.closing()) return false;
    const m = PAGE_PATH.exec(url);
    if (m === null || req.destroyed || bodyUnread(req)) return false;
    if (req.httpVersion === '1.1' && req.headers.host === undefined) return false;
    const params = plainPageQuery(m[2]);
    if (params === null || !allowed(req)) return false;
    // Shed: the framework's path, with its hold (fast-shed.ts took those admission sheds at once).
    try {
      checkLoop(policy);
      checkPool(policy);
    } catch {
      return false;
    }
    if (admission.shedsAtOnce()) return false;
    serve(o, req, res, m[1] as string, params);
    return true;
  };
}

/**
 * The last response this route answered (and through it its request), kept alive until the next
 * request: node adds its fields as it goes, and the hidden classes they pass through live only as
 * long as an object that has them. Between requests none was left, and a full collection freed
 * them and discarded the code that checks for them ("weak objects" in --trace-deopt: answerPage
 * and node's header writing, which check the response; `build`, which hands the response to the
 * page's answer, and the page build, which checks the request's abort). What stays alive is one
 * finished response, its request and the last request's abort (a RequestAbort: its field is added
 * by its constructor, and the class it passes to is held only by an instance; without one,
 * buildPage was discarded at full collections, test/optimized-code.test.ts).
 */
let lastResponse: ServerResponse | null = null;
let lastAbort: RequestAbort | null = null;

function serve(o: FastPageOptions, req: IncomingMessage, res: ServerResponse, id: string, params: PageParams): void {
  const { metrics, admission } = o;
  const t0 = performance.now();
  const socket = req.socket;
  o.clients.started(socket);
  const bytes0 = socket?.bytesWritten ?? 0;
  let release: Release | null = null;
  const reqId = genReqId(req);
  // The request's abort: a client that leaves, or the handler timeout, drops its queued work.
  // An AbortSignal is made only if something listens or it aborts (request-abort.ts).
  const ac = new RequestAbort();
  lastResponse = res;
  lastAbort = ac;
  let timer: NodeJS.Timeout | undefined;
  if (o.pageTimeoutMs > 0) {
    timer = setTimeout(() => {
      if (res.writableEnded) return;
      const err = new PagerError('overloaded', TIMED_OUT);
      ac.abort(err);
      fail(o, res, reqId, err);
    }, o.pageTimeoutMs);
  }
  // What the request log lines say of the page (the route's request.pager facts).
  const facts: LogFacts = { sessionId: undefined, page: undefined, releaseBody: undefined };
  // One listener for both ends: 'close' follows 'finish' (node emits it on the next tick) and also
  // comes when the client leaves first; a second listener a request was a wrapper and an emit more.
  res.once('close', () => {
    o.clients.ended(socket);
    release?.();
    clearTimeout(timer);
    if (!res.writableFinished) left();
    else {
      const ms = performance.now() - t0;
      metrics.getDuration(PAGE_ROUTE, res.statusCode).observe(ms / 1000);
      let out = typeof socket?.bytesWritten === 'number' ? socket.bytesWritten - bytes0 : 0;
      if (out <= 0) out = Number(res.getHeader('content-length') ?? 0) || 0;
      metrics.bytesOutOf(PAGE_ROUTE).inc(out);
      // metrics.ts's onResponse line: shed answers (503) at debug, the rest at info.
      const level = res.statusCode === 503 ? 'debug' : 'info';
      if (logs(o.log, level)) {
        // reqId first: what the framework's request child logger writes as its binding, in the same place.
        o.log[level]({ reqId, method: 'GET', url: req.url, statusCode: res.statusCode, sessionId: facts.sessionId, page: facts.page, durationMs: Math.round(ms * 100) / 100 }, 'request completed');
      }
    }
    // The body's memory may take a later page now that the socket is done with it (answerPage).
    facts.releaseBody?.();
  });
  // The client went away before its answer was written (or while it waited for a slot).
  const left = (): void => {
    if (!ac.aborted) ac.abort();
    metrics.aborted.inc({ route: PAGE_ROUTE });
    // metrics.ts's onRequest hook logs these too.
    if (logs(o.log, 'info')) {
      o.log.info({ reqId, method: 'GET', url: req.url, sessionId: facts.sessionId, page: facts.page, durationMs: Math.round((performance.now() - t0) * 100) / 100 }, 'request aborted by the client');
    }
  };
  const now = admission.tryAcquire();
  if (now !== null) {
    release = now;
    return build(o, req, res, id, params, ac, reqId, facts, () => clearTimeout(timer));
  }
  // No slot free: the queue (admission.ts), as the route's admission hook queues (routes.ts).
  admission.acquire(ac.signal).then(
    (r) => {
      release = r;
      // The client left as its turn came: the slot goes to the next one, unused.
      if (req.destroyed || res.destroyed) return r(true);
      build(o, req, res, id, params, ac, reqId, facts, () => clearTimeout(timer));
    },
    (err: unknown) => {
      if (res.destroyed || res.headersSent) return;
      // Shed from the queue: answered no sooner than the connection's hold (overload.ts: holdShed, ShedPacer).
      const left = (err as { code?: unknown } | null)?.code === 'overloaded' ? t0 + o.pacer.shed(socket, t0) - performance.now() : 0;
      const answer = () => {
        clearTimeout(timer);
        fail(o, res, reqId, err);
      };
      if (left > 1) setTimeout(answer, left);
      else answer();
    },
  );
}

/** The page, once admitted; `done` stops the handler timeout. */
function build(o: FastPageOptions, req: IncomingMessage, res: ServerResponse, id: string, params: PageParams, ac: RequestAbort, reqId: string, facts: LogFacts, done: () => void): void {
  o.pacer.admitted(req.socket);
  // The route's handler names the session first thing (routes.ts sessionId).
  facts.sessionId = id;
  answerPage(o.pages, {
    id,
    params,
    acceptEncoding: req.headers['accept-encoding'],
    ifNoneMatch: req.headers['if-none-match'],
    signal: ac,
    res,
    answered: () => res.writableEnded,
    counted: true,
    bodyHolder: facts,
  }).then(
    (a) => {
      done();
      if (a === null || res.destroyed || res.headersSent) return;
      const cacheControl = a.pinned ? IMMUTABLE : REVALIDATE;
      // Each answer's headers are one object literal of all its fields (the four forms below), not
      // fields added one by one: a literal's hidden class lives as long as this code (the literal
      // holds it), while the classes an object passes through as fields are added die with the
      // last such object, and a full collection between requests then discarded the code that
      // checks for them ("weak objects" in --trace-deopt: the headers' finishing). 'x-request-id'
      // is REQUEST_ID_HEADER, spelled out: a computed key is added after the literal is made.
      // Connection: close, added only while the server closes, is the exception.
      if (a.status === 304) {
        const headers: Record<string, string> =
          a.etag === null ? { 'cache-control': cacheControl, vary: VARY, 'x-request-id': reqId } : { etag: a.etag, 'cache-control': cacheControl, vary: VARY, 'x-request-id': reqId };
        closeWhileClosing(o, headers);
        res.writeHead(304, headers);
        res.end();
        return;
      }
      const pb = a.pb;
      facts.page = { fromSeq: pb.fromSeq, toSeq: pb.toSeq, events: pb.toSeq - pb.fromSeq, bytes: pb.body.length, frames: pb.frames };
      const length = String(a.body.length);
      const headers: Record<string, string> =
        a.encoding === null
          ? { etag: a.etag, 'cache-control': cacheControl, vary: VARY, 'content-type': JSON_TYPE, 'x-request-id': reqId, 'content-length': length }
          : { etag: a.etag, 'cache-control': cacheControl, vary: VARY, 'content-type': JSON_TYPE, 'content-encoding': a.encoding, 'x-request-id': reqId, 'content-length': length };
      closeWhileClosing(o, headers);
      res.writeHead(200, headers);
      res.end(a.body);
    },
    (err: unknown) => {
      done();
      // The client left (its signal aborted the page's queued work): nobody reads an answer.
      if (res.destroyed || res.headersSent) return;
      fail(o, res, reqId, err);
    },
  );
}

/** Responses finishing during shutdown close their connection (server/index.ts's onSend hook). */
function closeWhileClosing(o: FastPageOptions, headers: Record<string, string>): void {
  if (o.closing()) headers.connection = 'close';
}

/** A failure in the SPEC's shape, as the app's error handler answers it (errors.ts). */
function fail(o: FastPageOptions, res: ServerResponse, reqId: string, err: unknown): void {
  if (res.destroyed || res.headersSent) return;
  const pe = toPagerError(err);
  // As the app's error handler logs them (errors.ts), with the request's reqId binding.
  if (pe.code === 'internal') o.log.error({ reqId, err }, 'internal error');
  else if (logs(o.log, 'debug')) o.log.debug({ reqId, code: pe.code, message: pe.message }, 'request failed');
  o.metrics.errors.inc({ code: pe.code });
  const headers: Record<string, string> = {};
  if (pe.code === 'overloaded') {
    const ra = pe.details?.retryAfter;
    headers['retry-after'] = String(typeof ra === 'number' && ra > 0 ? Math.ceil(ra) : o.retryAfterSeconds);
  }
  headers['content-type'] = JSON_TYPE;
  headers[REQUEST_ID_HEADER] = reqId;
  closeWhileClosing(o, headers);
  const body = Buffer.from(JSON.stringify(pe.toJSON()));
  headers['content-length'] = String(body.length);
  res.writeHead(pe.statusCode, headers);
  res.end(body);
}
