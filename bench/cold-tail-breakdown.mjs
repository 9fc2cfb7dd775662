#!/usr/bin/env node
// Where the cold tail page's time goes over HTTP (issue 12: "identity cold
// tail page at least 300x faster than the reference reader"), builds side
// by side: for each round and build (alternating), a fresh `serve` of that
// build's checkout, warmed (/readyz 200) and left idle one second, then one
// GET of the 50-message tail page (identity, a fresh connection), timed on
// the client to the response's first byte and to its last; then the
// server's own figures for that one page from /metrics (the store's phases,
// PageBuffer.timing: plan, read and decode of the slowest worker, pool =
// the rest of the pool's time: queueing, messaging, moving results, and
// assemble; and the request's duration as fastify saw it).
//
//   node bench/cold-tail-breakdown.mjs --roots A[,B...] [--data DIR] [--session bench-5m[,bench-600k]] [--rounds N] [--workers N]
//
// Derived per page: http_in = request duration - store total (routing,
// admission, headers, the write handed to the socket); wire = client's last
// byte - request duration (connection, request parse before fastify's
// clock, transfer of the body). Prints a markdown table of medians.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseScriptArgs } from './args.mjs';
import { freePort } from './servers.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    roots: { type: 'string' },
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    session: { type: 'string', default: 'bench-5m,bench-600k' },
    rounds: { type: 'string', default: '5' },
    workers: { type: 'string', default: '2' },
  },
});
if (values.roots === undefined) throw new Error('--roots A[,B...] (checkouts with a built dist/)');
const roots = values.roots.split(',').map((r) => resolve(r));
const sessions = values.session.split(',');
const rounds = Number(values.rounds);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));


/** One GET on a fresh connection: status, body, ms to the first byte of the response and to its last. */
function get(port, path) {
  return new Promise((res) => {
    const t0 = performance.now();
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, headers: { 'accept-encoding': 'identity' } }, (r) => {
      const first = performance.now() - t0;
      const chunks = [];
      r.on('data', (c) => chunks.push(c));
      r.on('end', () => res({ status: r.statusCode, body: Buffer.concat(chunks), firstMs: first, ms: performance.now() - t0 }));
    });
    req.on('error', () => res({ status: 0, body: Buffer.alloc(0), firstMs: 0, ms: performance.now() - t0 }));
  });
}

/** Sums of the page-phase histogram and the page route's request duration (ms): one page built, so its own figures. */
function pageFigures(text) {
  const out = {};
  for (const m of text.matchAll(/^session_pager_page_phase_seconds_sum\{phase="(\w+)"\} ([\d.e+-]+)$/gm)) out[m[1]] = Number(m[2]) * 1000;
  const d = /^session_pager_http_request_duration_seconds_sum\{[^}]*route="\/v1\/sessions\/:id\/page"[^}]*\} ([\d.e+-]+)$/m.exec(text);
  out.request = d === null ? NaN : Number(d[1]) * 1000;
  return out;
}

async function run(root, session) {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'bin/session-pager.js'), 'serve', '--data', values.data, '--port', String(port), '--workers', values.workers, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((r) => child.on('exit', r));
  try {
    const t0 = performance.now();
    for (;;) {
      if (child.exitCode !== null) throw new Error(`serve exited: ${err}`);
      if ((await get(port, '/readyz')).status === 200) break;
      if (performance.now() - t0 > 120_000) throw new Error('serve was not ready within 120 s');
      await sleep(5);
    }
    await sleep(1000);
    const page = await get(port, `/v1/sessions/${session}/page?maxMessages=50`);
    if (page.status !== 200) throw new Error(`page ${session}: HTTP ${page.status} ${page.body.toString().slice(0, 200)}`);
    const metrics = await get(port, '/metrics');
    const f = pageFigures(metrics.body.toString());
    return { firstMs: page.firstMs, ms: page.ms, bytes: page.body.length, ...f, httpIn: f.request - f.total, wire: page.ms - f.request };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

const res = new Map();
const load = [loadavg()[0]];
for (let i = 0; i < rounds; i++) {
  for (const session of sessions) {
    const order = i % 2 === 0 ? roots : [...roots].reverse();
    for (const root of order) {
      const key = `${root}\t${session}`;
      if (!res.has(key)) res.set(key, []);
      res.get(key).push(await run(root, session));
    }
  }
  load.push(loadavg()[0]);
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cols = ['ms', 'firstMs', 'request', 'total', 'plan', 'read', 'decode', 'pool', 'assemble', 'httpIn', 'wire'];
const lines = [`Run ${new Date().toISOString()}, ${rounds} rounds, builds alternating, fresh server each; 1-minute load ${load.map((l) => l.toFixed(1)).join(' → ')}. Medians, ms (client: last byte, first byte; server: request duration; store: total and its phases).`, ''];
lines.push(`| build | session | page bytes | ${cols.join(' | ')} |`);
lines.push(`|---|---|---|${cols.map(() => '---').join('|')}|`);
for (const [key, rs] of res) {
  const [root, session] = key.split('\t');
  lines.push(`| ${root} | ${session} | ${rs[0].bytes.toLocaleString('en')} | ${cols.map((c) => med(rs.map((r) => r[c])).toFixed(1)).join(' | ')} |`);
}
lines.push('');
for (const [key, rs] of res) lines.push(`${key.replace('\t', ' ')}: last byte ${rs.map((r) => r.ms.toFixed(1)).join(', ')}; decode ${rs.map((r) => r.decode.toFixed(1)).join(', ')}`);
process.stdout.write(lines.join('\n') + '\n');
