/**
 * `session-pager serve`: the HTTP API of SPEC section 6 on fastify.
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
import { defineCommand, type OptionsDecl, type OptionValues } from './command.js';
import { CliError, Progress } from './common.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

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

const OPTIONS = {
  data: { type: 'string', arg: 'DIR', describe: 'data directory', defaultText: './data (./.demo-data with --demo)' },
  host: { type: 'string', arg: 'HOST', default: '127.0.0.1', describe: 'address to listen on' },
  port: { type: 'int', max: 65535, default: 8080, describe: 'TCP port (0 picks a free one)' },
  token: { type: 'string', arg: 'T', env: 'SESSION_PAGER_TOKEN', describe: 'bearer token required on every route but the health checks and OpenAPI', defaultText: 'none' },
  workers: { type: 'int', min: 1, describe: 'page worker threads', defaultText: 'one per core, at most 8' },
  demo: { type: 'boolean', describe: 'serve the demo corpus (generated on first start) and make a token if none is given' },
  'log-level': { type: 'string', arg: 'LEVEL', choices: LOG_LEVELS, default: 'info', describe: 'JSON log level on stdout' },
} as const satisfies OptionsDecl;

export const command = defineCommand({
  name: 'serve',
  summary: 'serve the HTTP API (SPEC section 6)',
  description: 'Without a token the server listens on loopback only (auth off); on any other address it refuses to start.\nSIGTERM / SIGINT finish in-flight requests, then exit.',
  options: OPTIONS,
  examples: ['session-pager serve --demo', 'SESSION_PAGER_TOKEN=secret session-pager serve --host 0.0.0.0 --port 8080 --data ./data'],
  run: ({ values }) => serve(configFrom(values)),
});

type ServeValues = OptionValues<typeof OPTIONS>;

export function parseServeArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): ServeConfig {
  return configFrom(command.parse(argv, env).values);
}

function configFrom(values: ServeValues): ServeConfig {
  const { demo, host, port, workers } = values;
  const logLevel = values['log-level'];
  const rawToken = values.token;
  if (rawToken !== undefined && rawToken.trim() === '') throw new CliError('--token must not be empty');
  const token = rawToken !== undefined ? rawToken.trim() : null;
  if (token !== null && /\s/.test(token)) throw new CliError('the token must not contain whitespace');
  const dataDir = values.data ?? (demo ? DEMO_DATA_DIR : './data');
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

async function serve(cfg: ServeConfig): Promise<number> {
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
