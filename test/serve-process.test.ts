/**
 * `session-pager serve` as a real process: it listens before its warm-up
 * (/livez 200 at once, /readyz and /healthz 503 until warmed, pages served
 * meanwhile), a port clash fails at once with one line, configuration comes
 * from the environment as well as flags (flags win), a token given by the
 * environment is never printed, the banner goes to stderr and stdout holds
 * only JSON log lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError } from '../src/main/cli/common.js';
import { parseServeArgs } from '../src/main/cli/serve.js';
import { admissionFromEnv } from '../src/main/cli/serve-start.js';
import { rawRequest, seedSession, tempStore, until, type TempStore } from './server-helpers.js';

const ROOT = resolve(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'session-pager.js');
const SECRET = 'env-secret-token-5f1c9a7e';

let ts: TempStore;
let tmp = '';
const children: ChildProcess[] = [];

interface Proc {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
}

/** Environment without any SESSION_PAGER_* of the machine running the tests. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SESSION_PAGER_')) env[k] = v;
  return { ...env, ...extra };
}

function serve(args: string[], env: Record<string, string>): Proc {
  // Its own temp folder: the warm-up's temp session never shows in the one other tests watch.
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { env: cleanEnv({ TMPDIR: tmp, ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, out: () => out, err: () => err, exited };
}

async function stop(p: Proc): Promise<number | null> {
  p.child.kill('SIGTERM');
  return p.exited;
}

beforeAll(async () => {
  expect(existsSync(join(ROOT, 'dist', 'main', 'cli', 'serve-start.js'))).toBe(true);
  ts = await tempStore(1);
  await seedSession(ts.store, 'p', 600, 300);
  await ts.store.close();
  tmp = join(ts.dir, 'tmp');
  await mkdir(tmp);
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await ts.cleanup();
});


describe('readiness', () => {
  it('answers /livez at once, /readyz and /healthz 503 while warming (pages served meanwhile), then 200', async () => {
    // The warm-up is held 4 s longer, so the warming state is there to be seen on any machine.
    const p = serve(['--data', ts.dir, '--port', '0', '--log-level', 'warn'], { SESSION_PAGER_READY_DELAY_MS: '4000' });
    const url = await until('the banner', () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(p.err())?.[1] ?? undefined, 30_000);
    const live = await rawRequest(`${url}/livez`);
    expect(live.status).toBe(200);
    expect(JSON.parse(live.body.toString())).toEqual({ status: 'ok' });
    for (const path of ['/readyz', '/healthz']) {
      const r = await rawRequest(`${url}${path}`);
      expect(r.status, path).toBe(503);
      expect(r.headers['retry-after']).toBe('1');
      expect(JSON.parse(r.body.toString())).toMatchObject({ error: { code: 'overloaded', status: 'warming' } });
    }
    // Served, not refused, while warming.
    const page = await rawRequest(`${url}/v1/sessions/p/page?maxMessages=5`);
    expect(page.status).toBe(200);
    expect(JSON.parse(page.body.toString())).toMatchObject({ sessionId: 'p', throughSeq: 599, toSeq: 600 });
    expect((await rawRequest(`${url}/readyz`)).status).toBe(503);
    expect((await rawRequest(`${url}/metrics`)).body.toString()).toMatch(/^session_pager_ready 0$/m);
    await until('ready', async () => (await rawRequest(`${url}/readyz`)).status === 200, 60_000, 100);
    expect(JSON.parse((await rawRequest(`${url}/healthz`)).body.toString())).toEqual({ status: 'ok' });
    expect((await rawRequest(`${url}/metrics`)).body.toString()).toMatch(/^session_pager_ready 1$/m);
    expect(p.err()).toMatch(/^ready in \d+\.\d s$/m);
    expect(await stop(p)).toBe(0);
  });

  it('is ready without loading yaml, @opentelemetry/api or readable-stream (issue 12); the OpenAPI document loads its generator when asked', async () => {
    // Node prints every CommonJS file it loads under NODE_DEBUG=module (stderr).
    const p = serve(['--data', ts.dir, '--port', '0', '--log-level', 'warn'], { NODE_DEBUG: 'module' });
    const url = await until('the banner', () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(p.err())?.[1] ?? undefined, 30_000);
    await until('ready', async () => (await rawRequest(`${url}/readyz`)).status === 200, 60_000, 100);
    const loaded = (pkg: string) => p.err().includes(`/node_modules/${pkg}/`);
    expect(loaded('fastify')).toBe(true); // the probe sees what it should
    expect(loaded('yaml')).toBe(false);
    expect(loaded('@opentelemetry/api')).toBe(false);
    expect(loaded('readable-stream')).toBe(false);
    const metrics = (await rawRequest(`${url}/metrics`)).body.toString();
    expect(metrics).toMatch(/^process_cpu_seconds_total [\d.e-]+$/m);
    expect(metrics).toMatch(/^nodejs_heap_size_used_bytes \d+$/m);
    const doc = await rawRequest(`${url}/v1/openapi.json`);
    expect(doc.status).toBe(200);
    expect(JSON.parse(doc.body.toString())).toMatchObject({ openapi: '3.1.0', paths: { '/v1/sessions/{id}/page': { get: {} } } });
    expect(loaded('yaml')).toBe(true);
    expect(loaded('@opentelemetry/api')).toBe(false);
    expect(await stop(p)).toBe(0);
  });

  it('fails at once on a port clash: one line on stderr, exit 1, no banner, no warm-up', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const p = serve(['--data', ts.dir, '--port', String(port)], {});
      expect(await p.exited).toBe(1);
      const lines = p.err().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toBe(`session-pager serve: 127.0.0.1:${port} is already in use (pick another --port or SESSION_PAGER_PORT)`);
      expect(p.out()).toBe('');
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });
});

describe('configuration', () => {
  it('takes every setting from SESSION_PAGER_*; never prints the token; banner on stderr, stdout pure JSON lines', async () => {
    const p = serve([], {
      SESSION_PAGER_HOST: '127.0.0.1',
      SESSION_PAGER_PORT: '0',
      SESSION_PAGER_DATA: ts.dir,
      SESSION_PAGER_TOKEN: SECRET,
      SESSION_PAGER_LOG_LEVEL: 'debug',
      SESSION_PAGER_WORKERS: '1',
      SESSION_PAGER_CORS_ORIGIN: 'https://ui.example.com',
      SESSION_PAGER_READY_DELAY_MS: '0',
    });
    const url = await until('the banner', () => /listening on (http:\/\/127\.0\.0\.1:\d+) \(data: ([^)]+)\)/.exec(p.err()) ?? undefined, 30_000);
    expect(url[2]).toBe(ts.dir);
    const base = url[1]!;
    expect(p.err()).toContain('auth: bearer token from SESSION_PAGER_TOKEN (not shown)');
    expect(p.err()).toContain(`-H "Authorization: Bearer $SESSION_PAGER_TOKEN"`);
    // The token from the environment is the one required.
    expect((await rawRequest(`${base}/v1/sessions`)).status).toBe(401);
    expect((await rawRequest(`${base}/v1/sessions`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const ok = await rawRequest(`${base}/v1/sessions`, { headers: { authorization: `Bearer ${SECRET}` } });
    expect(ok.status).toBe(200);
    const metrics = (await rawRequest(`${base}/metrics`, { headers: { authorization: `Bearer ${SECRET}` } })).body.toString();
    expect(metrics).toMatch(/^session_pager_pool_threads 1$/m);
    // CORS from the environment: a preflight for a request with Authorization.
    const pre = await rawRequest(`${base}/v1/sessions/p/page`, {
      method: 'OPTIONS',
      headers: { origin: 'https://ui.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe('https://ui.example.com');
    await until('ready', async () => (await rawRequest(`${base}/readyz`)).status === 200, 60_000, 100);
    expect(await stop(p)).toBe(0);
    const all = p.out() + p.err();
    expect(all).not.toContain(SECRET);
    // Debug level from the environment: the probes' request lines are logged.
    const lines = p.out().split('\n').filter((l) => l !== '');
    expect(lines.length).toBeGreaterThan(3);
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    expect(lines.map((l) => JSON.parse(l) as { url?: string }).some((l) => l.url === '/readyz')).toBe(true);
    expect(p.out()).not.toContain('listening on http');
  });

  it('lets flags win over the environment, and names the variable in a bad value', () => {
    const env = { SESSION_PAGER_PORT: '9001', SESSION_PAGER_HOST: '127.0.0.2', SESSION_PAGER_DATA: '/from/env', SESSION_PAGER_LOG_LEVEL: 'warn', SESSION_PAGER_WORKERS: '3', SESSION_PAGER_TOKEN: 'envtok' };
    expect(parseServeArgs([], env)).toMatchObject({ port: 9001, host: '127.0.0.2', dataDir: '/from/env', logLevel: 'warn', workers: 3, token: 'envtok', tokenSource: 'env' });
    expect(parseServeArgs(['--port', '9002', '--host', '127.0.0.3', '--data', '/flag', '--log-level', 'error', '--workers', '2', '--token', 'flagtok'], env)).toMatchObject({
      port: 9002,
      host: '127.0.0.3',
      dataDir: '/flag',
      logLevel: 'error',
      workers: 2,
      token: 'flagtok',
      tokenSource: 'flag',
    });
    // An empty variable counts as unset.
    expect(parseServeArgs([], { SESSION_PAGER_PORT: '', SESSION_PAGER_TOKEN: '' })).toMatchObject({ port: 8080, token: null, tokenSource: null });
    expect(() => parseServeArgs([], { SESSION_PAGER_PORT: 'http' })).toThrow(/^SESSION_PAGER_PORT must be a non-negative integer/);
    expect(() => parseServeArgs([], { SESSION_PAGER_PORT: '70000' })).toThrow(/^SESSION_PAGER_PORT must be at most 65535/);
    expect(() => parseServeArgs([], { SESSION_PAGER_WORKERS: '0' })).toThrow(/^SESSION_PAGER_WORKERS must be an integer >= 1/);
    expect(() => parseServeArgs([], { SESSION_PAGER_LOG_LEVEL: 'loud' })).toThrow(/^SESSION_PAGER_LOG_LEVEL must be one of/);
    expect(() => parseServeArgs([], { SESSION_PAGER_CORS_ORIGIN: 'ui.example.com' })).toThrow(CliError);
    expect(() => parseServeArgs(['--cors-origin', 'https://a.example/path'], {})).toThrow(/--cors-origin must be an origin/);
    expect(parseServeArgs(['--cors-origin', 'https://a.example, http://localhost:5173'], {}).corsOrigin).toBe('https://a.example,http://localhost:5173');
    expect(parseServeArgs([], { SESSION_PAGER_HOST: '0.0.0.0', SESSION_PAGER_TOKEN: 'x' }).host).toBe('0.0.0.0');
    expect(() => parseServeArgs([], { SESSION_PAGER_HOST: '0.0.0.0' })).toThrow(/refusing to listen on non-loopback address 0\.0\.0\.0 without a token/);
  });
});

describe('admission gates', () => {
  it('--max-in-flight and --max-follows-in-flight (or their variables, the flag winning) size the page and follow gates, as /metrics shows', async () => {
    const p = serve(['--data', ts.dir, '--port', '0', '--log-level', 'warn', '--max-follows-in-flight', '3'], {
      SESSION_PAGER_MAX_IN_FLIGHT: '5',
      SESSION_PAGER_MAX_FOLLOWS_IN_FLIGHT: '9',
      SESSION_PAGER_READY_DELAY_MS: '0',
    });
    const url = await until('the banner', () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(p.err())?.[1] ?? undefined, 30_000);
    const metrics = (await rawRequest(`${url}/metrics`)).body.toString();
    expect(metrics).toMatch(/^session_pager_admission_max_in_flight 5$/m);
    expect(metrics).toMatch(/^session_pager_follow_admission_max_in_flight 3$/m);
    expect(await stop(p)).toBe(0);
  });

  it('parses the gate sizes from flags and variables, and refuses a bad one naming it', () => {
    expect(parseServeArgs(['--max-in-flight', '12', '--max-follows-in-flight', '6'], {})).toMatchObject({ maxInFlight: 12, maxFollowsInFlight: 6 });
    expect(parseServeArgs([], { SESSION_PAGER_MAX_IN_FLIGHT: '7', SESSION_PAGER_MAX_FOLLOWS_IN_FLIGHT: '2' })).toMatchObject({ maxInFlight: 7, maxFollowsInFlight: 2 });
    expect(parseServeArgs(['--max-in-flight', '3'], { SESSION_PAGER_MAX_IN_FLIGHT: '7' })).toMatchObject({ maxInFlight: 3 });
    // The connection limit (server/connection-limit.ts): flag or variable, the flag wins.
    expect(parseServeArgs(['--max-connections', '64'], {})).toMatchObject({ maxConnections: 64 });
    expect(parseServeArgs([], { SESSION_PAGER_MAX_CONNECTIONS: '32' })).toMatchObject({ maxConnections: 32 });
    expect(parseServeArgs(['--max-connections', '8'], { SESSION_PAGER_MAX_CONNECTIONS: '32' })).toMatchObject({ maxConnections: 8 });
    expect(parseServeArgs([], {}).maxConnections).toBeUndefined();
    expect(() => parseServeArgs(['--max-connections', '0'], {})).toThrow(/^--max-connections must be an integer >= 1/);
    // Unset (or empty): the per-thread defaults, decided once the workers are known.
    const none = parseServeArgs([], { SESSION_PAGER_MAX_IN_FLIGHT: '' });
    expect(none.maxInFlight).toBeUndefined();
    expect(none.maxFollowsInFlight).toBeUndefined();
    expect(() => parseServeArgs(['--max-follows-in-flight', '0'], {})).toThrow(/^--max-follows-in-flight must be an integer >= 1/);
    expect(() => parseServeArgs(['--max-in-flight', '1.5'], {})).toThrow(/^--max-in-flight must be an integer >= 1, got "1\.5"/);
    expect(() => parseServeArgs([], { SESSION_PAGER_MAX_IN_FLIGHT: 'abc' })).toThrow(/^SESSION_PAGER_MAX_IN_FLIGHT must be an integer >= 1, got "abc"/);
    expect(() => parseServeArgs([], { SESSION_PAGER_MAX_FOLLOWS_IN_FLIGHT: '-1' })).toThrow(/^SESSION_PAGER_MAX_FOLLOWS_IN_FLIGHT must be an integer >= 1, got "-1"/);
    // The other admission variables, once ignored when bad, refuse too.
    expect(() => parseServeArgs([], { SESSION_PAGER_QUEUE_FACTOR: 'abc' })).toThrow(/^SESSION_PAGER_QUEUE_FACTOR must be a number > 0, got "abc"/);
    expect(() => parseServeArgs([], { SESSION_PAGER_QUEUE_FACTOR: '0' })).toThrow(/^SESSION_PAGER_QUEUE_FACTOR must be a number > 0/);
    expect(() => parseServeArgs([], { SESSION_PAGER_MAX_QUEUE: '1.5' })).toThrow(/^SESSION_PAGER_MAX_QUEUE must be an integer >= 0, got "1\.5"/);
    expect(() => parseServeArgs([], { SESSION_PAGER_SHED_DELAY_MS: '-1' })).toThrow(/^SESSION_PAGER_SHED_DELAY_MS must be a number >= 0/);
    expect(() => parseServeArgs([], { SESSION_PAGER_FOLLOW_SHED_UTILIZATION: '2' })).toThrow(/^SESSION_PAGER_FOLLOW_SHED_UTILIZATION must be a number >= 0 and <= 1/);
    // The lag guard's bound, as the follow sheds' bounds: 0 turns it off (the spawned-server test helpers do).
    expect(admissionFromEnv({ SESSION_PAGER_MAX_EVENT_LOOP_LAG_MS: '0', SESSION_PAGER_FOLLOW_SHED_MS: '0' })).toEqual({ maxEventLoopLagMs: 0, followShedFromMs: 0 });
    expect(admissionFromEnv({ SESSION_PAGER_MAX_EVENT_LOOP_LAG_MS: '750' })).toEqual({ maxEventLoopLagMs: 750 });
    expect(() => parseServeArgs([], { SESSION_PAGER_MAX_EVENT_LOOP_LAG_MS: 'abc' })).toThrow(/^SESSION_PAGER_MAX_EVENT_LOOP_LAG_MS must be a number >= 0, got "abc"/);
    expect(() => parseServeArgs([], { SESSION_PAGER_ADMISSION: 'of' })).toThrow(/^SESSION_PAGER_ADMISSION must be on or off, got "of"/);
    expect(parseServeArgs([], { SESSION_PAGER_QUEUE_FACTOR: '0.5', SESSION_PAGER_MAX_QUEUE: '0', SESSION_PAGER_SHED_DELAY_MS: '0', SESSION_PAGER_ADMISSION: 'on' }).port).toBe(8080);
  });

  it('refuses a bad value of every other tuning variable, naming it (they were once ignored: the server ran on the defaults)', () => {
    const bad: [Record<string, string>, RegExp][] = [
      [{ SESSION_PAGER_REQUEST_TIMEOUT_MS: '30s' }, /^SESSION_PAGER_REQUEST_TIMEOUT_MS must be an integer >= 1, got "30s"$/],
      [{ SESSION_PAGER_REQUEST_TIMEOUT_MS: '0' }, /^SESSION_PAGER_REQUEST_TIMEOUT_MS must be an integer >= 1, got "0"$/],
      [{ SESSION_PAGER_INLINE_SLICE_BYTES: '256k' }, /^SESSION_PAGER_INLINE_SLICE_BYTES must be an integer >= 0, got "256k"$/],
      [{ SESSION_PAGER_INLINE_SLICE_BYTES: '-1' }, /^SESSION_PAGER_INLINE_SLICE_BYTES must be an integer >= 0, got "-1"$/],
      [{ SESSION_PAGER_READY_DELAY_MS: 'soon' }, /^SESSION_PAGER_READY_DELAY_MS must be a number >= 0 and <= 600000, got "soon"$/],
      [{ SESSION_PAGER_HEAP_GROWING_PERCENT: '50%' }, /^SESSION_PAGER_HEAP_GROWING_PERCENT must be an integer >= 0 and <= 10000, got "50%"$/],
      [{ SESSION_PAGER_INCREMENTAL_MARKING: 'true' }, /^SESSION_PAGER_INCREMENTAL_MARKING must be 0 or 1, got "true"$/],
      [{ SESSION_PAGER_JIT_WARMUP: 'off' }, /^SESSION_PAGER_JIT_WARMUP must be 0 or 1, got "off"$/],
      [{ SESSION_PAGER_PAGE_WARMUP: 'no' }, /^SESSION_PAGER_PAGE_WARMUP must be 0 or 1, got "no"$/],
      [{ SESSION_PAGER_BINARY_WARMUP: '2' }, /^SESSION_PAGER_BINARY_WARMUP must be 0 or 1, got "2"$/],
    ];
    for (const [env, message] of bad) expect(() => parseServeArgs([], env), JSON.stringify(env)).toThrow(message);
    // Good values, and unset or empty ones (the defaults), parse.
    const good = { SESSION_PAGER_REQUEST_TIMEOUT_MS: '1500', SESSION_PAGER_INLINE_SLICE_BYTES: '0', SESSION_PAGER_READY_DELAY_MS: '250', SESSION_PAGER_HEAP_GROWING_PERCENT: '300', SESSION_PAGER_INCREMENTAL_MARKING: '1', SESSION_PAGER_JIT_WARMUP: '0', SESSION_PAGER_PAGE_WARMUP: ' 1 ', SESSION_PAGER_BINARY_WARMUP: '' };
    expect(parseServeArgs([], good).port).toBe(8080);
  });

  it('a bad gate size, flag or variable, refuses to start: one line naming it on stderr, exit 2 (a usage error), nothing served', async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['--max-follows-in-flight', '0'], {}, /--max-follows-in-flight must be an integer >= 1/],
      [['--max-follows-in-flight=-1'], {}, /--max-follows-in-flight must be an integer >= 1, got "-1"/],
      // As a separate word, "-1" reads as an option: refused too, naming the flag.
      [['--max-follows-in-flight', '-1'], {}, /Option '--max-follows-in-flight' argument is ambiguous/],
      [['--max-in-flight', '1.5'], {}, /--max-in-flight must be an integer >= 1, got "1\.5"/],
      [['--max-in-flight', 'abc'], {}, /--max-in-flight must be an integer >= 1, got "abc"/],
      [[], { SESSION_PAGER_MAX_FOLLOWS_IN_FLIGHT: 'abc' }, /SESSION_PAGER_MAX_FOLLOWS_IN_FLIGHT must be an integer >= 1, got "abc"/],
      [[], { SESSION_PAGER_MAX_IN_FLIGHT: '0' }, /SESSION_PAGER_MAX_IN_FLIGHT must be an integer >= 1/],
      [[], { SESSION_PAGER_QUEUE_FACTOR: 'abc' }, /SESSION_PAGER_QUEUE_FACTOR must be a number > 0, got "abc"/],
      [[], { SESSION_PAGER_REQUEST_TIMEOUT_MS: '30s' }, /SESSION_PAGER_REQUEST_TIMEOUT_MS must be an integer >= 1, got "30s"/],
    ];
    const runs = cases.map(([args, env]) => serve(['--data', ts.dir, '--port', '0', ...args], env));
    for (const [i, p] of runs.entries()) {
      const [args, env, message] = cases[i]!;
      const what = JSON.stringify({ args, env });
      expect(await p.exited, what).toBe(2);
      const lines = p.err().trim().split('\n');
      expect(lines, what).toHaveLength(1);
      expect(lines[0], what).toMatch(/^session-pager serve: /);
      expect(lines[0], what).toMatch(message);
      expect(p.out(), what).toBe('');
    }
  });
});

it('leaves nothing in its temp folder (the warm-ups removed their sessions)', async () => {
  // Defined last, so it runs last in this file: every server above has exited.
  expect(await readdir(tmp)).toEqual([]);
});
