/**
 * `session-pager serve`: the HTTP API of SPEC section 6 on fastify.
 *
 * Every flag has an environment variable (SESSION_PAGER_DATA, _HOST, _PORT,
 * _TOKEN, _WORKERS, _LOG_LEVEL, _MAX_IN_FLIGHT, _MAX_FOLLOWS_IN_FLIGHT, _CORS_ORIGIN,
 * _REDIS_URL); the flag wins, an empty
 * variable counts as unset, a bad value is named by its variable. Without
 * a token the server listens on loopback only (auth off); on any other
 * address it refuses to start. --demo serves the demo corpus (generated
 * into ./.demo-data on first start unless --data is given) and makes a
 * token if none was given. Starting (listen first, then warm up) is
 * serve-start.ts. SIGTERM / SIGINT shut down gracefully.
 */
import { isIP } from 'node:net';
import { DEMO_DATA_DIR } from '../demo-dir.js';
import { defineCommand, type OptionsDecl, type OptionValues } from './command.js';
import { checkRedisUrl } from '../store/append-bus.js';
import { CliError } from './common.js';
import { tuneServeGc } from './serve-gc.js';
import { heapReleaseFromEnv, startHeapRelease } from './serve-heap.js';
import { checkServeEnv, startServe, type ServeConfig, type TokenSource } from './serve-start.js';
import { FOLLOW_IN_FLIGHT_PER_THREAD, IN_FLIGHT_PER_THREAD } from '../server/options.js';
import { STORE, isRemoteStore } from './store-flag.js';

export { startServe, type RunningServer, type ServeConfig } from './serve-start.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Loopback names and addresses: localhost, 127.0.0.0/8, ::1 (also IPv4-mapped). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^(0{0,4}:){5}ffff:127\./.test(h.replace(/^::/, '0:0:0:0:0:')) || h.startsWith('::ffff:127.');
  return false;
}

const OPTIONS = {
  data: { type: 'string', arg: 'DIR', env: 'SESSION_PAGER_DATA', describe: 'data directory', defaultText: './data (./.demo-data with --demo)' },
  store: STORE,
  host: { type: 'string', arg: 'HOST', env: 'SESSION_PAGER_HOST', default: '127.0.0.1', describe: 'address to listen on' },
  port: { type: 'int', max: 65535, env: 'SESSION_PAGER_PORT', default: 8080, describe: 'TCP port (0 picks a free one)' },
  token: { type: 'string', arg: 'T', env: 'SESSION_PAGER_TOKEN', describe: 'bearer token required on every route but the health checks and OpenAPI (never printed)', defaultText: 'none' },
  workers: { type: 'int', min: 1, env: 'SESSION_PAGER_WORKERS', describe: 'page worker threads', defaultText: 'one per core, at most 8' },
  demo: { type: 'boolean', describe: 'serve the demo corpus (generated on first start) and make a token if none is given' },
  'log-level': { type: 'string', arg: 'LEVEL', env: 'SESSION_PAGER_LOG_LEVEL', choices: LOG_LEVELS, default: 'info', describe: 'JSON log level on stdout' },
  redis: {
    type: 'string',
    arg: 'URL',
    env: 'SESSION_PAGER_REDIS_URL',
    describe: 'follow across processes and hosts: publish appends on Redis and hear of other processes\' there (redis://host:port)',
    defaultText: 'none',
  },
  'max-in-flight': {
    type: 'int',
    min: 1,
    env: 'SESSION_PAGER_MAX_IN_FLIGHT',
    describe: 'page requests in flight at once (the admission gate); the next wait in its queue or are answered 503 overloaded',
    defaultText: `${IN_FLIGHT_PER_THREAD} per worker thread`,
  },
  'max-follows-in-flight': {
    type: 'int',
    min: 1,
    env: 'SESSION_PAGER_MAX_FOLLOWS_IN_FLIGHT',
    describe: "follow requests whose snapshot is being sent at once (the follow gate, beside the page gate's slots); the next wait or are answered 503 overloaded",
    defaultText: `${FOLLOW_IN_FLIGHT_PER_THREAD} per worker thread`,
  },
  'max-connections': {
    type: 'int',
    min: 1,
    env: 'SESSION_PAGER_MAX_CONNECTIONS',
    describe: 'connections open at once; a further one is answered 503 overloaded and closed (past as many again, closed unanswered)',
    defaultText: '1024',
  },
  'cors-origin': {
    type: 'string',
    arg: 'ORIGIN',
    env: 'SESSION_PAGER_CORS_ORIGIN',
    describe: 'allow browser web UIs from this origin (several comma-separated, or *)',
    defaultText: 'none (CORS off)',
  },
} as const satisfies OptionsDecl;

export const command = defineCommand({
  name: 'serve',
  summary: 'serve the HTTP API (SPEC section 6)',
  description:
    'Listens at once, then warms up while serving: /livez is 200 from the start, /readyz and /healthz 503 until warmed up.\n' +
    'The banner goes to stderr; stdout carries only JSON log lines. Every flag may come from its environment variable (the flag wins).\n' +
    'Without a token the server listens on loopback only (auth off); on any other address it refuses to start.\n' +
    'Admission is tuned further by SESSION_PAGER_QUEUE_FACTOR, _MIN_QUEUE_MS, _MAX_QUEUE_MS, _MAX_QUEUE, _SHED_DELAY_MS and others (docs/api.md, "Limits and overload"); a bad value of any refuses to start (exit 2).\n' +
    'SIGTERM / SIGINT finish in-flight requests, then exit.',
  options: OPTIONS,
  examples: ['session-pager serve --demo', 'SESSION_PAGER_TOKEN=secret session-pager serve --host 0.0.0.0 --port 8080 --data ./data'],
  run: ({ values }, env) => serve(configFrom(values, env)),
});

type ServeValues = OptionValues<typeof OPTIONS>;

export function parseServeArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): ServeConfig {
  return configFrom(command.parse(argv, env).values, env);
}

/** One CORS origin: `*` or scheme://host[:port], nothing after. */
function oneOrigin(origin: string, from: string): string {
  if (origin === '*') return origin;
  let u: URL | null = null;
  try {
    u = new URL(origin);
  } catch {
    // said below
  }
  if (u === null || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== origin.replace(/\/$/, '')) {
    throw new CliError(`${from} must be an origin such as https://ui.example.com (scheme, host and port only) or *, got ${JSON.stringify(origin)}`);
  }
  return u.origin;
}

/** `--cors-origin`: `*`, one origin, or several separated by commas; normalized. */
export function checkOrigin(origins: string, from: string): string {
  const list = origins.split(',').map((o) => o.trim());
  if (list.some((o) => o === '')) throw new CliError(`${from} has an empty origin in ${JSON.stringify(origins)}`);
  return list.map((o) => oneOrigin(o, from)).join(',');
}

function configFrom(values: ServeValues, env: NodeJS.ProcessEnv): ServeConfig {
  const { demo, host, port, workers } = values;
  const logLevel = values['log-level'];
  const rawToken = values.token;
  // The framework took the variable only when no flag was given (and an empty one as unset).
  const tokenSource: TokenSource = rawToken === undefined ? null : rawToken === env.SESSION_PAGER_TOKEN ? 'env' : 'flag';
  const tokenName = tokenSource === 'env' ? 'SESSION_PAGER_TOKEN' : '--token';
  if (rawToken !== undefined && rawToken.trim() === '') throw new CliError(`${tokenName} must not be empty`);
  const token = rawToken !== undefined ? rawToken.trim() : null;
  if (token !== null && /\s/.test(token)) throw new CliError(`the token (${tokenName}) must not contain whitespace`);
  const dataDir = values.data ?? (demo ? DEMO_DATA_DIR : './data');
  const store = isRemoteStore(values.store) ? (values.store as string) : null;
  if (store !== null && demo) throw new CliError('--demo generates its corpus in local files: it does not go with --store');
  if (token === null && !demo && !isLoopback(host)) {
    throw new CliError(`refusing to listen on non-loopback address ${host} without a token: pass --token or set SESSION_PAGER_TOKEN`);
  }
  const cors = values['cors-origin'];
  const corsOrigin = cors === undefined ? null : checkOrigin(cors, env.SESSION_PAGER_CORS_ORIGIN === cors ? 'SESSION_PAGER_CORS_ORIGIN' : '--cors-origin');
  const redisUrl = values.redis === undefined ? null : redisFrom(values.redis, env.SESSION_PAGER_REDIS_URL === values.redis ? 'SESSION_PAGER_REDIS_URL' : '--redis');
  // The tuning variables (SESSION_PAGER_QUEUE_FACTOR, _REQUEST_TIMEOUT_MS ...) are read when the server starts; a bad one refuses here, before anything starts.
  checkServeEnv(env);
  const maxInFlight = values['max-in-flight'];
  const maxFollowsInFlight = values['max-follows-in-flight'];
  const maxConnections = values['max-connections'];
  return {
    dataDir,
    ...(store !== null ? { store } : {}),
    host,
    port,
    token,
    tokenSource,
    workers,
    demo,
    logLevel,
    corsOrigin,
    redisUrl,
    ...(maxInFlight !== undefined ? { maxInFlight } : {}),
    ...(maxFollowsInFlight !== undefined ? { maxFollowsInFlight } : {}),
    ...(maxConnections !== undefined ? { maxConnections } : {}),
  };
}

function redisFrom(url: string, from: string): string {
  try {
    return checkRedisUrl(url.trim());
  } catch (err) {
    throw new CliError(`${from}: ${(err as Error).message}`);
  }
}

async function serve(cfg: ServeConfig): Promise<number> {
  tuneServeGc(process.env);
  const server = await startServe(cfg);
  // The process's malloc heaps: given back after the warm-up and after quiet spells (serve-heap.ts).
  const stopHeapRelease = startHeapRelease(heapReleaseFromEnv(process.env), server.app.server, server.ready, server.app.log);
  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      signals++;
      if (signals > 1) {
        process.stderr.write(`session-pager serve: second ${sig}, exiting now\n`);
        process.exit(130);
      }
      server.app.log.info({ signal: sig }, 'shutting down: finishing in-flight requests');
      stopHeapRelease();
      server.close().then(
        () => resolve(0),
        (err: unknown) => {
          process.stderr.write(`session-pager serve: shutdown failed: ${(err as Error).message}\n`);
          resolve(0);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    // Worker threads that cannot start make a server that can never serve a page: stop, say why.
    server.ready.catch((err: unknown) => {
      process.stderr.write(`session-pager serve: warm-up failed: ${String((err as Error)?.message ?? err).split('\n')[0]}\n`);
      server.close().then(
        () => resolve(1),
        () => resolve(1),
      );
    });
  });
}
