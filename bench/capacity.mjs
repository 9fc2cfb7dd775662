#!/usr/bin/env node
// Capacity and overload (issue 15): `session-pager loadtest` (its own
// process) against a fresh `serve` process, random-page and attach
// scenarios at 16, 64 and 256 connections; goodput, p99 of what was
// admitted, 503s, RSS, and the pages right after the load. Writes
// docs/bench-capacity.svg and docs/bench-capacity.json; prints a table.
//
//   node bench/capacity.mjs [--data DIR] [--duration S] [--connections 16,64,256] [--scenarios random,attach]
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { lineChart } from './svg-plot.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { data: { type: 'string', default: '/tmp/sp-peer-bench' }, duration: { type: 'string', default: '8' }, connections: { type: 'string', default: '16,64,256' }, scenarios: { type: 'string', default: 'random,attach' } } });
const bin = join(root, 'bin/session-pager.js');
const token = 'capacity-token-0123456789';
const conns = values.connections.split(',').map(Number);
const scenarios = values.scenarios.split(',');

const srv = spawn(process.execPath, [bin, 'serve', '--data', values.data, '--port', '0', '--workers', '2', '--log-level', 'warn'], { env: { ...process.env, SESSION_PAGER_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
let banner = '';
srv.stdout.on('data', (d) => (banner += d));
srv.stderr.on('data', (d) => (banner += d));
const url = await new Promise((res, rej) => {
  const t = setInterval(() => { const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(banner); if (m) { clearInterval(t); res(m[1]); } }, 100);
  setTimeout(() => rej(new Error(`serve did not start: ${banner}`)), 60_000);
});
function loadtest(scenario, c) {
  return new Promise((res, rej) => {
    const ch = spawn(process.execPath, [bin, 'loadtest', '--url', url, '--scenario', scenario, '--duration', values.duration, '--connections', String(c), '--hold', '2000', '--json'], { env: { ...process.env, SESSION_PAGER_TOKEN: token } });
    let out = '';
    let err = '';
    ch.stdout.on('data', (d) => (out += d));
    ch.stderr.on('data', (d) => { err += d; process.stderr.write(d); });
    ch.on('exit', (code) => (code === 0 ? res(JSON.parse(out)) : rej(new Error(`loadtest ${scenario} ${c}: ${err}`))));
  });
}
const results = [];
try {
  for (const s of scenarios) for (const c of conns) results.push(await loadtest(s, c));
} finally {
  srv.kill('SIGTERM');
}
const f = (x) => (Number.isFinite(x) ? (x >= 100 ? Math.round(x) : x.toFixed(1)) : '–');
const lines = ['| scenario | connections | req/s | 2xx/s | 503 share | other errors | p50 ms | p99 ms (2xx) | p99.9 ms (2xx) | server RSS peak MB | pages after load ms |', '|---|---|---|---|---|---|---|---|---|---|---|'];
for (const r of results) {
  const shed = r.errorsByCode.overloaded ?? 0;
  const other = Object.entries(r.errorsByCode).filter(([k]) => k !== 'overloaded').map(([k, v]) => `${k} ${v}`).join(', ') || '0';
  lines.push(`| ${r.scenario} | ${r.connections} | ${f(r.requestsPerSec)} | ${f(r.goodputPerSec)} | ${((100 * shed) / Math.max(1, r.requests)).toFixed(1)}% | ${other} | ${f(r.latencyMs.p50)} | ${f(r.okLatencyMs.p99)} | ${f(r.okLatencyMs.p999)} | ${r.serverRssMb.peak} | ${r.afterLoad.pagesMs.map(f).join(', ')} |`);
}
process.stdout.write(lines.join('\n') + '\n');
writeFileSync(join(root, 'docs/bench-capacity.json'), JSON.stringify(results, null, 1) + '\n');
const series = [];
for (const s of scenarios) {
  const rs = results.filter((r) => r.scenario === s);
  series.push({ name: `${s} 2xx/s`, points: rs.map((r) => [r.connections, r.goodputPerSec]) });
  series.push({ name: `${s} p99 ms (2xx)`, dashed: true, points: rs.map((r) => [r.connections, r.okLatencyMs.p99]) });
}
writeFileSync(join(root, 'docs/bench-capacity.svg'), lineChart({ title: 'Goodput and p99 against connections (loadtest vs a fresh serve, 2 workers)', xLabel: 'connections (log)', yLabel: '2xx/s and p99 ms (log)', logX: true, logY: true, series }));
process.stderr.write('wrote docs/bench-capacity.svg, docs/bench-capacity.json\n');
