#!/usr/bin/env node
// Where a fresh server's first HTTP page goes, next to the pages after it (issue 12: the
// identity cold tail page over HTTP is ~3x the same page served again):
//
//   node bench/first-page-trace.mjs [--data DIR] [--runs N] [--session ID] [--roots DIR,DIR]
//
// Per run and root (alternating), a fresh `session-pager serve` (2 workers), ready, then idle
// for 1 s (as bench/serve-bench.mjs asks its cold page), then four GETs of identity pages,
// each on a fresh connection, 200 ms apart (with a GET of /metrics between them):
//   1. cold:       the 50-message tail page, the first page this process builds;
//   2. hit:        the same page again: the prepared-page cache answers it, nothing is built;
//   3. built warm: the 49-message tail page: built again (another cache key), by a warm process;
//   4. hit again:  that page again.
// For each: to headers (request start to the response's headers: routing plus the build), to
// last byte, and when the page was built, its build phases from the server's own
// session_pager_page_phase_seconds histogram (/metrics; its sums' increase over that request).
// The "hit" pages are what serve-bench's --warm-pages measures: delivery alone.
// Prints a markdown table (medians per root and page) on stdout, raw figures as JSON on stderr.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { join, resolve } from 'node:path';
import { loadavg } from 'node:os';
import { median, parseScriptArgs } from './args.mjs';
import { freePort, getOnce } from './servers.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    runs: { type: 'string', default: '3' },
    session: { type: 'string', default: 'bench-5m' },
    roots: { type: 'string', default: '' },
  },
});
const roots = values.roots === '' ? [resolve(new URL('..', import.meta.url).pathname)] : values.roots.split(',').map((r) => resolve(r));
const runs = Number(values.runs);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One GET on a fresh connection: ms to the headers and to the last byte. */
function timedGet(port, path) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, headers: { 'accept-encoding': 'identity' } }, (r) => {
      const headMs = performance.now() - t0;
      let bytes = 0;
      r.on('data', (c) => (bytes += c.length));
      r.on('end', () => res({ status: r.statusCode, bytes, headMs, endMs: performance.now() - t0 }));
    });
    req.on('error', rej);
  });
}

/** The page phase histogram's sums (ms) by phase, from /metrics. */
async function phaseSums(port) {
  const text = await new Promise((res, rej) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (r) => {
      let s = '';
      r.setEncoding('utf8');
      r.on('data', (c) => (s += c));
      r.on('end', () => res(s));
    }).on('error', rej);
  });
  const out = {};
  for (const m of text.matchAll(/^session_pager_page_phase_seconds_sum\{phase="(\w+)"\} ([\d.e+-]+)$/gm)) out[m[1]] = Number(m[2]) * 1000;
  return out;
}

const PAGES = [
  { name: 'cold', maxMessages: 50 },
  { name: 'hit', maxMessages: 50 },
  { name: 'built warm', maxMessages: 49 },
  { name: 'hit again', maxMessages: 49 },
];

async function serverRun(root) {
  const port = await freePort();
  const child = spawn(join(root, 'bin/session-pager.js'), ['serve', '--data', values.data, '--port', String(port), '--workers', '2', '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((r) => child.on('exit', r));
  try {
    const t0 = performance.now();
    while ((await getOnce(port, '/readyz')).status !== 200) {
      if (child.exitCode !== null) throw new Error(`serve exited: ${err}`);
      if (performance.now() - t0 > 120_000) throw new Error('serve was not ready within 120 s');
      await sleep(2);
    }
    await sleep(1000);
    const out = [];
    for (const [j, p] of PAGES.entries()) {
      // Before the first page nothing was built (and the cold page is asked as serve-bench asks it: first).
      const before = j === 0 ? {} : await phaseSums(port);
      if (j > 0) await sleep(200);
      const r = await timedGet(port, `/v1/sessions/${values.session}/page?maxMessages=${p.maxMessages}`);
      if (r.status !== 200) throw new Error(`page: HTTP ${r.status}`);
      const after = await phaseSums(port);
      const phases = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]));
      out.push({ page: p.name, ...r, phases: (phases.total ?? 0) > 0 ? phases : null });
      await sleep(200);
    }
    return out;
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const loadBefore = load();
const raw = roots.map(() => []);
for (let i = 0; i < runs; i++) for (const [k, root] of roots.entries()) raw[k].push(await serverRun(root));
const f = (x) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(1));
const lines = [`Load before ${loadBefore}, after ${load()}; ${runs} fresh servers per root, medians.`, ''];
lines.push('| root | page | to headers ms | to last byte ms | delivery (headers to last byte) ms | build phases ms (plan / read / decode / pool / assemble / total) |');
lines.push('|---|---|---|---|---|---|');
for (const [k, root] of roots.entries()) {
  for (const [j, p] of PAGES.entries()) {
    const rs = raw[k].map((run) => run[j]);
    const built = rs.filter((r) => r.phases !== null);
    const ph = built.length === 0 ? '(not built: cache hit)' : ['plan', 'read', 'decode', 'pool', 'assemble', 'total'].map((n) => f(median(built.map((r) => r.phases[n] ?? NaN)))).join(' / ');
    lines.push(`| ${root} | ${p.name} | ${f(median(rs.map((r) => r.headMs)))} | ${f(median(rs.map((r) => r.endMs)))} | ${f(median(rs.map((r) => r.endMs - r.headMs)))} | ${ph} |`);
  }
}
console.log(lines.join('\n'));
process.stderr.write(`${JSON.stringify({ roots, raw })}\n`);
