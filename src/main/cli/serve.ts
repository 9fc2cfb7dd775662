/**
 * `session-pager serve`: the HTTP API of SPEC section 6 on fastify.
 *
 *   serve [--data DIR] [--host 127.0.0.1] [--port 8080] [--token T]
 *         [--workers N] [--demo] [--log-level info]
 *
 * The token comes from --token or SESSION_PAGER_TOKEN. Without one, the
 * server only listens on loopback (auth off); on any other address it
 * refuses to start. --demo serves the demo corpus (generated into
 * ./.demo-data on first start unless --data is given) and makes a token if
 * none was given. SIGTERM / SIGINT shut down gracefully.
 */
import type { FastifyInstance } from 'fastify';
import { isIP } from 'node:net';
import { DEMO_DATA_DIR, demoToken, ensureDemoCorpus, DEMO_PLAN, type DemoSessionPlan } from '../demo.js';
import { buildServer, shutdown, type ServerOptions } from '../server/index.js';
import { openStore } from '../store.js';
import type { Store } from '../store-types.js';
import { CliError, intFlag, parse, Progress } from './common.js';

const OPTIONS = {
  data: { type: 'string' },
  host: { type: 'string', default: '127.0.0.1' },
  port: { type: 'string', default: '8080' },
  token: { type: 'string' },
  workers: { type: 'string' },
  demo: { type: 'boolean', default: false },
  'log-level': { type: 'string', default: 'info' },
} as const;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface ServeConfig {
  dataDir: string;
  host: string;
  port: number;
  token: string | null;
  workers: number | undefined;
  demo: boolean;
  logLevel: string;
  /** The demo corpus to make (tests use a small one); default DEMO_PLAN. */
  demoPlan?: readonly DemoSessionPlan[];
}

/** Loopback names and addresses: localhost, 127.0.0.0/8, ::1 (also IPv4-mapped). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^(0{0,4}:){5}ffff:127\./.test(h.replace(/^::/, '0:0:0:0:0:')) || h.startsWith('::ffff:127.');
  return false;
}

export function parseServeArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): ServeConfig {
  const { values } = parse(argv, OPTIONS, false);
  const demo = values.demo === true;
  const host = values.host as string;
  const port = intFlag('port', values.port as string) as number;
  if (port > 65535) throw new CliError('--port must be at most 65535');
  const workers = intFlag('workers', values.workers as string | undefined, 1);
  const logLevel = values['log-level'] as string;
  if (!LOG_LEVELS.includes(logLevel)) throw new CliError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  const rawToken = (values.token as string | undefined) ?? env.SESSION_PAGER_TOKEN;
  if (rawToken !== undefined && rawToken.trim() === '' && values.token !== undefined) throw new CliError('--token must not be empty');
  const token = rawToken !== undefined && rawToken.trim() !== '' ? rawToken.trim() : null;
  if (token !== null && /\s/.test(token)) throw new CliError('the token must not contain whitespace');
  const dataDir = (values.data as string | undefined) ?? (demo ? DEMO_DATA_DIR : './data');
  if (token === null && !demo && !isLoopback(host)) {
    throw new CliError(`refusing to listen on non-loopback address ${host} without a token: pass --token or set SESSION_PAGER_TOKEN`);
  }
  return { dataDir, host, port, token, workers, demo, logLevel };
}

export interface RunningServer {
  app: FastifyInstance;
  store: Store;
  url: string;
  token: string | null;
  close(): Promise<void>;
}

/** Open the store, build the app and listen. Used by `run` and by the tests. */
export async function startServe(cfg: ServeConfig, extra: ServerOptions = {}, out: NodeJS.WritableStream = process.stdout): Promise<RunningServer> {
  let token = cfg.token;
  let demoLine = '';
  if (cfg.demo) {
    const bar = new Map<string, Progress>();
    const corpus = await ensureDemoCorpus(cfg.dataDir, {
      replace: cfg.dataDir === DEMO_DATA_DIR,
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
    if (token === null) token = await demoToken(cfg.dataDir);
    const events = corpus.sessions.reduce((a, s) => a + s.events, 0);
    demoLine = corpus.created
      ? `demo corpus: generated ${corpus.sessions.length} sessions, ${events.toLocaleString('en')} events in ${(corpus.ms / 1000).toFixed(1)} s`
      : `demo corpus: ${corpus.sessions.length} sessions, ${events.toLocaleString('en')} events`;
  }
  const store = await openStore({ dataDir: cfg.dataDir, workers: cfg.workers });
  // Workers start and optimize their decode path before the first request, not during it.
  await store.warmUp();
  const app = buildServer(store, { logger: { level: cfg.logLevel }, ...extra, token });
  let address: string;
  try {
    address = await app.listen({ host: cfg.host, port: cfg.port });
  } catch (err) {
    await shutdown(app, store).catch(() => undefined);
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE') throw new CliError(`${cfg.host}:${cfg.port} is already in use (pick another --port)`, 1);
    if (e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND') throw new CliError(`cannot listen on ${cfg.host}: ${e.code}`, 1);
    throw err;
  }
  const url = address;
  const lines = [`session-pager listening on ${url} (data: ${cfg.dataDir})`];
  if (demoLine) lines.push(demoLine);
  const auth = token === null ? '' : ` -H 'Authorization: Bearer ${token}'`;
  if (token === null) lines.push('auth: off (loopback only; set --token or SESSION_PAGER_TOKEN to require one)');
  else lines.push(`token: ${token}`);
  const sample = cfg.demo ? (cfg.demoPlan ?? DEMO_PLAN).at(-1)?.id ?? 'demo-long' : ((await store.list().catch(() => []))[0]?.id ?? '<id>');
  lines.push(
    'try:',
    `  curl -s --compressed${auth} '${url}/v1/sessions'`,
    `  curl -s --compressed${auth} '${url}/v1/sessions/${sample}/page?maxMessages=5'`,
    `  curl -sN${auth} '${url}/v1/sessions/${sample}/follow?maxMessages=1'`,
    `docs: ${url}/v1/openapi.json, docs/api.md`,
  );
  out.write(lines.join('\n') + '\n');
  let closing: Promise<void> | undefined;
  return {
    app,
    store,
    url,
    token,
    close: () => (closing ??= shutdown(app, store)),
  };
}

export async function run(argv: string[]): Promise<number> {
  const cfg = parseServeArgs(argv);
  const server = await startServe(cfg);
  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      signals++;
      if (signals > 1) {
        process.stderr.write(`session-pager serve: second ${sig}, exiting now\n`);
        process.exit(130);
      }
      server.app.log.info({ signal: sig }, 'shutting down: finishing in-flight requests');
      server.close().then(resolve, (err: unknown) => {
        process.stderr.write(`session-pager serve: shutdown failed: ${(err as Error).message}\n`);
        resolve();
      });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  return 0;
}
