#!/usr/bin/env node
// Two builds of the service against the SQLite peer on peer-bench's random
// 50-message pages (issue 15), alternating fresh processes in one run: in
// process (bench/peer-child.mjs: pages/s and p99 at 1 and 16 in flight) and
// over HTTP (bench/http-cpu.mjs: 2xx/s, p99 and CPU per request at 1 and 16
// connections; CPU per page by thread in process too, where the build's peer-child.mjs
// reports it). Each build runs its own checkout's peer-child.mjs and
// serve; the load, the counting and the peer run from this checkout's scripts. Prints one JSON line per process, then a table of
// medians and each build's ratio to the peer.
//
//   node bench/peer-ab.mjs --a /work/wt/base --b . [--rounds 3] [--workloads many,typical]
//        [--seconds 4] [--http-seconds 4] [--no-in-process] [--no-http]
//        [--a-env K=V,K=V] [--b-env K=V]     (env of that build's processes, e.g. SESSION_PAGER_INCREMENTAL_MARKING=1)
//        [--http-lanes lean,autocannon,lean-pinned] [--http-warm-connections level|N] [--http-start launcher|node]
//        [--http-log-level warn|info]       (serve's --log-level in the HTTP lanes; warn by default)
//        [--http-accept-encoding identity|'gzip, deflate, br, zstd'] (every HTTP request's; identity by default)
//        [--max-others 0.3] [--lane-retries 2] (HTTP lanes: run again when the rest of the machine took more)
//
// An HTTP lane during which the rest of the machine used more than --max-others cores (http-cpu.mjs
// othersCores: other people's work on this shared machine) is run again, up to --lane-retries times,
// for every server alike; the table counts the last try. The kernel shares the CPUs between sessions
// whatever their nice value, so one busy process elsewhere halved the SQLite peer's pages/s at 16
// connections (the "slow mode" of ~290-370 against ~560-610) and cut this server's more
// (docs/benchmarks.md, "http16 (eighteenth session)"). Each retry is logged, with the others' cores.
//
// Each HTTP lane's serve starts as a command, through the launcher a user's `session-pager serve` runs
// (--http-start launcher, the default: its V8 and glibc settings; http-cpu.mjs --start); --http-start
// node runs it as `node bin/session-pager.js`, as until the twelfth session's second round. The peer's
// server starts as before either way.
//
// Each HTTP lane's server is warmed for 2 s at the lane's own connections (--http-warm-connections level,
// the default; 1 was the rule until the twelfth session): a server warmed by one client met its
// concurrent paths (the admission queue, the batches, writes of several answers at once) first in the
// measured lane, and compiled them there: ~290-440 TurboFan compiles in the lane's first 5 s, 10-20%
// of its pages/s (docs/benchmarks.md, "proof (twelfth session)"). Both servers are warmed alike.
//
// HTTP lanes (bench/http-cpu.mjs's --generator and --pin; docs/decisions.md): `lean` (the default) is the
// capacity lane (bench/lean-load.mjs: prebuilt requests, bodies counted, sampled bodies checked against
// the peer reader after the lane); `autocannon` the harness's client (bench/http-load.mjs, ~0.6 ms of
// client CPU a page on the same cores); `-pinned` runs the server on CPU 1 and the generator on CPU 0.
//
// Needs the workloads of `node bench/peer-bench.mjs --setup-only --data DIR` (and its pages files: one
// full or --no-plots run of peer-bench writes them).
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { keyValueList, parseScriptArgs } from './args.mjs';
import { untilQuiet } from './others-cpu.mjs';

const { values: a } = parseScriptArgs(import.meta.url, {
  options: {
    a: { type: 'string' },
    b: { type: 'string', default: '.' },
    rounds: { type: 'string', default: '3' },
    workloads: { type: 'string', default: 'many,typical' },
    seconds: { type: 'string', default: '4' },
    'http-seconds': { type: 'string', default: '4' },
    data: { type: 'string', default: '/tmp/sp-peer-bench' },
    'no-in-process': { type: 'boolean', default: false },
    'no-http': { type: 'boolean', default: false },
    'a-env': { type: 'string', default: '' },
    'b-env': { type: 'string', default: '' },
    'http-lanes': { type: 'string', default: 'lean' },
    // Connections of each HTTP lane's 2 s warm-up: 'level' (the lane's own, the default) or a number.
    'http-warm-connections': { type: 'string', default: 'level' },
    'http-start': { type: 'string', default: 'launcher' },
    // serve's --log-level in the HTTP lanes (http-cpu.mjs --log-level): warn, or info (serve's default).
    'http-log-level': { type: 'string', default: 'warn' },
    // The Accept-Encoding every HTTP request sends (http-cpu.mjs --accept-encoding): identity, or a
    // browser's 'gzip, deflate, br, zstd' (both servers answer it in zstd, the peer with this service's coder).
    'http-accept-encoding': { type: 'string', default: 'identity' },
    'max-others': { type: 'string', default: '0.3' },
    'lane-retries': { type: 'string', default: '2' },
  },
});
if (a.a === undefined) throw new Error('--a DIR (a built checkout) is required');
const builds = { A: { dir: resolve(a.a), env: keyValueList(a['a-env']) }, B: { dir: resolve(a.b), env: keyValueList(a['b-env']) } };
/** This checkout: its scripts run the load, the counting and the peer. */
const peerDir = resolve(new URL('..', import.meta.url).pathname);
const log = (s) => process.stderr.write(`${s}\n`);
const run = (dir, args, env) => {
  const r = spawnSync(process.execPath, [join(dir, args[0]), ...args.slice(1)], { encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
};
const rows = []; // { where, workload, level, who, okPerSec, p99, main?, all?, gen? }
const workloads = a.workloads.split(',');
const httpLanes = a['http-lanes'].split(',');
for (const lane of httpLanes) if (!/^(lean|autocannon)(-pinned)?$/.test(lane)) throw new Error(`--http-lanes: lean, autocannon, lean-pinned or autocannon-pinned, not ${lane}`);
for (let r = 0; r < Number(a.rounds); r++) {
  const order = r % 2 === 0 ? ['A', 'B', 'peer'] : ['peer', 'B', 'A'];
  for (const w of workloads) {
    if (!a['no-in-process']) {
      for (const who of order) {
        const dir = who === 'peer' ? peerDir : builds[who].dir;
        const x = run(dir, ['bench/peer-child.mjs', who === 'peer' ? 'peer' : 'pager', a.data, join(a.data, `peer-${w}.db`), join(a.data, `pages-${w}.json`), a.seconds], who === 'peer' ? {} : builds[who].env);
        for (const level of [1, 16]) {
          const cpu = x[`cpuMsPerPage${level}`];
          rows.push({ where: 'in process', workload: w, level, who, okPerSec: x[`pagesPerSec${level}`], p99: x[`p99at${level}`], main: cpu?.main, all: cpu === undefined ? undefined : cpu.main + cpu.others });
        }
        log(JSON.stringify({ round: r + 1, workload: w, who, pps1: x.pagesPerSec1, pps16: x.pagesPerSec16, p99at1: x.p99at1, p99at16: x.p99at16, cpu1: x.cpuMsPerPage1, cpu16: x.cpuMsPerPage16, peakRssMB: x.peakRssMB }));
      }
    }
    if (!a['no-http']) {
      for (const lane of httpLanes) {
        const [generator, pinned] = lane.split('-');
        for (const level of [1, 16]) {
          for (const who of order) {
            // This checkout's script, serving from the build's checkout (--checkout).
            const measure = () => run(peerDir, ['bench/http-cpu.mjs', '--server', who === 'peer' ? 'peer' : 'pager', ...(who === 'peer' ? [] : ['--checkout', builds[who].dir, '--start', a['http-start'], '--log-level', a['http-log-level']]), '--workload', w, '--data', a.data, '--connections', String(level), '--seconds', a['http-seconds'], '--warm', '2', '--warm-connections', a['http-warm-connections'] === 'level' ? String(level) : a['http-warm-connections'], '--generator', generator, '--accept-encoding', a['http-accept-encoding'], ...(pinned === 'pinned' ? ['--pin'] : [])], who === 'peer' ? {} : builds[who].env);
            const x = untilQuiet(measure, Number(a['max-others']), Number(a['lane-retries']), (d, retry) => log(JSON.stringify({ round: r + 1, workload: w, level, who, retry, othersCores: d.othersCores, okPerSec: d.okPerSec })));
            rows.push({ where: `HTTP ${lane}`, workload: w, level, who, okPerSec: x.okPerSec, p99: x.p99, main: x.mainCpuMsPerRequest, all: x.allCpuMsPerRequest, gen: x.generatorCpuMsPerRequest, others: x.othersCores, non2xx: x.non2xx });
            log(JSON.stringify({ round: r + 1, workload: w, level, who, ...x }));
          }
        }
      }
    }
  }
}
const med = (xs) => {
  const s = xs.filter(Number.isFinite).sort((p, q) => p - q);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');
// B / A round by round too: a median of three hides whether the rounds agree (this machine's runs move ±15%).
const out = ['| where | workload | in flight | A pages/s (median) | B | peer | A / peer | B / peer | B / A | B / A by round | p99 ms A, B, peer | CPU ms/page main thread A, B, peer | all threads A, B, peer | generator CPU ms/request A, B, peer | CPU of the rest of the machine, cores, A, B, peer |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'];
for (const where of ['in process', ...httpLanes.map((l) => `HTTP ${l}`)]) {
  for (const w of workloads) {
    for (const level of [1, 16]) {
      const of = (who) => rows.filter((x) => x.where === where && x.workload === w && x.level === level && x.who === who);
      if (of('B').length === 0) continue;
      const m = (who, k) => med(of(who).map((x) => x[k]));
      const [A, B, P] = ['A', 'B', 'peer'].map((who) => m(who, 'okPerSec'));
      // Rows are pushed in round order, one per build and round.
      const pairs = of('A').map((x, i) => f(of('B')[i]?.okPerSec / x.okPerSec, 2)).join(', ');
      const cpu = (k) => ['A', 'B', 'peer'].map((who) => f(m(who, k), 2)).join(', ');
      out.push(`| ${where} | ${w} | ${level} | ${f(A)} | ${f(B)} | ${f(P)} | ${f(A / P, 2)}x | ${f(B / P, 2)}x | ${f(B / A, 2)}x | ${pairs} | ${['A', 'B', 'peer'].map((who) => f(m(who, 'p99'))).join(', ')} | ${cpu('main')} | ${cpu('all')} | ${where === 'in process' ? '–' : cpu('gen')} | ${where === 'in process' ? '–' : cpu('others')} |`);
    }
  }
}
process.stdout.write(`A = ${builds.A.dir} ${a['a-env']}, B = ${builds.B.dir} ${a['b-env']}, ${a.rounds} rounds\n\n${out.join('\n')}\n`);
