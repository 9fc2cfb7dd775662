/**
 * The /v1 routes of SPEC section 6: catalog, session info, page, follow,
 * create, append. Registered inside the authenticated context.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PagerError } from '../core/errors.js';
import { MAX_NESTING_DEPTH, nestingMessage, valueNestingExceeds } from '../core/nesting.js';
import { MAX_MAX_MESSAGES, parsePageQuery, resolvePageParams } from '../core/page-rule.js';
import { assertSessionId } from '../paths.js';
import type { Store } from '../store-types.js';
import type { Admission } from './admission.js';
import type { FollowHub } from './follow.js';
import { parseLastEventId } from './follow.js';
import type { ServerMetrics } from './metrics.js';
import type { ResolvedOptions } from './options.js';
import { checkLoop, checkPool, type OverloadPolicy } from './overload.js';
import { bodyDigest, etagFor, noneMatch, pageDigest, setPageCaching } from './page-caching.js';
import { negotiate, PageEncoder } from './page-encoding.js';

export interface RoutesOptions {
  store: Store;
  opts: ResolvedOptions;
  metrics: ServerMetrics;
  policy: OverloadPolicy;
  hub: FollowHub;
  /** null: every page admitted. */
  admission: Admission | null;
}

function sessionId(request: FastifyRequest): string {
  const id = assertSessionId((request.params as { id?: unknown }).id);
  if (request.pager) request.pager.sessionId = id;
  return id;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export async function routes(app: FastifyInstance, o: RoutesOptions): Promise<void> {
  const encoder = new PageEncoder(o.opts.compression);
  const { store, metrics, policy, hub } = o;
  // Shedding runs before the body is read: an overloaded server does not parse 16 MiB first.
  const shedLoop = async () => checkLoop(policy);
  const shedPool = async () => {
    checkLoop(policy);
    checkPool(policy);
  };
  // Pages are admitted by what the server can finish; the slot is held until the response is done.
  const admitPage = async (request: FastifyRequest, reply: FastifyReply) => {
    await shedPool();
    if (o.admission === null) return;
    const release = await o.admission.acquire();
    releases.set(request, release);
    // Released when the response is done (onResponse below), or the connection closed before.
    reply.raw.once('close', release);
    // The client left while it waited: free the slot for the next one at once.
    if (request.raw.destroyed) release();
  };
  const releases = new WeakMap<FastifyRequest, () => void>();
  const releasePage = async (request: FastifyRequest) => releases.get(request)?.();

  app.get('/v1/sessions', { onRequest: shedLoop }, async () => {
    return { sessions: await store.list() };
  });

  app.get('/v1/sessions/:id', { onRequest: shedLoop }, async (request) => {
    return store.info(sessionId(request));
  });

  app.get('/v1/sessions/:id/page', { onRequest: admitPage, onResponse: releasePage, handlerTimeout: o.opts.pageTimeoutMs, compress: false }, async (request: FastifyRequest, reply: FastifyReply) => {
    const id = sessionId(request);
    const params = parsePageQuery(request.query as Record<string, unknown>);
    // The coding depends on Accept-Encoding alone (not on the page's size): the tag is known before the page.
    const encoding = negotiate(request.headers['accept-encoding']);
    const pinned = params.throughSeq !== undefined;
    const version = store.pageVersion === undefined ? undefined : await store.pageVersion(id);
    if (version !== undefined && version.servable) {
      const etag = etagFor(pageDigest(id, version.incarnation, resolvePageParams(params, version.nextSeq - 1)), encoding);
      if (noneMatch(request.headers['if-none-match'], etag)) {
        // Not built, not read: the client's copy is this very representation.
        metrics.notModified.inc({ route: '/v1/sessions/:id/page' });
        setPageCaching(reply, etag, pinned);
        return reply.code(304).send();
      }
    }
    const pb = await store.pageBuffer(id, params, request.signal);
    if (reply.sent) return reply; // timed out or the client went away meanwhile
    const events = pb.toSeq - pb.fromSeq;
    if (request.pager) request.pager.page = { fromSeq: pb.fromSeq, toSeq: pb.toSeq, events, bytes: pb.body.length, frames: pb.frames };
    metrics.observePage('/v1/sessions/:id/page', pb);
    // The tag of what was built: an append since the check above moved an unpinned cut.
    const digest = version !== undefined ? pageDigest(id, version.incarnation, resolvePageParams(params, pb.throughSeq)) : bodyDigest(pb.body);
    const etag = etagFor(digest, encoding);
    if (version === undefined && noneMatch(request.headers['if-none-match'], etag)) {
      metrics.notModified.inc({ route: '/v1/sessions/:id/page' });
      setPageCaching(reply, etag, pinned);
      return reply.code(304).send();
    }
    setPageCaching(reply, etag, pinned);
    // The prepared body goes out as it is; never re-serialized. Compressed forms are
    // memoized per body, so a cached page is compressed once, not per request.
    reply.type('application/json; charset=utf-8');
    if (encoding === null) return reply.send(pb.body);
    const compressed = await encoder.encode(pb.body, encoding);
    if (reply.sent) return reply;
    return reply.header('content-encoding', encoding).send(compressed);
  });

  app.get('/v1/sessions/:id/follow', { onRequest: shedPool, exposeHeadRoute: false }, async (request: FastifyRequest, reply: FastifyReply) => {
    const id = sessionId(request);
    const q = request.query as Record<string, unknown>;
    const { maxMessages } = parsePageQuery({ maxMessages: q.maxMessages });
    if (maxMessages !== undefined && (maxMessages < 1 || maxMessages > MAX_MAX_MESSAGES)) {
      throw new PagerError('invalid_request', `maxMessages must be an integer in [1, ${MAX_MAX_MESSAGES}]`, { param: 'maxMessages' });
    }
    const lastEventId = parseLastEventId(request.headers['last-event-id'] ?? q.lastEventId);
    await hub.handle(request, reply, id, maxMessages, lastEventId);
    return reply;
  });

  app.put('/v1/sessions/:id', { onRequest: shedLoop }, async (request: FastifyRequest, reply: FastifyReply) => {
    const id = sessionId(request);
    const q = request.query as Record<string, unknown>;
    let format: 'jsonl' | 'binary' | undefined;
    if (q.format !== undefined) {
      if (q.format !== 'jsonl' && q.format !== 'binary') throw new PagerError('invalid_request', 'format must be "jsonl" or "binary"', { param: 'format' });
      format = q.format;
    }
    const header = request.body === undefined || request.body === null ? {} : request.body;
    if (!isObject(header)) throw new PagerError('invalid_request', 'body must be a session header record (a JSON object)');
    const entry = await store.create(id, header, format === undefined ? {} : { format });
    return reply.code(201).send(entry);
  });

  app.post('/v1/sessions/:id/events', { onRequest: shedLoop }, async (request: FastifyRequest) => {
    const id = sessionId(request);
    const body = request.body;
    if (!isObject(body) || !('events' in body)) throw new PagerError('invalid_request', 'body must be {"events":[...]}');
    // The events are checked one by one (session-writer.ts); this bounds what else the body holds.
    if (valueNestingExceeds(body, MAX_NESTING_DEPTH + 2)) throw new PagerError('invalid_request', nestingMessage('request body', MAX_NESTING_DEPTH + 2));
    // Resolves only after the batch is durable (fsync).
    const r = await store.append(id, body.events);
    if (request.pager) request.pager.append = { fromSeq: r.fromSeq, toSeq: r.toSeq };
    metrics.appendedEvents.inc(r.toSeq - r.fromSeq);
    return { fromSeq: r.fromSeq, toSeq: r.toSeq, nextSeq: r.toSeq };
  });
}
