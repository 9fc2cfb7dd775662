/**
 * Starting the server of `session-pager serve`, in the order that makes a
 * bad start fail fast and a good one visible at once:
 *
 *   1. listen, with a bare node:http server (server/early-listen.ts): a port
 *      clash fails here, in milliseconds, before anything heavy is loaded;
 *      /livez answers from now on, every other request is held;
 *   2. load the app and the store (its worker threads start in the
 *      background), build the app on that server; the held requests are
 *      served from here on;
 *   3. print the banner (stderr: stdout carries only the JSON log lines);
 *   4. warm up (demo corpus on first start, workers, the page path's JIT
 *      warm-up) while already serving; /readyz turns 200 when done.
 *
 * A token the user gave (flag or environment) is never printed; only one
 * the server made itself (the demo's) is.
 */
import type { FastifyInstance } from 'fastify';
import type { DemoSessionPlan } from '../demo.js';
import { EarlyListener } from '../server/early-listen.js';
import { resolveOptions, type ServerOptions } from '../server/options.js';
import { Readiness } from '../server/readiness.js';
import type { Store } from '../store-types.js';
import { warmUpFromEnv, type StoreOptions } from '../store/options.js';
import { checkGcEnv, markingOff } from './serve-gc.js';
import { heapReleaseFromEnv } from './serve-heap.js';
import { checkWarmUpSwitches, envNumber } from './env-values.js';
import type { PagePool } from '../page-pool.js';
import { CliError, Progress } from './common.js';
import { quoteInput } from '../../core/excerpt.js';
import { storageFromFlag } from './store-flag.js';
import { holdsBinaryLog } from '../store/binary-logs.js';
import { LocalBackend } from '../../storage/local/local-backend.js';

/** Where the token came from: only a token the server made (`demo`) may be printed. */
export type TokenSource = 'flag' | 'env' | 'demo' | null;

export interface ServeConfig {
  dataDir: string;
  /** `--store`: a remote store's URL (s3://bucket/prefix); absent: local files under dataDir. */
  store?: string;
  host: string;
  port: number;
  token: string | null;
  tokenSource: TokenSource;
  workers: number | undefined;
  demo: boolean;
  logLevel: string;
  /** Origin allowed by CORS (null: CORS off). */
  corsOrigin: string | null;
  /** Redis for follow across processes (null: none; store/redis-bus.ts). */
  redisUrl?: string | null;
  /** Page requests in flight at once (`--max-in-flight`); absent: the environment's, else IN_FLIGHT_PER_THREAD a worker thread. */
  maxInFlight?: number;
  /** Follow snapshots in flight at once, the follow gate (`--max-follows-in-flight`); absent: the environment's, else FOLLOW_IN_FLIGHT_PER_THREAD a worker thread. */
  maxFollowsInFlight?: number;
  /** Connections open at once (`--max-connections`); absent: the environment's, else 1024 (server/connection-limit.ts). */
  maxConnections?: number;
  /** The demo corpus to make (tests use a small one); default DEMO_PLAN. */
  demoPlan?: readonly DemoSessionPlan[];
}

export interface RunningServer {
  app: FastifyInstance;
  store: Store;
  url: string;
  token: string | null;
  /** Resolves when the warm-up is done (/readyz 200); rejects if it failed. */
  ready: Promise<void>;
  close(): Promise<void>;
}

function authHeader(token: string | null, source: TokenSource): string {
  if (token === null) return '';
  if (source === 'demo') return ` -H 'Authorization: Bearer ${token}'`;
  // The user's own token stays theirs: the lines show where to put it.
  return source === 'env' ? ` -H "Authorization: Bearer $SESSION_PAGER_TOKEN"` : ` -H 'Authorization: Bearer <your --token>'`;
}

function tokenLine(token: string | null, source: TokenSource): string {
  if (token === null) return 'auth: off (loopback only; set --token or SESSION_PAGER_TOKEN to require one)';
  if (source === 'demo') return `token: ${token}`;
  return `auth: bearer token from ${source === 'env' ? 'SESSION_PAGER_TOKEN' : '--token'} (not shown)`;
}

/**
 * Admission tuning from the environment, for operators and comparison runs
 * (loadtest/overload.mjs): SESSION_PAGER_ADMISSION=off admits every page (the
 * unbounded behaviour, with SESSION_PAGER_SHED_DELAY_MS=0 the one before
 * issue 16; `on`, the default, as unset), SESSION_PAGER_MAX_IN_FLIGHT=N,
 * SESSION_PAGER_MAX_FOLLOWS_IN_FLIGHT=N (also `serve`'s flags --max-in-flight,
 * --max-follows-in-flight), SESSION_PAGER_QUEUE_FACTOR=X, SESSION_PAGER_MIN_QUEUE_MS=N,
 * SESSION_PAGER_MAX_QUEUE_MS=N, SESSION_PAGER_MAX_QUEUE=N (0: no queue),
 * SESSION_PAGER_SHED_DELAY_MS=N and SESSION_PAGER_MAX_SHED_DELAY_MS=N tune it, and
 * SESSION_PAGER_MAX_EVENT_LOOP_LAG_MS=N (0: off) bounds the event-loop lag guard, and
 * SESSION_PAGER_MAX_CONNECTIONS=N (>= 1, default 1024) the connections served at once. A bad value
 * refuses to start (envNumber), as a bad flag value does. Exported for the tests; `serve`'s parsing
 * checks it with the others (checkServeEnv) before anything starts.
 */
export function admissionFromEnv(env: NodeJS.ProcessEnv): ServerOptions {
  const out: ServerOptions = {};
  const d = envNumber(env, 'SESSION_PAGER_SHED_DELAY_MS', { min: 0 });
  if (d !== undefined) out.shedDelayMs = d;
  const dm = envNumber(env, 'SESSION_PAGER_MAX_SHED_DELAY_MS', { min: 0 });
  if (dm !== undefined) out.maxShedDelayMs = dm;
  // SESSION_PAGER_FOLLOW_SHED_MS (0: off) and _TO_MS: new follows shed in the loop's busy streaks (saturation.ts).
  const sf = envNumber(env, 'SESSION_PAGER_FOLLOW_SHED_MS', { min: 0 });
  if (sf !== undefined) out.followShedFromMs = sf;
  const st = envNumber(env, 'SESSION_PAGER_FOLLOW_SHED_TO_MS', { min: 0 });
  if (st !== undefined) out.followShedToMs = st;
  const su = envNumber(env, 'SESSION_PAGER_FOLLOW_SHED_UTILIZATION', { min: 0, max: 1 });
  if (su !== undefined) out.followShedUtilization = su;
  const sh = envNumber(env, 'SESSION_PAGER_FOLLOW_SHED_HOLD_MS', { min: 0 });
  if (sh !== undefined) out.followShedHoldMs = sh;
  // SESSION_PAGER_MAX_EVENT_LOOP_LAG_MS (0: off): the lag guard's bound (overload.ts), the follow sheds' counterpart.
  const lg = envNumber(env, 'SESSION_PAGER_MAX_EVENT_LOOP_LAG_MS', { min: 0 });
  if (lg !== undefined) out.maxEventLoopLagMs = lg;
  // SESSION_PAGER_MAX_CONNECTIONS: connections served at once; past it one is answered 503 (connection-limit.ts).
  const mc = envNumber(env, 'SESSION_PAGER_MAX_CONNECTIONS', { integer: true, min: 1 });
  if (mc !== undefined) out.maxConnections = mc;
  const a: { maxInFlight?: number; maxFollowsInFlight?: number; queueFactor?: number; minQueueMs?: number; maxQueueMs?: number; maxQueue?: number } = {};
  const n = envNumber(env, 'SESSION_PAGER_MAX_IN_FLIGHT', { integer: true, min: 1 });
  if (n !== undefined) a.maxInFlight = n;
  const nf = envNumber(env, 'SESSION_PAGER_MAX_FOLLOWS_IN_FLIGHT', { integer: true, min: 1 });
  if (nf !== undefined) a.maxFollowsInFlight = nf;
  const f = envNumber(env, 'SESSION_PAGER_QUEUE_FACTOR', { min: 0, above: true });
  if (f !== undefined) a.queueFactor = f;
  const lo = envNumber(env, 'SESSION_PAGER_MIN_QUEUE_MS', { min: 0, above: true });
  if (lo !== undefined) a.minQueueMs = lo;
  const hi = envNumber(env, 'SESSION_PAGER_MAX_QUEUE_MS', { min: 0, above: true });
  if (hi !== undefined) a.maxQueueMs = hi;
  const q = envNumber(env, 'SESSION_PAGER_MAX_QUEUE', { integer: true, min: 0 });
  if (q !== undefined) a.maxQueue = q;
  const switched = env.SESSION_PAGER_ADMISSION?.trim() ?? '';
  if (switched !== '' && switched !== 'on' && switched !== 'off') throw new CliError(`SESSION_PAGER_ADMISSION must be on or off, got ${quoteInput(env.SESSION_PAGER_ADMISSION as string)}`);
  // Off admits every page: the gate's sizes (checked above all the same) have nothing to size.
  if (switched === 'off') return { ...out, admission: false };
  return Object.keys(a).length > 0 ? { ...out, admission: a } : out;
}

/** The gates' sizes `serve` was given (its flags, or their variables), over the environment's other admission tuning. */
function withGateSizes(o: ServerOptions, cfg: ServeConfig): ServerOptions {
  if (o.admission === false || (cfg.maxInFlight === undefined && cfg.maxFollowsInFlight === undefined)) return o;
  return {
    ...o,
    admission: {
      ...o.admission,
      ...(cfg.maxInFlight !== undefined ? { maxInFlight: cfg.maxInFlight } : {}),
      ...(cfg.maxFollowsInFlight !== undefined ? { maxFollowsInFlight: cfg.maxFollowsInFlight } : {}),
    },
  };
}

/** SESSION_PAGER_INLINE_SLICE_BYTES=N: slices of at most N stored bytes are decoded on the main thread while a lone client's page is the only work (small-slice-pool.ts; default 262144; 0: none). */
function inlineSliceFromEnv(env: NodeJS.ProcessEnv): { inlineSliceBytes?: number } {
  const n = envNumber(env, 'SESSION_PAGER_INLINE_SLICE_BYTES', { integer: true, min: 0 });
  return n !== undefined ? { inlineSliceBytes: n } : {};
}

/**
 * SESSION_PAGER_REQUEST_TIMEOUT_MS: time to receive a whole request (head and
 * body) before it is answered 408 request_timeout (default 30 s).
 */
function limitsFromEnv(env: NodeJS.ProcessEnv): ServerOptions {
  const t = envNumber(env, 'SESSION_PAGER_REQUEST_TIMEOUT_MS', { integer: true, min: 1 });
  return t !== undefined ? { requestTimeoutMs: t } : {};
}

/** SESSION_PAGER_READY_DELAY_MS: hold /readyz at 503 this much longer after the warm-ups (tests watch the warming state through it; at most 10 minutes). */
function readyDelayFromEnv(env: NodeJS.ProcessEnv): number {
  return envNumber(env, 'SESSION_PAGER_READY_DELAY_MS', { min: 0, max: 600_000 }) ?? 0;
}

/**
 * Every tuning variable `serve` reads, checked: `serve`'s parsing calls it so a bad value refuses
 * before anything starts (what startServe reads later is then known good).
 */
export function checkServeEnv(env: NodeJS.ProcessEnv): void {
  admissionFromEnv(env);
  inlineSliceFromEnv(env);
  limitsFromEnv(env);
  readyDelayFromEnv(env);
  checkWarmUpSwitches(env);
  checkGcEnv(env);
  heapReleaseFromEnv(env);
}

/** Listen at once, then build the app, then warm up while serving. Used by `run` and by the tests. */
export async function startServe(cfg: ServeConfig, extra: ServerOptions = {}, out: NodeJS.WritableStream = process.stderr): Promise<RunningServer> {
  const serverOptions: ServerOptions = {
    ...withGateSizes(admissionFromEnv(process.env), cfg),
    ...limitsFromEnv(process.env),
    ...(cfg.maxConnections !== undefined ? { maxConnections: cfg.maxConnections } : {}),
    ...(cfg.corsOrigin !== null ? { corsOrigin: cfg.corsOrigin } : {}),
    ...extra,
  };
  const limits = resolveOptions(serverOptions);
  const early = new EarlyListener({ requestTimeoutMs: limits.requestTimeoutMs, keepAliveTimeoutMs: limits.keepAliveTimeoutMs, maxConnections: limits.maxConnections, retryAfterSeconds: limits.retryAfterSeconds });
  let url: string;
  try {
    url = await early.listen(cfg.host, cfg.port);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE') throw new CliError(`${cfg.host}:${cfg.port} is already in use (pick another --port or SESSION_PAGER_PORT)`, 1);
    if (e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND') throw new CliError(`cannot listen on ${cfg.host}: ${e.code}`, 1);
    if (e.code === 'EACCES') throw new CliError(`not allowed to listen on ${cfg.host}:${cfg.port} (EACCES)`, 1);
    throw err;
  }
  // The page workers next, before the app: each runs its JIT warm-up as it starts, so they warm
  // up while this thread loads and builds the app (~0.6 s) instead of after it. This thread waits
  // only until their isolates exist (milliseconds): each new isolate resets the young generation's
  // growth factor, and the app's loading must run with the hold in force (young-generation.ts).
  // The demo corpus holds a binary session and may be written only after the store has opened
  // (its catalog then empty): its workers warm the binary path whatever the catalog says.
  // A local directory that holds a binary log says so now, before the workers start
  // (store/binary-logs.ts); else the store answers them from its catalog once open.
  const binaryLog = cfg.demo || cfg.store !== undefined || process.env.SESSION_PAGER_BINARY_WARMUP !== undefined ? null : await holdsBinaryLog(new LocalBackend(cfg.dataDir));
  const storeOptions = { workers: cfg.workers, ...inlineSliceFromEnv(process.env), warmUp: { ...warmUpFromEnv(process.env, cfg.demo || binaryLog === true ? { binary: true } : {}), collect: markingOff(process.env) } } satisfies StoreOptions;
  let pool: PagePool | null = null;
  try {
    const { startPagePool } = await import('../store/start-pool.js');
    const { poolOnline } = await import('../worker-pool.js');
    pool = startPagePool(storeOptions);
    await poolOnline(pool);
  } catch (err) {
    await early.close();
    await pool?.close().catch(() => undefined);
    throw err;
  }
  // Loaded only now, so the port is bound before the heaviest imports of the process.
  const [{ openStore }, { buildServer, warmPageRoute }, demo] = await Promise.all([import('../store.js'), import('../server/index.js'), import('../demo.js')]);
  let token = cfg.token;
  let source = cfg.tokenSource;
  let store: Store | null = null;
  let app: FastifyInstance;
  const readiness = new Readiness(false);
  let logBusError = (err: Error): void => void out.write(`session-pager serve: redis: ${err.message}\n`);
  try {
    if (cfg.demo && token === null) {
      token = await demo.demoToken(cfg.dataDir);
      source = 'demo';
    }
    const storage = await storageFromFlag(cfg.store, cfg.dataDir, process.env);
    store = await openStore({
      dataDir: cfg.dataDir,
      ...(storage !== null ? { storage, closeStorage: true } : {}),
      ...storeOptions,
      startedPool: pool,
      // The bus connects in the background; its errors go to the server's log.
      ...(cfg.redisUrl ? { redisUrl: cfg.redisUrl, onBusError: (err: Error) => logBusError(err) } : {}),
    });
    app = buildServer(store, { logger: { level: cfg.logLevel }, ...serverOptions, token, readiness, serverFactory: early.factory });
    const log = app.log;
    logBusError = (err) => void log.warn({ err: err.message }, 'redis: follow across processes falls back to polling until it reconnects');
    await app.ready();
  } catch (err) {
    early.fail(`the server failed to start: ${(err as Error)?.message ?? String(err)}`);
    await early.close();
    // The store took the pool over; without a store the pool is still this function's.
    if (store !== null) await store.close().catch(() => undefined);
    else await pool.close().catch(() => undefined);
    throw err;
  }
  early.open();
  const opened = store;
  const auth = authHeader(token, source);
  const sample = cfg.demo ? ((cfg.demoPlan ?? demo.DEMO_PLAN).at(-1)?.id ?? 'demo-long') : ((await opened.list().catch(() => []))[0]?.id ?? '<id>');
  out.write(
    [
      `session-pager listening on ${url} (${cfg.store !== undefined ? `store: ${cfg.store}` : `data: ${cfg.dataDir}`}); warming up, /readyz says when done`,
      tokenLine(token, source),
      ...(cfg.corsOrigin !== null ? [`cors: allowed origin ${cfg.corsOrigin}`] : []),
      ...(cfg.redisUrl ? [`follow across processes: appends published on ${redactUrl(cfg.redisUrl)}`] : []),
      'try:',
      `  curl -s --compressed${auth} '${url}/v1/sessions'`,
      `  curl -s --compressed${auth} '${url}/v1/sessions/${sample}/page?maxMessages=5'`,
      `  curl -sN${auth} '${url}/v1/sessions/${sample}/follow?maxMessages=1'`,
      `docs: ${url}/v1/openapi.json, docs/api.md`,
    ].join('\n') + '\n',
  );
  const t0 = performance.now();
  const ready = readiness.follow(
    (async () => {
      if (cfg.demo) await makeDemo(cfg, demo, out);
      // Workers start and optimize their decode path; pages asked meanwhile are served, slower.
      // Beside it, the page route and the recent sessions' first open, ahead of the first page
      // (server/route-warmup.ts): this thread does it while the store's warm-up waits for the
      // workers, not after (~10 ms of the path to ready; its 304s build nothing, and a warming
      // server sheds no request for its own lag: overload.ts).
      await Promise.all([opened.warmUp(), warmPageRoute(app, opened, token)]);
      // Held a while longer on request (tests watch the warming state through it).
      const hold = readyDelayFromEnv(process.env);
      if (hold > 0) await new Promise((r) => setTimeout(r, hold).unref());
    })(),
  );
  ready.then(
    () => {
      out.write(`ready in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
      app.log.info({ readyMs: Math.round(performance.now() - t0) }, 'ready');
    },
    (err: unknown) => app.log.error({ err }, 'warm-up failed'),
  );
  let closing: Promise<void> | undefined;
  // The app ends follow streams and refuses new requests; the server then waits for the busy connections; the store goes last.
  const close = async () => {
    try {
      await app.close();
      await early.close();
    } finally {
      await opened.close();
    }
  };
  return { app, store: opened, url, token, ready, close: () => (closing ??= close()) };
}

/** A URL without its password (never printed). */
function redactUrl(url: string): string {
  const u = new URL(url);
  if (u.password !== '') u.password = '***';
  return u.toString();
}

async function makeDemo(cfg: ServeConfig, demo: typeof import('../demo.js'), out: NodeJS.WritableStream): Promise<void> {
  const bar = new Map<string, Progress>();
  const corpus = await demo.ensureDemoCorpus(cfg.dataDir, {
    replace: cfg.dataDir === demo.DEMO_DATA_DIR,
    ...(cfg.demoPlan ? { plan: cfg.demoPlan } : {}),
    onProgress: (id, done, total) => {
      let p = bar.get(id);
      if (p === undefined) {
        p = new Progress(`generating demo ${id}`, total, ' events');
        bar.set(id, p);
      }
      p.update(done);
      if (done >= total) p.done();
    },
  });
  const events = corpus.sessions.reduce((a, s) => a + s.events, 0);
  out.write(
    (corpus.created
      ? `demo corpus: generated ${corpus.sessions.length} sessions, ${events.toLocaleString('en')} events in ${(corpus.ms / 1000).toFixed(1)} s`
      : `demo corpus: ${corpus.sessions.length} sessions, ${events.toLocaleString('en')} events`) + '\n',
  );
}
