/**
 * The /v1 routes of SPEC section 6: catalog, session info, page, follow,
 * create, append. Registered inside the authenticated context.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PagerError } from '../../core/errors.js';
import { MAX_NESTING_DEPTH, nestingMessage, valueNestingExceeds } from '../../core/nesting.js';
import type { PageParams, SessionEvent } from '../../core/types.js';
import { assertSessionId } from '../paths.js';
import type { Store } from '../store-types.js';
import type { Admission, Release } from './admission.js';
import type { FollowHub } from './follow.js';
import { parseLastEventId } from './follow.js';
import type { LoadShedReason, ServerMetrics } from './metrics.js';
import type { ResolvedOptions } from './options.js';
import { checkLoop, checkPool, holdShed, type OverloadPolicy, type ShedPacer } from './overload.js';
import { answerPage, type PageAnswerContext } from './page-answer.js';
import { addVary, setPageCaching } from './page-caching.js';
import { negotiate, PageEncoder } from './page-encoding.js';
import { isWarmupRequest } from './route-warmup.js';
import { APPEND_SCHEMA, CATALOG_SCHEMA, CREATE_SCHEMA, FOLLOW_SCHEMA, INFO_SCHEMA, PAGE_SCHEMA } from './schemas.js';

export interface RoutesOptions {
  store: Store;
  opts: ResolvedOptions;
  metrics: ServerMetrics;
  policy: OverloadPolicy;
  hub: FollowHub;
  /** null: every page admitted. */
  admission: Admission | null;
  /** Holds of shed page requests, per connection (shared with fast-shed.ts). */
  pacer: ShedPacer;
}

function sessionId(request: FastifyRequest): string {
  const id = assertSessionId((request.params as { id?: unknown }).id);
  if (request.pager) request.pager.sessionId = id;
  return id;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The page parameters of a query the route schema has validated (numbers, in range). */
function pageParams(q: Record<string, unknown>): PageParams {
  const out: PageParams = {};
  for (const k of ['throughSeq', 'beforeSeq', 'maxMessages', 'maxBytes'] as const) if (typeof q[k] === 'number') out[k] = q[k];
  return out;
}

export async function routes(app: FastifyInstance, o: RoutesOptions): Promise<void> {
  const encoder = new PageEncoder(o.opts.compression);
  const pages: PageAnswerContext = { store: o.store, metrics: o.metrics, encoder, compression: o.opts.compression };
  const { store, metrics, policy, hub } = o;
  // Shedding runs before the body is read: an overloaded server does not parse 16 MiB first.
  // A shed answer leaves no sooner than shedDelayMs after the request came (overload.ts: holdShed).
  const hold = (fn: () => void | Promise<void>) => holdShed(fn, o.opts.shedDelayMs);
  // A check that sheds is counted by its reason (load_shed_total) where its answer is given: the
  // admission hook's synchronous look (admitTo) only probes, and sheds through shedPool after.
  const counted = (check: (p: OverloadPolicy) => void, reason: LoadShedReason) => {
    try {
      check(policy);
    } catch (err) {
      metrics.loadShed.inc({ reason });
      throw err;
    }
  };
  const shedLoop = async () => hold(() => counted(checkLoop, 'event_loop_lag'));
  const shedPool = () => {
    counted(checkLoop, 'event_loop_lag');
    counted(checkPool, 'worker_queue');
  };
  // A page request shed again and again on one connection is held longer each time (overload.ts: ShedPacer).
  const pacer = o.pacer;
  // Pages are admitted by what the server can finish; the slot is held until the response is done
  // (a follow's until its snapshot is written: the stream after it costs no page).
  const admitted = (request: FastifyRequest, reply: FastifyReply, release: Release) => {
    releases.set(request, release);
    // Released when the response is done (onResponse below), or the connection closed before.
    reply.raw.once('close', () => release());
  };
  // The common case (nothing to shed, a slot free) is taken synchronously, callback style: no
  // promise, no async frame, no signal (fastify makes the request's AbortSignal on first use).
  // Follows go through their own gate (admission.ts: follows), beside the page slots.
  const admitPage = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => admitTo(o.admission, request, reply, done);
  const admitFollow = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => admitTo(o.admission?.follows ?? null, request, reply, done);
  const admitTo = (admission: Admission | null, request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    if (admission !== null && !request.raw.destroyed) {
      let free = true;
      try {
        checkLoop(policy);
        checkPool(policy);
      } catch {
        free = false; // shed below, with its hold
      }
      const release = free ? admission.tryAcquire() : null;
      if (release !== null) {
        pacer.admitted(request.raw.socket);
        admitted(request, reply, release);
        return done();
      }
    }
    admitOrShed(admission, request, reply).then(() => done(), done);
  };
  const admitOrShed = async (admission: Admission | null, request: FastifyRequest, reply: FastifyReply) => {
    if (admission === null) return hold(shedPool);
    const conn = request.raw.socket;
    let release!: Release;
    // When the request came: a shed answer's hold (holdShed's) is counted from here.
    const at = performance.now();
    await holdShed(
      async () => {
        shedPool();
        // The request's signal: a client that leaves while queued leaves the queue.
        release = await admission.acquire(request.signal);
      },
      () => pacer.shed(conn, at),
    );
    pacer.admitted(conn);
    // The client left as its turn came: the slot goes to the next one, unused.
    if (request.raw.destroyed) {
      release(true);
      request.signal.throwIfAborted();
    }
    admitted(request, reply, release);
  };
  const releases = new WeakMap<FastifyRequest, Release>();
  const releasePage = (request: FastifyRequest) => releases.get(request)?.();
  const releaseHook = (request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
    releasePage(request);
    done();
  };

  // Params, query strings and bodies are validated by the route schemas (schemas.ts, validation.ts).
  // The catalog takes the page's coding path (zstd > gzip > br), not the other routes' (br, gzip only: response-compression.ts).
  app.get('/v1/sessions', { onRequest: shedLoop, compress: false, schema: CATALOG_SCHEMA }, async (request: FastifyRequest, reply: FastifyReply) => {
    // Serialized by the route's response schema, as fastify would; the bytes are then coded like a page's.
    const serialize = reply.getSerializationFunction('200', 'application/json');
    const payload = { sessions: await store.list() };
    const body = Buffer.from(serialize === undefined ? JSON.stringify(payload) : serialize(payload));
    addVary(reply, 'Accept-Encoding');
    reply.type('application/json; charset=utf-8');
    const encoding = body.length < o.opts.compression.threshold ? null : negotiate(request.headers['accept-encoding']);
    if (encoding === null) return reply.send(body);
    // On the page workers, as pages are (a store that cannot: here, in one piece).
    const compressed = store.encodeBody === undefined ? await encoder.encode(body, encoding) : await store.encodeBody(body, { encoding, levels: o.opts.compression });
    if (reply.sent) return reply;
    return reply.header('content-encoding', encoding).send(compressed);
  });

  app.get('/v1/sessions/:id', { onRequest: shedLoop, schema: INFO_SCHEMA }, async (request) => {
    return store.info(sessionId(request));
  });

  app.get('/v1/sessions/:id/page', { onRequest: admitPage, onResponse: releaseHook, handlerTimeout: o.opts.pageTimeoutMs, compress: false, schema: PAGE_SCHEMA }, async (request: FastifyRequest, reply: FastifyReply) => {
    const id = sessionId(request);
    // Ranges that depend on the session (throughSeq past the last committed seq) are checked by the store.
    const params = pageParams(request.query as Record<string, unknown>);
    const a = await answerPage(pages, {
      id,
      params,
      acceptEncoding: request.headers['accept-encoding'],
      ifNoneMatch: request.headers['if-none-match'],
      signal: request.signal,
      res: reply.raw,
      answered: () => reply.sent,
      counted: !isWarmupRequest(request),
    });
    if (a === null) return reply;
    setPageCaching(reply, a.etag, a.pinned);
    if (a.status === 304) return reply.code(304).send();
    const pb = a.pb;
    if (request.pager) request.pager.page = { fromSeq: pb.fromSeq, toSeq: pb.toSeq, events: pb.toSeq - pb.fromSeq, bytes: pb.body.length, frames: pb.frames };
    // The prepared body goes out as it is; never re-serialized.
    reply.type('application/json; charset=utf-8');
    if (a.encoding === null) return reply.send(a.body);
    return reply.header('content-encoding', a.encoding).send(a.body);
  });

  app.get('/v1/sessions/:id/follow', { onRequest: admitFollow, exposeHeadRoute: false, schema: FOLLOW_SCHEMA }, async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      const id = sessionId(request);
      const q = request.query as Record<string, unknown>;
      const maxMessages = typeof q.maxMessages === 'number' ? q.maxMessages : undefined;
      const lastEventId = parseLastEventId(request.headers['last-event-id'] ?? q.lastEventId);
      await hub.handle(request, reply, id, maxMessages, lastEventId);
    } finally {
      // The snapshot is written (or the follow failed): a hijacked reply runs no onResponse hook.
      releasePage(request);
    }
    return reply;
  });

  app.put('/v1/sessions/:id', { onRequest: shedLoop, schema: CREATE_SCHEMA }, async (request: FastifyRequest, reply: FastifyReply) => {
    const id = sessionId(request);
    const q = request.query as Record<string, unknown>;
    const format = q.format === 'jsonl' || q.format === 'binary' ? q.format : undefined;
    const header = request.body === undefined || request.body === null ? {} : request.body;
    if (!isObject(header)) throw new PagerError('invalid_request', 'body must be a session header record (a JSON object)');
    const entry = await store.create(id, header, format === undefined ? {} : { format });
    return reply.code(201).send(entry);
  });

  app.post('/v1/sessions/:id/events', { onRequest: shedLoop, schema: APPEND_SCHEMA }, async (request: FastifyRequest) => {
    const id = sessionId(request);
    const body = request.body;
    if (!isObject(body) || !('events' in body)) throw new PagerError('invalid_request', 'body must be {"events":[...]}');
    // The events are checked one by one (session-writer.ts); this bounds what else the body holds.
    if (valueNestingExceeds(body, MAX_NESTING_DEPTH + 2)) throw new PagerError('invalid_request', nestingMessage('request body', MAX_NESTING_DEPTH + 2));
    // Resolves only after the batch is durable (fsync). The writer checks every event (checkBatch), so the cast claims nothing unchecked.
    const r = await store.append(id, body.events as readonly SessionEvent[]);
    if (request.pager) request.pager.append = { fromSeq: r.fromSeq, toSeq: r.toSeq };
    metrics.appendedEvents.inc(r.toSeq - r.fromSeq);
    return { fromSeq: r.fromSeq, toSeq: r.toSeq, nextSeq: r.toSeq };
  });
}
