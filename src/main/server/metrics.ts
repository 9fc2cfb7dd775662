/**
 * Prometheus metrics on a registry of the server's own (never prom-client's
 * global one, so several servers in one process, e.g. tests, do not mix).
 * Request latency by route, bytes out, pages served and their sizes, errors
 * by code, the store's pool and cache, follow streams, readiness, and
 * prom-client's default process_* and nodejs_* metrics. The text passes
 * `promtool check metrics` (test/metrics-promtool.test.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectDefaultMetrics, prom } from './prom.js';
import type { PageBuffer, Store } from '../store-types.js';
import type { LoadMonitor } from './overload.js';
import type { Readiness } from './readiness.js';
import type { Admission } from './admission.js';
import type { ConnectionLimitCounts, ConnectionLimiter } from './connection-limit.js';
import { globalPlugin } from './plugin.js';
import { heapStats } from '../heap-release.js';
import { isWarmupRequest } from './route-warmup.js';
import { lastAnswered } from './shape-keepers.js';
import { counterSeries, histogramSeries, type CounterSeries, type SeriesObserver } from './prom-series.js';

const P = 'session_pager_';
/**
 * Why a request was answered `overloaded` by load shedding rather than by an admission gate (those
 * count their own: admission_shed_total, follow_shed_total): the event loop's sustained lag, the
 * worker queue past its bound (overload.ts), a new follow while the loop had not waited for I/O
 * for too long (saturation.ts), the follow streams at their limit (follow.ts), a connection past the
 * server's connection limit (connection-limit.ts: answered before any request is parsed).
 */
export const LOAD_SHED_REASONS = ['event_loop_lag', 'worker_queue', 'follow_loop_busy', 'follow_streams', 'connections'] as const;
export type LoadShedReason = (typeof LOAD_SHED_REASONS)[number];
const PHASES = ['plan', 'read', 'decode', 'pool', 'assemble', 'total', 'code'] as const;
type Phase = (typeof PHASES)[number];

export class ServerMetrics {
  readonly registry = new prom.Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  readonly bytesOut: Counter<'route'>;
  readonly pagesServed: Counter<'route'>;
  readonly pageEvents: Histogram;
  readonly pageBytes: Histogram;
  readonly pagePhase: Histogram<'phase'>;
  readonly errors: Counter<'code'>;
  readonly followStreams: Gauge;
  readonly followEvents: Counter;
  readonly followDropped: Counter<'reason'>;
  readonly followRereads: Counter;
  readonly appendedEvents: Counter;
  readonly aborted: Counter<'route'>;
  readonly notModified: Counter<'route'>;
  /** Requests shed by load shedding, not by an admission gate (LOAD_SHED_REASONS). */
  readonly loadShed: Counter<'reason'>;
  /** The connection limit's counts (connection-limit.ts), once the server's limiter is known. */
  connectionCounts: ConnectionLimitCounts | null = null;
  /** pageEvents' and pageBytes' one series each, bound once (prom-series.ts). */
  private readonly eventsSeries: SeriesObserver;
  private readonly bytesSeries: SeriesObserver;
  /** pagePhase's series, one a phase, bound once (prom-series.ts: a page observes 6 or 7 of them). */
  private readonly phases: Record<Phase, SeriesObserver>;
  /** httpDuration's GET series by route and status, bound as first used (the direct page path's). */
  private readonly getDurations = new Map<string, Map<number, SeriesObserver>>();
  /** pagesServed's and bytesOut's series by route, bound as first used (prom-series.ts counterSeries). */
  private readonly servedSeries = new Map<string, CounterSeries>();
  private readonly bytesOutSeries = new Map<string, CounterSeries>();

  /** bytesOut's series of `route` (bound once: the direct page path counts every answer's bytes). */
  bytesOutOf(route: string): CounterSeries {
    let series = this.bytesOutSeries.get(route);
    if (series === undefined) this.bytesOutSeries.set(route, (series = counterSeries(this.bytesOut, { route })));
    return series;
  }

  /** httpDuration's series of GET answers on `route` with `status` (bound once: prom-series.ts). */
  getDuration(route: string, status: number): SeriesObserver {
    let byStatus = this.getDurations.get(route);
    if (byStatus === undefined) this.getDurations.set(route, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (series === undefined) byStatus.set(status, (series = histogramSeries(this.httpDuration, { method: 'GET', route, status_code: String(status) })));
    return series;
  }

  /** A page answered on `route`: count it, its size and, when it was built for this request, its phases. */
  observePage(route: string, pb: PageBuffer): void {
    let served = this.servedSeries.get(route);
    if (served === undefined) this.servedSeries.set(route, (served = counterSeries(this.pagesServed, { route })));
    served.inc();
    this.eventsSeries.observe(pb.toSeq - pb.fromSeq);
    this.bytesSeries.observe(pb.body.length);
    const t = pb.timing;
    if (t === undefined) return;
    const p = this.phases;
    p.plan.observe(t.plan / 1000);
    p.read.observe(t.read / 1000);
    p.decode.observe(t.decode / 1000);
    p.pool.observe(t.pool / 1000);
    p.assemble.observe(t.assemble / 1000);
    p.total.observe(t.total / 1000);
    if (t.code !== undefined) p.code.observe(t.code / 1000);
  }

  constructor(store: Store, monitor: LoadMonitor, readiness?: Readiness, admission: () => Admission | null = () => null) {
    const registers = [this.registry];
    // prom-client's process and Node.js metrics under their standard names (process_*, nodejs_*),
    // so stock dashboards work; less the three gauges it names *_total, which are not counters
    // (promtool refuses them; nodejs_active_handles etc. carry the same numbers by type).
    // (prom.ts: loaded without prom-client's index, which loads @opentelemetry/api for exemplars.)
    collectDefaultMetrics(this.registry);
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(name);
    this.httpDuration = new prom.Histogram({
      name: `${P}http_request_duration_seconds`,
      help: 'Request latency by route (follow streams: time to the snapshot)',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.bytesOut = new prom.Counter({ name: `${P}http_response_bytes_total`, help: 'Bytes written to clients (after compression, with headers)', labelNames: ['route'], registers });
    this.pagesServed = new prom.Counter({ name: `${P}pages_served_total`, help: 'Pages answered (page route and follow snapshots)', labelNames: ['route'], registers });
    this.pageEvents = new prom.Histogram({
      name: `${P}page_events`,
      help: 'Logical events per page served',
      buckets: [0, 10, 100, 1_000, 10_000, 100_000, 1_000_000],
      registers,
    });
    this.pageBytes = new prom.Histogram({
      name: `${P}page_body_bytes`,
      help: 'Uncompressed page body size',
      buckets: [1_024, 16_384, 131_072, 1_048_576, 8_388_608, 67_108_864],
      registers,
    });
    this.pagePhase = new prom.Histogram({
      name: `${P}page_phase_seconds`,
      help: 'Time per phase of pages built (not cache hits): plan, read and decode (slowest worker), code (output compression, slowest worker), pool (queue and messaging), assemble, total',
      labelNames: ['phase'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    });
    this.eventsSeries = histogramSeries(this.pageEvents, {});
    this.bytesSeries = histogramSeries(this.pageBytes, {});
    // Bound only: a series appears in /metrics with its first observation, as before.
    this.phases = Object.fromEntries(PHASES.map((phase) => [phase, histogramSeries(this.pagePhase, { phase })])) as Record<Phase, SeriesObserver>;
    this.errors = new prom.Counter({ name: `${P}errors_total`, help: 'Error responses by code', labelNames: ['code'], registers });
    this.followStreams = new prom.Gauge({ name: `${P}follow_streams`, help: 'Open follow (SSE) streams', registers });
    this.followEvents = new prom.Counter({ name: `${P}follow_events_sent_total`, help: 'Events written to follow streams', registers });
    this.followDropped = new prom.Counter({ name: `${P}follow_dropped_total`, help: 'Follow streams the server ended early', labelNames: ['reason'], registers });
    this.followRereads = new prom.Counter({
      name: `${P}follow_queue_overflows_total`,
      help: 'Live batches not held for a slow follower (re-read from the log when it catches up)',
      registers,
    });
    this.aborted = new prom.Counter({ name: `${P}http_aborted_total`, help: 'Requests whose client went away before the response was complete', labelNames: ['route'], registers });
    this.notModified = new prom.Counter({ name: `${P}not_modified_total`, help: 'Conditional requests answered 304 (If-None-Match) without building the page', labelNames: ['route'], registers });
    this.loadShed = new prom.Counter({
      name: `${P}load_shed_total`,
      help: 'Requests answered overloaded by load shedding, not by an admission gate, by reason: event_loop_lag, worker_queue, follow_loop_busy (a new follow while the event loop had not waited for I/O for too long), follow_streams, connections (a connection past the connection limit)',
      labelNames: ['reason'],
      registers,
    });
    // Every reason from the start, at 0: a rate over a series that appears with its first shed misses that shed.
    for (const reason of LOAD_SHED_REASONS) this.loadShed.inc({ reason }, 0);
    this.appendedEvents = new prom.Counter({ name: `${P}appended_events_total`, help: 'Events appended over HTTP (durable)', registers });

    // Store-side numbers are read when scraped.
    const stats = () => store.stats();
    new prom.Gauge({ name: `${P}pool_queue_size`, help: 'Page tasks waiting for a worker', registers, collect() { this.set(stats().pool.queueSize); } });
    new prom.Gauge({ name: `${P}pool_utilization`, help: 'Worker pool utilization (0..1)', registers, collect() { this.set(stats().pool.utilization); } });
    new prom.Gauge({ name: `${P}pool_threads`, help: 'Worker threads', registers, collect() { this.set(stats().pool.threads); } });
    new prom.Gauge({ name: `${P}pages_building_bytes`, help: 'Stored bytes of the pages being built now (bounded by the decode budget)', registers, collect() { this.set(stats().building.bytes); } });
    new prom.Gauge({ name: `${P}pages_waiting_for_budget`, help: 'Pages waiting for room in the decode budget before their slices are queued', registers, collect() { this.set(stats().building.waiting); } });
    // One series per live worker: a worker that died and was replaced shows as a new thread id.
    new prom.Gauge({
      name: `${P}pool_thread_info`,
      help: 'Live page worker threads (value 1), by pool slot and thread id',
      labelNames: ['slot', 'thread_id'],
      registers,
      collect() {
        this.reset();
        stats().pool.threadIds.forEach((id, i) => this.set({ slot: String(i), thread_id: String(id) }, 1));
      },
    });
    // Counts since start are counters (`_total`), read from the store when scraped.
    const counter = (name: string, help: string, read: () => number) =>
      new prom.Counter({
        name: `${P}${name}_total`,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    counter('pool_tasks_completed', 'Worker tasks completed', () => stats().pool.completed);
    counter('cache_hits', 'Session view cache hits', () => stats().cache.hits);
    counter('cache_misses', 'Session view cache misses', () => stats().cache.misses);
    counter('page_cache_hits', 'Pages served from the prepared-page cache', () => stats().cache.pageHits);
    counter('store_pages_served', 'Pages answered by the store (built or from its cache)', () => stats().pagesServed);
    // The process's malloc heaps (heap-release.ts): zero in a process that is not `serve`'s.
    counter('heap_trims', 'Times the process gave its freed malloc memory back to the system (after the warm-up, after quiet spells)', () => heapStats.trims);
    new prom.Gauge({ name: `${P}heap_mmap_threshold_bytes`, help: "glibc's mmap threshold as set once ready (0: not set by the server)", registers, collect() { this.set(heapStats.mmapThreshold); } });
    new prom.Gauge({ name: `${P}page_cache_bytes`, help: 'Bytes of prepared pages held for repeated requests', registers, collect() { this.set(stats().cache.pageBytes); } });
    /** One admission gate's series (admission.ts): occupancy, size, queue bound and sheds. */
    const gateSeries = (series: string, shed: string, what: 'page' | 'follow', gateName: string, gate: () => Admission | null): void => {
      const requests = `${what === 'page' ? 'Page' : 'Follow'} requests`;
      new prom.Gauge({ name: `${P}${series}_in_flight`, help: what === 'page' ? 'Page requests admitted and not yet answered' : 'Follow requests admitted and their snapshot not yet written', registers, collect() { this.set(gate()?.running ?? 0); } });
      new prom.Gauge({ name: `${P}${series}_queued`, help: `${requests} waiting for admission`, registers, collect() { this.set(gate()?.queued ?? 0); } });
      new prom.Gauge({ name: `${P}${series}_max_in_flight`, help: `${requests} admitted at once at most (${gateName}'s size; 0: admission off)`, registers, collect() { this.set(gate()?.maxInFlight ?? 0); } });
      new prom.Gauge({ name: `${P}${series}_queue_bound_seconds`, help: `Longest a ${what} request may wait for admission now`, registers, collect() { this.set((gate()?.boundMs ?? 0) / 1000); } });
      counter(shed, `${requests} answered overloaded by ${gateName} (queue full or waited too long)`, () => gate()?.shed ?? 0);
      counter(`${shed}_waited`, 'Of those, the ones shed after waiting out the queue bound (the rest: at once)', () => gate()?.shedWaited ?? 0);
    };
    gateSeries('admission', 'admission_shed', 'page', 'the page gate', admission);
    // Their rates over a run: mean slots held, and the share of the time the gate was dry (admission.ts).
    counter('admission_slot_seconds', 'Page slots held, integrated over time (seconds)', () => admission()?.slotSeconds ?? 0);
    counter('admission_dry_seconds', 'Time with a page slot free and no request waiting for it (seconds)', () => admission()?.drySeconds ?? 0);
    // Follow snapshots' own gate (admission.ts: follows), beside the page slots: its sheds are in
    // errors_total{code="overloaded"} but not in admission_shed_total, which counts the page gate's.
    gateSeries('follow_admission', 'follow_shed', 'follow', 'the follow gate', () => admission()?.follows ?? null);
    const connections = () => this.connectionCounts;
    new prom.Gauge({ name: `${P}connections_open`, help: 'Connections admitted by the connection limit and still open', registers, collect() { this.set(connections()?.open ?? 0); } });
    counter('connections_dropped', 'Connections closed unanswered past the connection limit\'s hard bound (more being answered 503 at once than it allows)', () => connections()?.dropped ?? 0);
    new prom.Gauge({ name: `${P}ready`, help: '1 once the warm-up is done (what /readyz says), else 0', registers, collect() { this.set(readiness === undefined || readiness.state === 'ready' ? 1 : 0); } });
    new prom.Gauge({ name: `${P}event_loop_lag_seconds`, help: 'Sustained event-loop lag that the server\'s own work accounts for (drives load shedding)', registers, collect() { this.set(monitor.lagMs / 1000); } });
  }
}

/**
 * Count the connection limit's sheds (load_shed_total{reason="connections"} and
 * errors_total{code="overloaded"}, as every other shed), the ones before the app existed too
 * (serve's listener limits connections from the start: early-listen.ts), and read its drops and
 * open connections when scraped.
 */
export function countConnections(metrics: ServerMetrics, limiter: ConnectionLimiter): void {
  metrics.connectionCounts = limiter;
  const shed = (n: number) => {
    metrics.loadShed.inc({ reason: 'connections' }, n);
    metrics.errors.inc({ code: 'overloaded' }, n);
  };
  if (limiter.shed > 0) shed(limiter.shed);
  limiter.onShed = () => shed(1);
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Per-request facts for logs and metrics. */
    pager: RequestFacts | null;
  }
}

export interface RequestFacts {
  sessionId?: string;
  page?: { fromSeq: number; toSeq: number; events: number; bytes: number; frames: number };
  append?: { fromSeq: number; toSeq: number };
  /** socket.bytesWritten when the request arrived. */
  bytes0: number;
  /** Set by streaming routes that account their own bytes. */
  streaming?: boolean;
}

function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? 'unmatched';
}

/** Request hooks for latency, bytes out and the request log line (root context). */
export const metricsPlugin = globalPlugin('session-pager-metrics', async (app: FastifyInstance, opts: { metrics: ServerMetrics }) => {
  const m = opts.metrics;
  app.decorateRequest('pager', null);
  // Callback-style hooks: every request runs them, and a promise each is not free.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    // The server's own warm-up requests (route-warmup.ts) are no traffic: request.pager stays null.
    if (isWarmupRequest(request)) return done();
    const facts: RequestFacts = { bytes0: request.raw.socket?.bytesWritten ?? 0 };
    request.pager = facts;
    // onResponse runs only for completed responses; log the ones the client cut short too.
    reply.raw.once('close', () => {
      if (reply.raw.writableFinished || facts.streaming) return;
      const route = routeOf(request);
      m.aborted.inc({ route });
      request.log.info(
        { method: request.method, url: request.url, sessionId: facts.sessionId, page: facts.page, append: facts.append, durationMs: Math.round(reply.elapsedTime * 100) / 100 },
        'request aborted by the client',
      );
    });
    done();
  });
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    // Kept until the next one for the hidden classes of its objects (shape-keepers.ts).
    lastAnswered.request = request;
    lastAnswered.reply = reply;
    if (isWarmupRequest(request)) return done();
    const facts = request.pager ?? { bytes0: 0 };
    const route = routeOf(request);
    const seconds = reply.elapsedTime / 1000;
    if (!facts.streaming) {
      m.httpDuration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, seconds);
      const sock = request.raw.socket as { bytesWritten?: number } | null | undefined;
      let out = typeof sock?.bytesWritten === 'number' ? sock.bytesWritten - facts.bytes0 : 0;
      if (out <= 0) out = Number(reply.getHeader('content-length') ?? 0) || 0;
      m.bytesOut.inc({ route }, out);
    }
    // Shed answers are counted (errors_total{code="overloaded"}), not logged one by one: a storm of them must not cost a log line each.
    const level = route === '/healthz' || route === '/livez' || route === '/readyz' || route === '/metrics' || reply.statusCode === 503 ? 'debug' : 'info';
    // Below the logger's level (benches run at warn; serve's default is info) the line's object is not built.
    // fast-page.ts writes the same line for the pages it answers: a change here goes there too.
    const log = request.log as { isLevelEnabled?: (l: string) => boolean };
    if (typeof log.isLevelEnabled === 'function' && !log.isLevelEnabled(level)) return done();
    request.log[level](
      {
        method: request.method,
        url: request.url,
        statusCode: reply.statusCode,
        sessionId: facts.sessionId,
        page: facts.page,
        append: facts.append,
        durationMs: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request completed',
    );
    done();
  });
});

/** GET /metrics (registered inside the authenticated context). */
export async function metricsRoute(app: FastifyInstance, opts: { metrics: ServerMetrics }): Promise<void> {
  app.get('/metrics', async (_request, reply) => {
    const text = await opts.metrics.registry.metrics();
    return reply.type(opts.metrics.registry.contentType).send(text);
  });
}
