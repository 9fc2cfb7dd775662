/**
 * The HTTP service (SPEC section 6): `buildServer(store, opts)` returns a
 * fastify instance made of encapsulated plugins:
 *
 *   root      error handling, metrics/log hooks, URL-length limit, compression, /healthz
 *   └─ api    bearer auth, load shedding, /v1 routes, follow (SSE), /metrics, OpenAPI
 *
 * The app does not own the store: `shutdown(app, store)` closes the app
 * (stop accepting, end follow streams, finish in-flight pages and appends)
 * and then the store (its worker pool and writers).
 */
import { constants as zc } from 'node:zlib';
import compress from '@fastify/compress';
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { PagerError } from '../core/errors.js';
import type { Store } from '../store-types.js';
import { addAuth } from './auth.js';
import { errorsPlugin } from './errors.js';
import { FollowHub } from './follow.js';
import { ServerMetrics, metricsPlugin, metricsRoute } from './metrics.js';
import { openapiRoute } from './openapi.js';
import { resolveOptions, type ResolvedOptions, type ServerOptions } from './options.js';
import { LoadMonitor, type OverloadPolicy } from './overload.js';
import { routes } from './routes.js';

export type { ServerOptions } from './options.js';

/** What the server exposes of itself (tests, `serve`). */
export interface PagerServerState {
  options: ResolvedOptions;
  metrics: ServerMetrics;
  hub: FollowHub;
  monitor: LoadMonitor;
}

declare module 'fastify' {
  interface FastifyInstance {
    pagerState: PagerServerState;
  }
}

export function buildServer(store: Store, options: ServerOptions = {}): FastifyInstance {
  const o = resolveOptions(options);
  const app = Fastify({
    logger: o.logger,
    // One line per request, written by the metrics hooks, with session and page facts.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID().slice(0, 8),
    bodyLimit: o.bodyLimit,
    requestTimeout: o.requestTimeoutMs,
    keepAliveTimeout: o.keepAliveTimeoutMs,
    connectionTimeout: 0, // follow streams are long-lived; request and keep-alive timeouts bound the rest
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    routerOptions: { maxParamLength: 256 },
  });
  app.server.maxConnections = o.maxConnections;

  const monitor = new LoadMonitor(o.lagSampleMs);
  monitor.start();
  const metrics = new ServerMetrics(store, monitor);
  const hub = new FollowHub(store, o.follow, metrics);
  const policy: OverloadPolicy = { monitor, store, maxLagMs: o.maxEventLoopLagMs, maxPoolQueue: o.maxPoolQueue, retryAfterSeconds: o.retryAfterSeconds };
  app.decorate('pagerState', { options: o, metrics, hub, monitor });

  app.register(errorsPlugin, { metrics, retryAfterSeconds: o.retryAfterSeconds });
  app.register(metricsPlugin, { metrics });
  app.addHook('onRequest', async (request: FastifyRequest) => {
    if ((request.raw.url ?? '').length > o.maxUrlLength) {
      throw new PagerError('invalid_request', `request target is longer than ${o.maxUrlLength} characters`);
    }
  });
  let closing = false;
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Responses finishing during shutdown close their connection, so the
    // server does not wait out keep-alive timeouts before it can stop.
    if (closing) reply.header('connection', 'close');
  });
  app.register(compress, {
    global: true,
    threshold: o.compression.threshold,
    encodings: ['br', 'gzip'],
    brotliOptions: { params: { [zc.BROTLI_PARAM_QUALITY]: o.compression.brotliQuality, [zc.BROTLI_PARAM_MODE]: zc.BROTLI_MODE_TEXT } },
    zlibOptions: { level: o.compression.gzipLevel },
  });

  app.get('/healthz', async () => ({ status: 'ok' }));

  // Everything else: authenticated, encapsulated.
  app.register(async (api) => {
    addAuth(api, o.token);
    await api.register(routes, { store, opts: o, metrics, policy, hub });
    await api.register(metricsRoute, { metrics });
    await api.register(openapiRoute);
  });

  app.addHook('preClose', async () => {
    closing = true;
    await hub.closeAll();
  });
  app.addHook('onClose', async () => {
    monitor.stop();
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
