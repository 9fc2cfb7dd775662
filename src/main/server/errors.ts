/**
 * Errors on the wire (SPEC section 6): every failure leaves as
 * `{"error":{"code","message",...details}}` with the status of its code.
 * Fastify's own errors (body limit, bad JSON, unsupported media type,
 * handler timeout) are mapped onto the same codes here, in one place; no
 * route is `404 not_found`, a route under another method
 * `405 method_not_allowed` with `Allow`. Errors raised before fastify has
 * a request (node's parser, the router) are in framework-errors.ts.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_STATUS, PagerError, isPagerError, type ErrorCode } from '../../core/errors.js';
import type { ServerMetrics } from './metrics.js';
import { hasBody } from './early-answer.js';
import { globalPlugin } from './plugin.js';
import type { RouteTable } from './route-table.js';

interface ErrorLike {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  name?: unknown;
  details?: unknown;
}

/** Any thrown value as a PagerError with one of the SPEC's codes. */
export function toPagerError(err: unknown): PagerError {
  if (isPagerError(err)) return err;
  const e = (typeof err === 'object' && err !== null ? err : {}) as ErrorLike;
  const message = typeof e.message === 'string' ? e.message : String(err);
  // A PagerError from another copy of the module (e.g. dist vs src in tests).
  if (e.name === 'PagerError' && typeof e.code === 'string' && e.code in ERROR_STATUS) {
    return new PagerError(e.code as ErrorCode, message, (e.details ?? undefined) as Record<string, unknown> | undefined);
  }
  const storage = typeof e.code === 'string' ? STORAGE_FAILURE[e.code] : undefined;
  if (storage !== undefined) return new PagerError('internal', `the server's storage failed: ${storage} (${e.code as string}); this request was not carried out`, { errno: e.code });
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  if (e.code === 'FST_ERR_HANDLER_TIMEOUT') return new PagerError('overloaded', 'the request took too long; retry shortly');
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || status === 413) return new PagerError('payload_too_large', 'request body is larger than the limit');
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || status === 415) {
    return new PagerError('unsupported_media_type', 'request bodies must be application/json (Content-Type)');
  }
  if (status === 503) return new PagerError('overloaded', message);
  const byStatus = STATUS_CODE[status];
  if (byStatus !== undefined) return new PagerError(byStatus, message);
  if (status >= 400 && status < 500) return new PagerError('invalid_request', message);
  return new PagerError('internal', 'internal error');
}

/**
 * Failures of the data directory's file system, said as such (the SPEC's `internal`, 500):
 * "internal error" alone left an operator nothing to act on when the disk was full. The
 * system's own message is not passed on (it names the server's paths). An append or a create
 * that fails so is taken back whole (session-writer.ts): nothing of it is acknowledged or served.
 */
const STORAGE_FAILURE: Partial<Record<string, string>> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large for the file system or the process limit',
  EROFS: 'the file system is read-only',
  EIO: 'input/output error',
  EMFILE: 'too many open files in this process',
  ENFILE: 'too many open files in the system',
  ELOOP: 'a file or folder of the data directory is a symbolic link, which it does not write through',
};

/** 4xx statuses that have a code of their own (the rest are invalid_request). */
const STATUS_CODE: Partial<Record<number, ErrorCode>> = {
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  431: 'header_too_large',
};

export function sendError(reply: FastifyReply, pe: PagerError, retryAfterSeconds: number): FastifyReply {
  if (pe.code === 'overloaded') {
    const ra = pe.details?.retryAfter;
    reply.header('retry-after', String(typeof ra === 'number' && ra > 0 ? Math.ceil(ra) : retryAfterSeconds));
  }
  if (pe.code === 'unauthorized') reply.header('www-authenticate', 'Bearer realm="session-pager"');
  return reply.code(pe.statusCode).type('application/json; charset=utf-8').send(JSON.stringify(pe.toJSON()));
}

/** An abort caused by the client closing its connection (fastify's request.signal), not a failure of the server's. */
function clientLeft(request: FastifyRequest, err: unknown): boolean {
  return (err as { name?: unknown } | null)?.name === 'AbortError' && request.raw.destroyed;
}

export interface ErrorsPluginOptions {
  metrics: ServerMetrics;
  /** Every route, for 405 + Allow. */
  routes: RouteTable;
  retryAfterSeconds: number;
}

/** Error and not-found handlers for the whole app (installed at the root). */
export const errorsPlugin = globalPlugin('session-pager-errors', async (app: FastifyInstance, opts: ErrorsPluginOptions) => {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // No route: fastify still parses the body first; what is wrong with it does not matter.
    const fstCode = (err as { code?: unknown } | null)?.code;
    if (request.is404 && typeof fstCode === 'string' && fstCode.startsWith('FST_ERR_CTP_') && fstCode !== 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return notFound(request, reply);
    }
    if (clientLeft(request, err)) {
      // What the request's signal aborted (its place in the admission queue, its page's queued
      // work) because the client closed the connection: no server error, and nobody is there to
      // read an answer (the metrics plugin counts it in http_aborted_total and logs it).
      // 499 is nginx's "client closed request".
      request.log.debug('the client left before its answer');
      return reply.code(499).type('application/json; charset=utf-8').send(JSON.stringify({ error: { code: 'client_closed_request', message: 'the client closed the connection before its answer' } }));
    }
    const pe = toPagerError(err);
    if (pe.code === 'internal') request.log.error({ err }, 'internal error');
    else request.log.debug({ code: pe.code, message: pe.message }, 'request failed');
    opts.metrics.errors.inc({ code: pe.code });
    return sendError(reply, pe, opts.retryAfterSeconds);
  });
  // A safety net for answers built by plugins in their own format (e.g. @fastify/cors's
  // text/plain "Invalid Preflight Request"): every 4xx/5xx leaves in the SPEC's shape.
  // Callback style: the 2xx answers it lets through cost no promise.
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void) => {
    if (reply.statusCode < 400 || request.method === 'HEAD') return done(null, payload);
    if (String(reply.getHeader('content-type') ?? '').startsWith('application/json')) return done(null, payload);
    if (payload !== null && payload !== undefined && typeof payload !== 'string' && !Buffer.isBuffer(payload)) return done(null, payload);
    const code: ErrorCode = STATUS_CODE[reply.statusCode] ?? (reply.statusCode === 503 ? 'overloaded' : reply.statusCode >= 500 ? 'internal' : 'invalid_request');
    const text = payload === null || payload === undefined ? '' : payload.toString();
    const message = /^[\x20-\x7e]{1,200}$/.test(text) ? text : (STATUS_CODES[reply.statusCode] ?? 'error');
    reply.code(ERROR_STATUS[code]).type('application/json; charset=utf-8').removeHeader('content-length');
    opts.metrics.errors.inc({ code });
    done(null, JSON.stringify({ error: { code, message } }));
  });
  const notFound = (request: FastifyRequest, reply: FastifyReply) => {
    const path = (request.raw.url ?? '/').split('?')[0] as string;
    const shown = JSON.stringify(path.length > 200 ? `${path.slice(0, 200)}…` : path);
    const allow = opts.routes.allowed(path);
    let pe: PagerError;
    if (allow.length > 0 && !allow.includes(request.method)) {
      reply.header('allow', allow.join(', '));
      pe = new PagerError('method_not_allowed', `${request.method} is not allowed on ${shown}; allowed: ${allow.join(', ')}`);
    } else {
      pe = new PagerError('not_found', `no route ${request.method} ${shown}`);
    }
    opts.metrics.errors.inc({ code: pe.code });
    return sendError(reply, pe, opts.retryAfterSeconds);
  };
  app.setNotFoundHandler(notFound);
  // No route for a request with a body: answered before the body is parsed (fastify parses it
  // first for the not-found handler too, up to the body limit, only for it to be discarded). The
  // unread body is then settled as for every early answer (request-decoding.ts's onSend,
  // early-answer.ts): a small one read and the connection kept, a large or chunked one answered
  // with Connection: close and the connection closed lingering. Callback style, and `done` is not
  // called once answered: fastify would go on to parse the body.
  app.addHook('preParsing', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: never) => void) => {
    if (!request.is404 || !hasBody(request.raw)) return done(null);
    notFound(request, reply);
  });
});
