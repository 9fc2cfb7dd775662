/**
 * Options of the HTTP service and their defaults. Every limit the service
 * enforces is here, so `serve`, the tests and the load test tune the same
 * knobs.
 */
import type { BuildValidator } from './route-validators.js';
import type { FastifyServerOptions } from 'fastify';
import { Readiness } from './readiness.js';

export interface FollowOptions {
  /** Comment line every this many ms so proxies and clients see a live stream (default 15 s). */
  heartbeatMs?: number;
  /**
   * Bytes a follower may have queued (socket buffer plus live events not yet
   * written) before it is dropped with a final `error` event (default 4 MiB).
   */
  maxBufferedBytes?: number;
  /** A follower whose socket has not drained for this long is dropped (default 60 s). */
  stallTimeoutMs?: number;
  /** Events read per catch-up step from the log (default 1000). */
  catchUpChunk?: number;
  /** After a drop or shutdown, destroy the socket if the client has not read the end within this (default 5 s). */
  endGraceMs?: number;
  /** Concurrent follow streams; more are answered `overloaded` (default 512). */
  maxStreams?: number;
  /** `retry:` hint sent to EventSource clients, ms (default 2000). */
  retryMs?: number;
}

export interface ServerOptions {
  /** Bearer token; when absent or empty, auth is off (loopback only; `serve` enforces that). */
  token?: string | null;
  /** fastify logger option: false (default) or pino options. */
  logger?: FastifyServerOptions['logger'];
  /** Largest request body, bytes, after decompression (default 16 MiB). */
  bodyLimit?: number;
  /** Longest request target (path plus query), characters (default 4096). */
  maxUrlLength?: number;
  /** Connections the listening server accepts at once (default 1024). */
  maxConnections?: number;
  /** Time to receive a whole request, ms (default 30 s). */
  requestTimeoutMs?: number;
  /** Idle keep-alive connections are closed after this, ms (default 5 s). */
  keepAliveTimeoutMs?: number;
  /** A page not answered within this is abandoned with `overloaded` (default 30 s). */
  pageTimeoutMs?: number;
  /**
   * Shed page and follow requests with `overloaded` while the store's worker
   * queue holds at least this many tasks (default 32 per worker thread).
   */
  maxPoolQueue?: number;
  /** Shed requests while the event loop's own lag (the lateness its own work accounts for) has exceeded this at two samples in a row, ms (default 500; 0 disables; overload.ts, LoadMonitor). */
  maxEventLoopLagMs?: number;
  /** How often the event-loop lag is sampled, ms (default 100). */
  lagSampleMs?: number;
  /**
   * New follows are shed once the event loop has not blocked for I/O for this
   * long, ms, with a probability rising to 1 at `followShedToMs` (default 2;
   * 0 disables; saturation.ts).
   */
  followShedFromMs?: number;
  /** Where every new follow is shed, ms (default 6; at least followShedFromMs). */
  followShedToMs?: number;
  /** And only while the loop was busy at least this share of the last ~200 ms, or the streak saw 192 requests (default 0.8). */
  followShedUtilization?: number;
  /** A follow shed so is answered after this, ms, times a random 0.5-1.5 (default 250). */
  followShedHoldMs?: number;
  /** Retry-After on `overloaded`, seconds (default 1). */
  retryAfterSeconds?: number;
  /**
   * A request shed by admission or load shedding is answered no sooner than
   * this after it arrived, ms (default 500; 0: at once): clients that ignore
   * Retry-After then cannot make the server spend itself on 503s.
   */
  shedDelayMs?: number;
  /**
   * A page request shed again on the same connection is held twice as long
   * as the last one, up to this, ms (default 4000); admitted, it starts over.
   */
  maxShedDelayMs?: number;
  /**
   * Admission of page requests (admission.ts): at most `maxInFlight` at once
   * (default IN_FLIGHT_PER_THREAD per worker thread), the others wait at most `queueFactor`
   * (default QUEUE_FACTOR) times the smoothed in-flight time, within [minQueueMs,
   * maxQueueMs] (default 20 ms, 2 s), `maxQueue` (default 1024) at most;
   * past that `overloaded`. `false` admits every page (the old behaviour,
   * for comparison runs only).
   */
  admission?: false | { maxInFlight?: number; queueFactor?: number; minQueueMs?: number; maxQueueMs?: number; maxQueue?: number; maxFollowsInFlight?: number; followQueueFactor?: number };
  compression?: {
    /** Responses smaller than this are sent as they are (default 1024 bytes). */
    threshold?: number;
    /** Brotli quality, 0..11 (default 4: dynamic responses, not static assets). */
    brotliQuality?: number;
    /** gzip level, 1..9 (default 6). */
    gzipLevel?: number;
    /** zstd level for page and catalog bodies up to 256 KiB, 1..19 (default 3: page-coding.ts DEFAULT_ZSTD_LEVEL; larger bodies step down). */
    zstdLevel?: number;
  };
  follow?: FollowOptions;
  /** CORS: allowed origin(s), comma-separated, or `*`; null or absent: CORS off (default). */
  corsOrigin?: string | null;
  /** What /readyz and /healthz report (default: ready at once; `serve` passes one that is warming up). */
  readiness?: Readiness;
  /**
   * The server the app takes its requests from, already listening (fastify's
   * `serverFactory`; `serve` listens before it builds the app: early-listen.ts).
   * The caller then closes that server; `app.listen()` is not used.
   */
  serverFactory?: FastifyServerOptions['serverFactory'];
  /** How route schemas become validators (default: the build's precompiled ones, else ajv's: route-validators.ts); the build's script records them through it. */
  buildValidator?: BuildValidator;
}

export interface ResolvedFollowOptions extends Required<FollowOptions> {}

export interface ResolvedOptions {
  token: string | null;
  logger: FastifyServerOptions['logger'];
  bodyLimit: number;
  maxUrlLength: number;
  maxConnections: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  pageTimeoutMs: number;
  maxPoolQueue: number | undefined;
  maxEventLoopLagMs: number;
  lagSampleMs: number;
  followShedFromMs: number;
  followShedToMs: number;
  followShedUtilization: number;
  followShedHoldMs: number;
  retryAfterSeconds: number;
  shedDelayMs: number;
  maxShedDelayMs: number;
  // zstdLevel undefined: page-coding.ts's DEFAULT_ZSTD_LEVEL (levelFor), not imported here: it would load the zstd binding before the port is bound.
  compression: { threshold: number; brotliQuality: number; gzipLevel: number; zstdLevel: number | undefined };
  /** null: admission off. maxInFlight null: IN_FLIGHT_PER_THREAD per worker thread (known once the store is). */
  admission: null | { maxInFlight: number | null; queueFactor: number; minQueueMs: number; maxQueueMs: number; maxQueue: number; maxFollowsInFlight: number | null; followQueueFactor: number };
  follow: ResolvedFollowOptions;
  readiness: Readiness;
  corsOrigin: string | null;
  serverFactory: FastifyServerOptions['serverFactory'] | undefined;
  buildValidator: BuildValidator | undefined;
}

/**
 * Node's own settings that make `requestTimeoutMs` hold, for every server we
 * create (fastify's and the early listener's): node checks the timeout only
 * every `connectionsCheckingInterval` (30 s by default, as long as our whole
 * timeout), so a tenth of it, and a request is cut within 1.1x of the
 * timeout; and with a headers timeout longer than the request timeout
 * (node's 60 s default against our 30 s) node 20 never times out a request
 * whose head came but whose body stalls, so it is held at the request timeout.
 */
export function nodeTimeouts(requestTimeoutMs: number): { connectionsCheckingInterval: number; headersTimeout: number } {
  return { connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.round(requestTimeoutMs / 10))), headersTimeout: Math.min(60_000, requestTimeoutMs) };
}

/**
 * Default admission sizing (docs/decisions.md, "Admission sized for 16
 * connections" and "The gate's size, measured side by side: kept at 4 a
 * worker thread"). The gate holds maxInFlight x (1 + queueFactor / 2) page
 * requests in steady state (one joins the queue while its expected wait,
 * its place over maxInFlight in-flight times, is within half the bound of
 * queueFactor in-flight times), and past that an admitted page's latency
 * stays about (1 + queueFactor / 2) in-flight times whatever the offered
 * load. 2 per thread with 0.5 held ~6 on two workers, so 16 connections were
 * shed; 4 per thread with 4 hold 24. 8 per thread with 2 (16 slots, holding
 * 32: every page of 16 connections in flight, the main thread 12-20% less a
 * page, issue 15's typical row 3.0-3.2x the peer) cost attaches past
 * capacity 19% of their snapshots and twice the p99 while follow snapshots
 * shared the page slots; with their own gate (FOLLOW_IN_FLIGHT_PER_THREAD
 * below) attach at 256 measured no worse than the shared 4-a-thread gate
 * (docs/benchmarks.md, proof third round of the fourteenth session).
 */
export const IN_FLIGHT_PER_THREAD = 8;
export const QUEUE_FACTOR = 2;
/**
 * Follow snapshots' own gate (admission.ts: follows): the size and queue factor the shared gate
 * had (4 a worker thread, factor 4), so attaches keep what they had while pages take 16 slots.
 */
export const FOLLOW_IN_FLIGHT_PER_THREAD = 4;
export const FOLLOW_QUEUE_FACTOR = 4;

export function resolveOptions(o: ServerOptions = {}): ResolvedOptions {
  const f = o.follow ?? {};
  const c = o.compression ?? {};
  return {
    token: o.token ? o.token : null,
    logger: o.logger ?? false,
    bodyLimit: o.bodyLimit ?? 16 * 1024 * 1024,
    maxUrlLength: o.maxUrlLength ?? 4096,
    maxConnections: o.maxConnections ?? 1024,
    requestTimeoutMs: o.requestTimeoutMs ?? 30_000,
    keepAliveTimeoutMs: o.keepAliveTimeoutMs ?? 5_000,
    pageTimeoutMs: o.pageTimeoutMs ?? 30_000,
    maxPoolQueue: o.maxPoolQueue,
    maxEventLoopLagMs: o.maxEventLoopLagMs ?? 500,
    lagSampleMs: o.lagSampleMs ?? 100,
    followShedFromMs: o.followShedFromMs ?? 2,
    followShedToMs: Math.max(o.followShedFromMs ?? 2, o.followShedToMs ?? 6),
    followShedUtilization: o.followShedUtilization ?? 0.8,
    followShedHoldMs: o.followShedHoldMs ?? 250,
    retryAfterSeconds: o.retryAfterSeconds ?? 1,
    shedDelayMs: o.shedDelayMs ?? 500,
    maxShedDelayMs: o.maxShedDelayMs ?? 4_000,
    admission:
      o.admission === false
        ? null
        : {
            maxInFlight: o.admission?.maxInFlight ?? null,
            queueFactor: o.admission?.queueFactor ?? QUEUE_FACTOR,
            minQueueMs: o.admission?.minQueueMs ?? 20,
            maxQueueMs: o.admission?.maxQueueMs ?? 2_000,
            maxQueue: o.admission?.maxQueue ?? 1024,
            maxFollowsInFlight: o.admission?.maxFollowsInFlight ?? null,
            followQueueFactor: o.admission?.followQueueFactor ?? FOLLOW_QUEUE_FACTOR,
          },
    compression: { threshold: c.threshold ?? 1024, brotliQuality: c.brotliQuality ?? 4, gzipLevel: c.gzipLevel ?? 6, zstdLevel: c.zstdLevel },
    follow: {
      heartbeatMs: f.heartbeatMs ?? 15_000,
      maxBufferedBytes: f.maxBufferedBytes ?? 4 * 1024 * 1024,
      stallTimeoutMs: f.stallTimeoutMs ?? 60_000,
      catchUpChunk: f.catchUpChunk ?? 1000,
      endGraceMs: f.endGraceMs ?? 5_000,
      maxStreams: f.maxStreams ?? 512,
      retryMs: f.retryMs ?? 2_000,
    },
    readiness: o.readiness ?? new Readiness(true),
    corsOrigin: o.corsOrigin ? o.corsOrigin : null,
    serverFactory: o.serverFactory,
    buildValidator: o.buildValidator,
  };
}
