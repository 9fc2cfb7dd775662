/**
 * The HTTP service (SPEC section 6): `buildServer(store, opts)` returns a
 * fastify instance made of encapsulated plugins:
 *
 *   root      error handling, framework errors, request ids, validation, request
 *             decoding, metrics/log hooks, URL-length limit, compression,
 *             OpenAPI (generated from the route schemas), /livez, /readyz,
 *             /healthz (readiness.ts), /v1/openapi.json
 *   └─ api    bearer auth, page admission (admission.ts), load shedding, /v1 routes, follow (SSE), /metrics
 *
 * In front of fastify's request handler, page and follow requests that
 * admission would shed at once are answered without it (fast-shed.ts), and
 * so are page requests the page route would answer from its common path
 * (fast-page.ts, with the route's own answer: page-answer.ts).
 *
 * The app does not own the store: `shutdown(app, store)` closes the app
 * (stop accepting, end follow streams, finish in-flight pages and appends)
 * and then the store (its worker pool and writers).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants as zc } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { requireCjs } from './cjs.js';
import { PagerError } from '../../core/errors.js';
import type { Store } from '../store-types.js';
import { ActiveClients, CLIENT_IDLE_MS } from './active-clients.js';
import { Admission } from './admission.js';
import { addAuth, tokenChecker } from './auth.js';
import { registerCors } from './cors.js';
import { errorsPlugin } from './errors.js';
import { fastPager } from './fast-page.js';
import { fastShedder, installFastShed } from './fast-shed.js';
import { KEEP_ALIVE_DRAIN_BYTES } from './early-answer.js';
import { clientErrorHandler, frameworkErrors, refuseConnect } from './framework-errors.js';
import { addRequestDecoding } from './request-decoding.js';
import { genReqId, REQUEST_ID_HEADER } from './request-id.js';
import { addResponseCompression } from './response-compression.js';
import { RouteTable } from './route-table.js';
import { SHARED_SCHEMAS } from './schemas.js';
import { addValidation, AJV_OPTIONS } from './validation.js';
import { precompiledValidators } from './route-validators.js';
import { FollowHub } from './follow.js';
import { ServerMetrics, countConnections, metricsPlugin, metricsRoute } from './metrics.js';
import { ConnectionLimiter, connectionLimiterOf } from './connection-limit.js';
import { PageEncoder } from './page-encoding.js';
import { addOpenApi, openapiRoute } from './openapi.js';
import { FOLLOW_IN_FLIGHT_PER_THREAD, IN_FLIGHT_PER_THREAD, nodeTimeouts, resolveOptions, type ResolvedOptions, type ServerOptions } from './options.js';
import { LoadMonitor, ShedPacer, type OverloadPolicy } from './overload.js';
import { LoopStreak } from './saturation.js';
import { readinessRoutes } from './readiness.js';
import { routes } from './routes.js';

// By require(), not import (cjs.ts says why).
const { default: Fastify, LogController } = requireCjs('fastify') as typeof import('fastify');

export type { ServerOptions } from './options.js';
export { warmPageRoute } from './route-warmup.js';

/** What the server exposes of itself (tests, `serve`). */
export interface PagerServerState {
  options: ResolvedOptions;
  metrics: ServerMetrics;
  hub: FollowHub;
  monitor: LoadMonitor;
  admission: Admission | null;
  /** Every route the app holds (405 + Allow, the OpenAPI test). */
  routes: RouteTable;
}

declare module 'fastify' {
  interface FastifyInstance {
    pagerState: PagerServerState;
  }
}

export function buildServer(store: Store, options: ServerOptions = {}): FastifyInstance {
  const o = resolveOptions(options);
  // An answer given with the request's body unread: a body up to 256 KiB is read and discarded
  // first and the connection kept; any other is answered with Connection: close and the
  // connection closed lingering: up to 10 s and 4 body limits (64 MiB by default) of what the
  // client still sends are read and discarded, so that a client writing its whole body before
  // reading reads the answer, and none can make the server read more (early-answer.ts,
  // docs/decisions.md).
  const earlyAnswers = { keepAliveDrain: KEEP_ALIVE_DRAIN_BYTES, linger: { bytes: Math.max(64 * 1024 * 1024, 4 * o.bodyLimit), ms: 10_000 } };
  const app = Fastify({
    logger: o.logger,
    // One line per request, written by the metrics hooks, with session and page facts.
    logController: new LogController({ disableRequestLogging: true }),
    // The client's x-request-id when it is a plain token, else a fresh UUID (request-id.ts).
    requestIdHeader: false,
    genReqId,
    // Answers given before a route runs, in the SPEC's error shape (framework-errors.ts).
    clientErrorHandler: clientErrorHandler(o.maxUrlLength),
    frameworkErrors: frameworkErrors(earlyAnswers),
    bodyLimit: o.bodyLimit,
    requestTimeout: o.requestTimeoutMs,
    // What makes the request timeout hold (options.ts); a serverFactory's server sets them itself.
    http: nodeTimeouts(o.requestTimeoutMs),
    keepAliveTimeout: o.keepAliveTimeoutMs,
    connectionTimeout: 0, // follow streams are long-lived; request and keep-alive timeouts bound the rest
    forceCloseConnections: 'idle',
    // Requests arriving while closing get `overloaded` from the hook below, in the SPEC's shape.
    return503OnClosing: false,
    // An over-long id is an invalid id (400, param named), not a router error; the URL limit bounds it.
    routerOptions: { maxParamLength: o.maxUrlLength },
    ajv: AJV_OPTIONS,
    // Validators compiled by the build, not ajv at start (route-validators.ts); replies are
    // serialized with JSON.stringify (validation.ts), so fast-json-stringify's compiler is not loaded either.
    schemaController: { compilersFactory: { buildValidator: o.buildValidator ?? precompiledValidators(), buildSerializer: () => () => (data: unknown) => JSON.stringify(data) } } as unknown as FastifyServerOptions['schemaController'],
    ...(o.serverFactory !== undefined ? { serverFactory: o.serverFactory } : {}),
  });
  addValidation(app);
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  addOpenApi(app);
  // The connection limit, kept by the server: past it a connection is answered 503 overloaded
  // and closed, not reset (connection-limit.ts). A server made by serve's early listener has
  // its limiter from the start (early-listen.ts).
  const connectionLimiter = connectionLimiterOf(app.server) ?? new ConnectionLimiter({ maxConnections: o.maxConnections, retryAfterSeconds: o.retryAfterSeconds });
  if (connectionLimiterOf(app.server) === undefined) connectionLimiter.install(app.server);
  // Node would answer these itself with an empty body: a missing Host (checked in a hook below),
  // an unknown Expect (ignored: RFC 9110 lets a server proceed), CONNECT (refused).
  (app.server as { requireHostHeader?: boolean }).requireHostHeader = false;
  app.server.on('checkExpectation', (req, res) => app.server.emit('request', req, res));
  refuseConnect(app.server);
  // Active clients, for the store: small slices are decoded on this thread only for a lone client
  // (small-slice-pool.ts). Counted from their requests, not from 'connection': serve's server
  // accepts connections before this app is built (early-listen.ts); an idle one stops counting.
  const clients = new ActiveClients(CLIENT_IDLE_MS);
  function requestClosed(this: ServerResponse): void {
    clients.ended(this.req.socket);
  }
  const seen = (req: IncomingMessage, res: ServerResponse) => {
    clients.started(req.socket);
    res.once('close', requestClosed);
  };
  app.server.on('request', seen);
  store.setClientCount?.(() => clients.count());
  const routeTable = new RouteTable();
  app.addHook('onRoute', (route) => routeTable.add(route.method, route.url ?? route.path));

  const monitor = new LoadMonitor(o.lagSampleMs);
  monitor.start();
  // The warm-up's own stalls are not load: shedding starts from a clean slate once ready.
  o.readiness.onReady(() => monitor.reset());
  // Started once ready: the warm-up keeps the loop busy, and that is not load (saturation.ts).
  const streak = new LoopStreak(o.followShedFromMs, o.followShedToMs, o.followShedUtilization);
  o.readiness.onReady(() => streak.start());
  const metrics = new ServerMetrics(store, monitor, o.readiness, () => admission);
  countConnections(metrics, connectionLimiter);
  const hub = new FollowHub(store, o.follow, metrics, o.compression);
  const threads = store.stats().pool.threads;
  const admission =
    o.admission === null ? null : new Admission({
          ...o.admission,
          maxInFlight: o.admission.maxInFlight ?? IN_FLIGHT_PER_THREAD * threads,
          maxFollowsInFlight: o.admission.maxFollowsInFlight ?? FOLLOW_IN_FLIGHT_PER_THREAD * threads,
          retryAfterSeconds: o.retryAfterSeconds,
        });
  const policy: OverloadPolicy = { monitor, store, maxLagMs: o.maxEventLoopLagMs, maxPoolQueue: o.maxPoolQueue, retryAfterSeconds: o.retryAfterSeconds, readiness: o.readiness };
  app.decorate('pagerState', { options: o, metrics, hub, monitor, admission, routes: routeTable });
  const pacer = new ShedPacer(o.shedDelayMs, Math.max(o.shedDelayMs, o.maxShedDelayMs), o.retryAfterSeconds * 1000);
  let closing = false;
  let ready = false;
  // What admission would shed at once is answered before fastify sees it (fast-shed.ts), and so
  // is a page request the route would answer from its common path (fast-page.ts); with CORS on,
  // both go through the framework, which adds its headers.
  if (admission !== null && o.corsOrigin === null) {
    const authorized = tokenChecker(o.token);
    const shed = fastShedder({ admission, pacer, authorized, maxUrlLength: o.maxUrlLength, retryAfterSeconds: o.retryAfterSeconds, metrics, closing: () => closing, streak, followHoldMs: o.followShedHoldMs });
    const page = fastPager({
      pages: { store, metrics, encoder: new PageEncoder(o.compression), compression: o.compression },
      admission,
      pacer,
      policy,
      authorized,
      maxUrlLength: o.maxUrlLength,
      pageTimeoutMs: o.pageTimeoutMs,
      retryAfterSeconds: o.retryAfterSeconds,
      metrics,
      log: app.log,
      ready: () => ready,
      closing: () => closing,
      clients,
    });
    installFastShed(app.server, (req, res) => shed(req, res) || page(req, res));
  }

  app.register(errorsPlugin, { metrics, retryAfterSeconds: o.retryAfterSeconds, routes: routeTable });
  app.register(metricsPlugin, { metrics });
  if (o.corsOrigin !== null) registerCors(app, o.corsOrigin);
  // Hooks every request runs are callback-style: no promise and no microtask turn each.
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    if (closing) return done(new PagerError('overloaded', 'the server is shutting down; retry shortly'));
    if ((request.raw.url ?? '').length > o.maxUrlLength) {
      return done(new PagerError('uri_too_long', `request target is longer than ${o.maxUrlLength} characters`));
    }
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      return done(new PagerError('invalid_request', 'an HTTP/1.1 request needs a Host header'));
    }
    done();
  });
  // Bodies are JSON; fastify's default text/plain parser would hand a string to the routes.
  app.removeContentTypeParser('text/plain');
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    // Responses finishing during shutdown close their connection, so the
    // server does not wait out keep-alive timeouts before it can stop.
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  // Bodies with a Content-Encoding, and answers given with the body unread (earlyAnswers above).
  addRequestDecoding(app, { bodyLimit: o.bodyLimit, drainLimit: o.bodyLimit, ...earlyAnswers });
  // Every route but those that code their own bodies (response-compression.ts).
  addResponseCompression(app, {
    threshold: o.compression.threshold,
    brotliOptions: { params: { [zc.BROTLI_PARAM_QUALITY]: o.compression.brotliQuality, [zc.BROTLI_PARAM_MODE]: zc.BROTLI_MODE_TEXT } },
    zlibOptions: { level: o.compression.gzipLevel },
  });

  // Routes go in registered plugins, not straight on the root: @fastify/swagger only sees
  // routes added after it loaded (the OpenAPI test fails on a route it misses).
  app.register(async (root) => readinessRoutes(root, o.readiness, o.retryAfterSeconds));
  app.register(openapiRoute);

  // Everything else: authenticated, encapsulated.
  app.register(async (api) => {
    addAuth(api, o.token);
    await api.register(routes, { store, opts: o, metrics, policy, hub, admission, pacer });
    await api.register(metricsRoute, { metrics });
  });

  // Compiling the route schemas stalls the event loop at start-up; that is no reason to shed
  // the first requests: forget the stall. (The OpenAPI document is built at its first request,
  // not here: openapi.ts.)
  app.register(async (last) => {
    last.addHook('onReady', async () => {
      monitor.reset();
      ready = true;
    });
  });

  app.addHook('preClose', async () => {
    closing = true;
    await hub.closeAll();
  });
  app.addHook('onClose', async () => {
    monitor.stop();
    streak.stop();
  });
  return app;
}

/**
 * Graceful shutdown: stop accepting, end follow streams (each gets an `end`
 * event), let in-flight pages and appends finish, then close the store.
 */
export async function shutdown(app: FastifyInstance, store: Store): Promise<void> {
  try {
    await app.close();
  } finally {
    await store.close();
  }
}
