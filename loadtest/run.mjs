#!/usr/bin/env node
/**
 * Load test: autocannon against a real session-pager listening on 127.0.0.1
 * (an ephemeral port, never another host), on a generated corpus in a temp
 * directory that is removed afterwards. Bounded: each scenario runs for
 * --duration seconds (max 60) with --connections clients (max 200).
 *
 *   npm run build && node loadtest/run.mjs [--events 200000] [--tail 20000]
 *        [--duration 5] [--connections 10] [--workers N] [--scenario NAME]
 *
 * Prints one line per scenario: requests/s, latency p50/p99, bytes/s,
 * non-2xx answers (503 = shed by the overload guard), errors.
 */
import autocannon from 'autocannon';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseScriptArgs } from '../bench/args.mjs';
import { randomBytes } from 'node:crypto';

const dist = new URL('../dist/main/', import.meta.url);
const { openStore } = await import(new URL('store.js', dist).href);
const { buildServer } = await import(new URL('server/index.js', dist).href);
const { generateSession } = await import(new URL('gen/generate.js', dist).href);

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    events: { type: 'string', default: '200000' },
    tail: { type: 'string', default: '20000' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '10' },
    workers: { type: 'string' },
    scenario: { type: 'string' },
  },
});
const clamp = (v, lo, hi, name) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < lo || n > hi) throw new Error(`--${name} must be an integer in [${lo}, ${hi}]`);
  return n;
};
const events = clamp(values.events, 1000, 5_000_000, 'events');
const tail = clamp(values.tail, 0, Math.floor(events / 2), 'tail');
const duration = clamp(values.duration, 1, 60, 'duration');
const connections = clamp(values.connections, 1, 200, 'connections');
const workers = values.workers === undefined ? undefined : clamp(values.workers, 1, 64, 'workers');

const dir = await mkdtemp(join(tmpdir(), 'sp-loadtest-'));
let store;
let app;
try {
  let t = Date.now();
  const long = await generateSession(dir, { id: 'lt-long', events, tailEvents: tail, seed: 5 });
  for (let k = 0; k < 20; k++) await generateSession(dir, { id: `lt-small-${k}`, events: 2000, seed: 6, stream: k });
  console.log(`corpus: ${long.events.toLocaleString('en')} + 20 x 2,000 events in ${Date.now() - t} ms (${dir})`);

  store = await openStore({ dataDir: dir, workers });
  await store.create('lt-append', {});
  const token = randomBytes(18).toString('base64url');
  app = buildServer(store, { token, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${app.server.address().port}`;
  const headers = { authorization: `Bearer ${token}` };
  const last = long.events - 1;

  let nextSeq = 0;
  const scenarios = {
    'tail-page': { requests: [{ path: '/v1/sessions/lt-long/page?maxMessages=50' }] },
    'tail-page-br': { headers: { 'accept-encoding': 'br' }, requests: [{ path: '/v1/sessions/lt-long/page?maxMessages=50' }] },
    'older-pages': {
      requests: [
        {
          setupRequest: (req) => ({ ...req, path: `/v1/sessions/lt-long/page?throughSeq=${last}&beforeSeq=${1 + Math.floor(Math.random() * last)}&maxMessages=50` }),
        },
      ],
    },
    'small-pages-many-sessions': {
      requests: [{ setupRequest: (req) => ({ ...req, path: `/v1/sessions/lt-small-${Math.floor(Math.random() * 20)}/page?maxMessages=20` }) }],
    },
    catalog: { requests: [{ path: '/v1/sessions' }] },
    // Appends must be serialized per session: one connection, one request at a time.
    append: {
      connections: 1,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => {
            const evs = [];
            for (let i = 0; i < 20; i++) evs.push({ type: 'custom/tick', seq: nextSeq + i, time: 1_700_000_000_000 + nextSeq + i, data: { i } });
            nextSeq += 20;
            return { ...req, path: '/v1/sessions/lt-append/events', headers: { ...req.headers, 'content-type': 'application/json' }, body: JSON.stringify({ events: evs }) };
          },
        },
      ],
    },
  };
  const names = values.scenario ? [values.scenario] : Object.keys(scenarios);
  for (const name of names) {
    const s = scenarios[name];
    if (s === undefined) throw new Error(`unknown scenario ${name} (one of ${Object.keys(scenarios).join(', ')})`);
    const r = await autocannon({
      url: base,
      connections: s.connections ?? connections,
      duration,
      headers: { ...headers, ...(s.headers ?? {}) },
      requests: s.requests,
    });
    console.log(
      `${name.padEnd(26)} ${String(Math.round(r.requests.average)).padStart(7)} req/s  p50 ${String(r.latency.p50).padStart(5)} ms  p99 ${String(r.latency.p99).padStart(5)} ms  ${(r.throughput.average / 1e6).toFixed(1).padStart(7)} MB/s  non-2xx ${r.non2xx}  errors ${r.errors}`,
    );
  }
  const stats = store.stats();
  console.log(`pool: ${stats.pool.threads} threads, ${stats.pool.completed} tasks, utilization ${stats.pool.utilization.toFixed(2)}; cache hits ${stats.cache.hits}, misses ${stats.cache.misses}; appended ${nextSeq} events`);
} finally {
  await app?.close();
  await store?.close();
  await rm(dir, { recursive: true, force: true });
}
