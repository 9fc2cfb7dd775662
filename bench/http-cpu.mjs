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
//        [--accept-encoding 'gzip, deflate, br, zstd']
//
// --accept-encoding: the header every request sends (default identity); a browser's is
// 'gzip, deflate, br, zstd', which the server answers in zstd.
//
// --checkout DIR serves from another built checkout (bench/peer-ab.mjs's A/B), this script's load and counting.
//
// --incremental-marking runs serve with V8's default GC (SESSION_PAGER_INCREMENTAL_MARKING=1);
// --perf FILE records the main thread with `perf record -g` while measured (JS frames named).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseScriptArgs } from './args.mjs';
import { linkedDataDir, startPeer, startService, threadCpuSecondsOf } from './servers.mjs';

const { values: a } = parseScriptArgs(import.meta.url, {
  options: {
    server: { type: 'string', default: 'pager' },
    connections: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '6' },
    warm: { type: 'string', default: '4' },
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
    'accept-encoding': { type: 'string', default: 'identity' },
  },
});
const root = new URL('..', import.meta.url).pathname;
const pagesFile = join(a.data, `pages-${a.workload}.json`);
const ids = [...new Set(JSON.parse(readFileSync(pagesFile, 'utf8')).map((p) => p.id))];
const token = 'bench-token-0123456789';
const nodeArgs = [...(a.perf === undefined ? [] : ['--perf-basic-prof-only-functions']), ...a['server-node-args'].split(' ').filter(Boolean)];
const dir = join(a.data, `http-cpu-${process.pid}`);
const srv =
  a.server === 'pager'
    ? await startService(linkedDataDir(a.data, ids, dir), token, { nodeArgs, env: a['incremental-marking'] ? { SESSION_PAGER_INCREMENTAL_MARKING: '1' } : {}, ...(a.checkout === undefined ? {} : { checkout: a.checkout }) })
    : await startPeer(join(a.data, `peer-${a.workload}.db`), token, { nodeArgs });
const load = (c, s) => {
  const r = spawnSync(process.execPath, [join(root, 'bench/http-load.mjs'), '--url', srv.url, '--token', token, '--pages', pagesFile, '--random', '--connections', c, '--seconds', s, '--accept-encoding', a['accept-encoding']], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`http-load failed: ${r.stderr}`);
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
  load('1', a.warm);
  const t0 = threads();
  const perf = a.perf === undefined ? null : spawn('perf', ['record', '-F', '1999', '-g', a['perf-all'] ? '-p' : '-t', String(srv.pid), '-o', a.perf, '--', 'sleep', a.seconds], { stdio: 'ignore' });
  const r = load(a.connections, a.seconds);
  if (perf !== null) await new Promise((res) => perf.once('exit', res));
  const t1 = threads();
  let all = 0;
  for (const k of Object.keys(t1)) all += t1[k] - (t0[k] ?? 0);
  const main = t1[srv.pid] - t0[srv.pid];
  const round = (x) => Math.round(x * 1000) / 1000;
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
    `${JSON.stringify({ server: a.server + (a['incremental-marking'] ? ' (incremental marking)' : ''), connections: Number(a.connections), acceptEncoding: a['accept-encoding'], okPerSec: round(r.okPerSec), p50: r.p50, p99: r.p99, non2xx: r.requests - (r.byStatus[200] ?? 0), mainCpuMsPerRequest: round(main / r.requests), allCpuMsPerRequest: round(all / r.requests), peakRssMB: Math.round(srv.peakRssMB()) })}\n`,
  );
} finally {
  await srv.stop();
  rmSync(dir, { recursive: true, force: true });
}
