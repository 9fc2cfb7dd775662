#!/usr/bin/env node
// CPU per request of a fresh server over HTTP (issue 15): a fresh `serve`
// (2 page workers) or the SQLite peer's server over the quick "many"
// workload of bench/peer-bench.mjs (run `npm run bench -- --setup-only`
// first), bench/http-load.mjs in a process of its own (random 50-message
// pages), `--warm` seconds of load, then `--seconds` measured. Prints one
// JSON line: 2xx/s, p50/p99, and the CPU milliseconds per request of the
// server's main thread and of all its threads (/proc/<pid>/task/*/stat).
//
//   node bench/http-cpu.mjs [--server pager|peer] [--connections 1] [--seconds 6] [--warm 4]
//        [--data /tmp/sp-peer-bench] [--workload many|typical] [--incremental-marking] [--perf FILE [--perf-all]]
//        [--server-node-args='--cpu-prof --cpu-prof-dir=DIR'] [--checkout DIR] [--by-thread]
//        [--generator lean|autocannon] [--pin] [--generator-node-args='--cpu-prof --cpu-prof-dir=DIR']
//        [--accept-encoding 'gzip, deflate, br, zstd'] [--warm-connections 1] [--start launcher|node]
//
// --start launcher (the default) starts serve as a command, as a user's `session-pager serve` is: with
// the launcher's settings (bin/session-pager.js: --v8-pool-size=<CPUs> on 1-3 CPUs, glibc's mmap
// threshold); --server-node-args then go in NODE_OPTIONS. --start node runs `node [args]
// bin/session-pager.js serve`, without them (the rule until the twelfth session's second round).
// The peer always starts as `node bench/peer-server.mjs`.
//
// --accept-encoding: the header every request sends (default identity); a browser's is
// 'gzip, deflate, br, zstd', which the server answers in zstd. The lean lane's body check
// compares identity bodies: it is left out for another coding.
//
// --checkout DIR serves from another built checkout (bench/peer-ab.mjs's A/B), this script's load and counting.
//
// --generator lean (the default) loads with bench/lean-load.mjs: prebuilt requests, bodies counted and
// not decoded, one 200 body in 50 kept and compared after the lane with the SQLite peer reader's page
// (a wrong answer fails the run); --generator autocannon with bench/http-load.mjs (autocannon, as
// `session-pager loadtest --scenario random` drives a server). Both print the generator's own CPU a
// request. --pin runs the server on CPU 1 and the generator on CPU 0 (taskset; both servers alike):
// an extra figure where the scheduler does not share the cores between them (docs/decisions.md).
//
// othersCores: the CPU the rest of the machine used while the lane was measured (its busy time from
// /proc/stat less the server's threads and the generator's lane), in cores (bench/others-cpu.mjs
// says why; bench/peer-ab.mjs runs a lane again when it is over --max-others).
//
// --incremental-marking runs serve with V8's default GC (SESSION_PAGER_INCREMENTAL_MARKING=1);
// --perf FILE records the main thread with `perf record -g` while measured (JS frames named).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseScriptArgs } from './args.mjs';
import { machineBusyMs, othersCores } from './others-cpu.mjs';
import { linkedDataDir, startPeer, startService, threadCpuSecondsOf } from './servers.mjs';

const { values: a } = parseScriptArgs(import.meta.url, {
  options: {
    server: { type: 'string', default: 'pager' },
    connections: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '6' },
    warm: { type: 'string', default: '4' },
    // Connections of the warm-up (default 1; bench/peer-ab.mjs warms at the measured lane's own).
    'warm-connections': { type: 'string', default: '1' },
    data: { type: 'string', default: '/tmp/sp-peer-bench' },
    // Which of peer-bench's random-page workloads: its pages file and the peer's database.
    workload: { type: 'string', default: 'many' },
    'incremental-marking': { type: 'boolean', default: false },
    perf: { type: 'string' },
    // With --perf: record every thread of the server (workers, V8's helpers, libuv), not just the main one.
    'perf-all': { type: 'boolean', default: false },
    // Flags for the server's node, e.g. a CPU profile of its threads (written as it exits on SIGTERM).
    'server-node-args': { type: 'string', default: '' },
    checkout: { type: 'string' },
    // Also print the CPU ms a request of each kind of thread (by its name in /proc: node main, workers, libuv, V8's helpers).
    'by-thread': { type: 'boolean', default: false },
    generator: { type: 'string', default: 'lean' },
    pin: { type: 'boolean', default: false },
    // Flags for the generator's node (the measured lane only), e.g. a CPU profile of the generator.
    'generator-node-args': { type: 'string', default: '' },
    'accept-encoding': { type: 'string', default: 'identity' },
    start: { type: 'string', default: 'launcher' },
    // serve's --log-level for the service (warn, as the benches always ran; info is serve's default).
    'log-level': { type: 'string', default: 'warn' },
  },
});
if (a.start !== 'launcher' && a.start !== 'node') throw new Error(`--start launcher|node, not ${a.start}`);
const root = new URL('..', import.meta.url).pathname;
const pagesFile = join(a.data, `pages-${a.workload}.json`);
const ids = [...new Set(JSON.parse(readFileSync(pagesFile, 'utf8')).map((p) => p.id))];
const token = 'bench-token-0123456789';
const nodeArgs = [...(a.perf === undefined ? [] : ['--perf-basic-prof-only-functions']), ...a['server-node-args'].split(' ').filter(Boolean)];
const dir = join(a.data, `http-cpu-${process.pid}`);
const db = join(a.data, `peer-${a.workload}.db`);
if (a.generator !== 'lean' && a.generator !== 'autocannon') throw new Error(`--generator lean|autocannon, not ${a.generator}`);
// --pin: the server's threads on CPU 1, the generator's on CPU 0.
const serverCpus = a.pin ? { cpus: '1' } : {};
const srv =
  a.server === 'pager'
    ? await startService(linkedDataDir(a.data, ids, dir), token, { nodeArgs, ...serverCpus, launcher: a.start === 'launcher', logLevel: a['log-level'], env: a['incremental-marking'] ? { SESSION_PAGER_INCREMENTAL_MARKING: '1' } : {}, ...(a.checkout === undefined ? {} : { checkout: a.checkout }) })
    : await startPeer(db, token, { nodeArgs, ...serverCpus });
const load = (c, s, measured) => {
  const script = a.generator === 'lean' ? 'bench/lean-load.mjs' : 'bench/http-load.mjs';
  // The lean lane's sampled bodies are checked against the peer reader after the measured lane.
  // The warm-up draws other pages (seed 2) than the measured lane (seed 1): none of those is in the server's page cache.
  const check = a.generator === 'lean' && measured && a['accept-encoding'] === 'identity' ? ['--check-db', db] : [];
  const genArgs = measured ? a['generator-node-args'].split(' ').filter(Boolean) : [];
  const argv = [...genArgs, join(root, script), '--url', srv.url, '--token', token, '--pages', pagesFile, '--random', '--connections', c, '--seconds', s, ...check, '--seed', measured ? '1' : '2', '--accept-encoding', a['accept-encoding']];
  const r = a.pin ? spawnSync('taskset', ['-c', '0', process.execPath, ...argv], { encoding: 'utf8' }) : spawnSync(process.execPath, argv, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${script} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
};
/** CPU ms of each live thread of the server. */
const threads = () => Object.fromEntries(Object.entries(threadCpuSecondsOf(srv.pid)).map(([t, s]) => [t, s * 1000]));
/** A thread's name in /proc (node main, workers, libuv, V8's helpers), for --by-thread. */
const nameOf = (t) => {
  try {
    return readFileSync(`/proc/${srv.pid}/task/${t}/comm`, 'utf8').trim();
  } catch {
    return '?'; // the thread ended
  }
};
try {
  load(a['warm-connections'], a.warm, false);
  const t0 = threads();
  const busy0 = machineBusyMs();
  const wall0 = performance.now();
  const perf = a.perf === undefined ? null : spawn('perf', ['record', '-F', '1999', '-g', a['perf-all'] ? '-p' : '-t', String(srv.pid), '-o', a.perf, '--', 'sleep', a.seconds], { stdio: 'ignore' });
  const r = load(a.connections, a.seconds, true);
  if (perf !== null) await new Promise((res) => perf.once('exit', res));
  const t1 = threads();
  const busy1 = machineBusyMs();
  const wall1 = performance.now();
  let all = 0;
  for (const k of Object.keys(t1)) all += t1[k] - (t0[k] ?? 0);
  const main = t1[srv.pid] - t0[srv.pid];
  const round = (x) => Math.round(x * 1000) / 1000;
  // The rest of the machine's CPU over the lane (this script's own is in it too: a few ms).
  const generatorMs = Number.isFinite(r.generatorCpuMsPerRequest) ? r.generatorCpuMsPerRequest * r.requests : 0;
  const others = othersCores(busy1 - busy0, all + generatorMs, wall1 - wall0);
  if (a['by-thread']) {
    // Threads share one name ('node'): listed by id, busiest first (the main thread's id is the pid).
    const byThread = Object.keys(t1)
      .map((k) => [k === String(srv.pid) ? 'main' : `${nameOf(k)}:${k}`, round((t1[k] - (t0[k] ?? 0)) / r.requests)])
      .filter(([, ms]) => ms > 0)
      .sort((x, y) => y[1] - x[1]);
    const byName = Object.fromEntries(byThread);
    process.stdout.write(`${JSON.stringify({ cpuMsPerRequestByThread: byName })}\n`);
  }
  process.stdout.write(
    `${JSON.stringify({ server: a.server + (a['incremental-marking'] ? ' (incremental marking)' : '') + (a.server === 'pager' && a.start === 'node' ? ' (node, no launcher)' : ''), generator: a.generator + (a.pin ? ' (pinned)' : ''), connections: Number(a.connections), acceptEncoding: a['accept-encoding'], okPerSec: round(r.okPerSec), p50: r.p50, p99: r.p99, requests: r.requests, non2xx: r.requests - (r.byStatus[200] ?? 0), mainCpuMsPerRequest: round(main / r.requests), allCpuMsPerRequest: round(all / r.requests), generatorCpuMsPerRequest: r.generatorCpuMsPerRequest, generatorSysMsPerRequest: r.generatorSysMsPerRequest, checked: r.checked ?? 0, generatorLaneMonotonicUs: r.laneMonotonicUs, othersCores: round(others), peakRssMB: Math.round(srv.peakRssMB()) })}\n`,
  );
} finally {
  await srv.stop();
  rmSync(dir, { recursive: true, force: true });
}
