#!/usr/bin/env node
// Capacity and overload (issue 15): `session-pager loadtest` (the load
// harness, a process of its own) against fresh server processes side by
// side: this service's `serve` and the SQLite peer's HTTP server
// (bench/peer-server.mjs, 2 worker threads), over the same sessions (the
// random-page workload of bench/peer-bench.mjs). Random pages at 16, 64 and
// 256 connections against both, alternating which goes first; the attach
// scenario (follow) against the service alone (the peer has no follow
// route). Goodput, p99 of what was admitted, 503s, the server's RSS, the
// pages right after the load. Writes docs/bench-capacity.svg and
// docs/bench-capacity.json; prints a table.
//
//   node bench/capacity.mjs [--data DIR] [--db FILE] [--prefix pb-many-] [--duration S]
//        [--connections 16,64,256] [--scenarios random,attach] [--servers pager,peer]
//        [--loadtest-root CHECKOUT] [--no-write]
//
// --data/--db default to bench/peer-bench.mjs's quick workload (run it once first).
// Each step also gives the CPU the server used over it (all its threads) and the load generator's
// (the loadtest process, its whole life: start, load, the pages after it), both in cores over the
// step and the generator's ms a request, and the rest of the machine's (others' cores, from
// /proc/stat): they share the machine's cores, so a step's goodput moves with what the generator
// and the others take (docs/decisions.md, cap20). --loadtest-root runs another built checkout's
// `session-pager loadtest` against this checkout's server (an A/B of the generator alone);
// --no-write prints the table without writing docs/bench-capacity.*.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseScriptArgs } from './args.mjs';
import { machineBusyMs } from './others-cpu.mjs';
import { cpuSecondsOf, linkedDataDir, startPeer, startService } from './servers.mjs';
import { lineChart, runNote } from './svg-plot.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/sp-peer-bench' },
    db: { type: 'string' },
    prefix: { type: 'string', default: 'pb-many-' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '16,64,256' },
    scenarios: { type: 'string', default: 'random,attach' },
    servers: { type: 'string', default: 'pager,peer' },
    'loadtest-root': { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
const bin = join(root, 'bin/session-pager.js');
const loadtestBin = join(values['loadtest-root'] === undefined ? root : resolve(values['loadtest-root']), 'bin/session-pager.js');
const token = 'capacity-token-0123456789';
const conns = values.connections.split(',').map(Number);
const scenarios = values.scenarios.split(',');
const wanted = values.servers.split(',');
const db = values.db ?? join(values.data, 'peer-many.db');

const ids = readdirSync(join(values.data, 'sessions'))
  .filter((f) => f.startsWith(values.prefix) && f.endsWith('.events'))
  .map((f) => f.slice(0, -'.events'.length));
if (ids.length === 0) throw new Error(`no sessions ${values.prefix}* in ${values.data} (run bench/peer-bench.mjs first)`);
const dir = linkedDataDir(values.data, ids, join(values.data, 'capacity'));

// seed: the step's own (both servers alike). The steps run on one server process each: a step that
// drew an earlier step's random pages found them in the service's prepared-page cache (a page
// built twice is admitted), hits the peer cannot have.
/** CPU seconds of this process's children that have ended and been waited for (/proc/self/stat cutime + cstime). */
function endedChildrenCpuSeconds() {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[13]) + Number(f[14])) / 100; // clock ticks, USER_HZ = 100 on Linux
}

function loadtest(url, scenario, c, seed) {
  return new Promise((res, rej) => {
    const ch = spawn(process.execPath, [loadtestBin, 'loadtest', '--url', url, '--scenario', scenario, '--duration', values.duration, '--connections', String(c), '--hold', '2000', '--seed', String(seed), '--json'], { env: { ...process.env, SESSION_PAGER_TOKEN: token } });
    let out = '';
    let err = '';
    ch.stdout.on('data', (d) => (out += d));
    ch.stderr.on('data', (d) => {
      err += d;
      process.stderr.write(d);
    });
    ch.on('exit', (code) => (code === 0 ? res(JSON.parse(out)) : rej(new Error(`loadtest ${scenario} ${c}: ${err}`))));
  });
}

const servers = {};
const results = [];
try {
  if (wanted.includes('pager')) servers.pager = await startService(dir, token);
  if (wanted.includes('peer')) servers.peer = await startPeer(db, token);
  for (const [si, s] of scenarios.entries()) {
    for (const [k, c] of conns.entries()) {
      // The peer serves pages only: no follow, so no attach.
      const order = Object.keys(servers).filter((n) => s === 'random' || n === 'pager');
      if (k % 2 === 1) order.reverse();
      for (const n of order) {
        const server0 = cpuSecondsOf(servers[n].pid);
        const gen0 = endedChildrenCpuSeconds();
        const busy0 = machineBusyMs();
        const r = await loadtest(servers[n].url, s, c, 1 + si * 100 + k);
        // The loadtest has exited and been waited for (its exit event): its CPU is in this process's children's.
        const cpu = { serverS: cpuSecondsOf(servers[n].pid) - server0, loadtestS: endedChildrenCpuSeconds() - gen0 };
        // The rest of the machine: its busy time less those two (this script's own and the idle other server's are in it).
        cpu.othersS = Math.max(0, (machineBusyMs() - busy0) / 1000 - cpu.serverS - cpu.loadtestS);
        results.push({ server: n, ...r, serverPeakRssMB: servers[n].peakRssMB(), cpu });
      }
    }
  }
} finally {
  await Promise.all(Object.values(servers).map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
}

const f = (x) => (Number.isFinite(x) ? (x >= 100 ? Math.round(x) : x.toFixed(1)) : '–');
const name = (n) => (n === 'pager' ? 'session-pager' : 'SQLite peer');
const lines = ['| server | scenario | connections | req/s | 2xx/s | 503 share | other errors | p50 ms | p99 ms (2xx) | p99.9 ms (2xx) | server RSS peak MB (metrics / VmHWM so far) | pages after load ms | server cores | loadtest cores | others cores | loadtest ms a request |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'];
for (const r of results) {
  const shed = r.errorsByCode.overloaded ?? 0;
  const other = Object.entries(r.errorsByCode).filter(([k]) => k !== 'overloaded').map(([k, v]) => `${k} ${v}`).join(', ') || '0';
  lines.push(`| ${name(r.server)} | ${r.scenario} | ${r.connections} | ${f(r.requestsPerSec)} | ${f(r.goodputPerSec)} | ${((100 * shed) / Math.max(1, r.requests)).toFixed(1)}% | ${other} | ${f(r.latencyMs.p50)} | ${f(r.okLatencyMs.p99)} | ${f(r.okLatencyMs.p999)} | ${r.serverRssMb.peak} / ${f(r.serverPeakRssMB)} | ${r.afterLoad.pagesMs.map(f).join(', ')} | ${(r.cpu.serverS / r.durationS).toFixed(2)} | ${(r.cpu.loadtestS / r.durationS).toFixed(2)} | ${(r.cpu.othersS / r.durationS).toFixed(2)} | ${((1000 * r.cpu.loadtestS) / Math.max(1, r.requests)).toFixed(2)} |`);
}
process.stdout.write(lines.join('\n') + '\n');
if (!values['no-write']) {
  writeFileSync(join(root, 'docs/bench-capacity.json'), JSON.stringify(results, null, 1) + '\n');
  const series = [];
  for (const n of Object.keys(servers)) {
    for (const s of scenarios) {
      const rs = results.filter((r) => r.scenario === s && r.server === n);
      if (rs.length === 0) continue;
      series.push({ name: `${name(n)} ${s} 2xx/s`, points: rs.map((r) => [r.connections, r.goodputPerSec]) });
      series.push({ name: `${name(n)} ${s} p99 ms`, dashed: true, points: rs.map((r) => [r.connections, r.okLatencyMs.p99]) });
    }
  }
  writeFileSync(join(root, 'docs/bench-capacity.svg'), lineChart({ title: 'Goodput and p99 (2xx) against connections: loadtest vs fresh servers, 2 workers each', note: runNote(`${values.duration} s a step`), xLabel: 'connections (log)', yLabel: '2xx/s and p99 ms (log)', logX: true, logY: true, series }));
  process.stderr.write('wrote docs/bench-capacity.svg, docs/bench-capacity.json\n');
}
