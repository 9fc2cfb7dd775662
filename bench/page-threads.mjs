#!/usr/bin/env node
// CPU per thread for the 5M tail page, cold and warm, for two or more builds side by side: a
// measure the machine's load moves far less than wall time (issue 13). Each run is a fresh
// process of every build in turn (alternating order) that opens the store as bench/child.mjs
// does (no prepared-page cache, warmed up) and builds the tail page 11 times, reading every
// thread's time on a CPU and time waiting for one (/proc/self/task/*/schedstat) and its minor
// faults around each page. Threads: the main thread, the page workers (the pool's threads, the
// process's last ones started) and "other" (V8's helper threads: concurrent compiles and
// concurrent marking; libuv's pool). On two cores, any CPU "other" spends during a page is taken
// from the two workers: its wall time.
//
//   node bench/page-threads.mjs --builds DIR,DIR[,DIR...] [--data DIR] [--session ID] [--runs N] [--workers N]
//
// DIR: a built checkout (dist/). Prints, per build, medians over runs of the cold page (the
// first) and of the warm one (page-ab's: the median of pages 6-10 of each run): wall ms, CPU ms
// of each thread class, wait ms of main and workers, faults, and the store's own phase timing
// (PageBuffer.timing), as markdown.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { argError, median, parseScriptArgs } from './args.mjs';

if (process.argv[2] === '--child') {
  const [, , , build, dataDir, id, workersArg] = process.argv;
  const workers = Number(workersArg);
  const { openStore } = await import(new URL('main/store.js', pathToFileURL(resolve(build, 'dist') + '/')));
  const { performance } = await import('node:perf_hooks');
  // Per thread: ns on a CPU and ns runnable but waiting (schedstat), minflt (stat field 10, after the comm's ')').
  // Read after a 0.2 ms sleep (a futex wait): Linux adds a running thread's CPU to its schedstat
  // only at a scheduler tick or a switch, so this thread's own figure, read while it runs, lags by
  // up to a tick (4 ms here) and a page's main-thread CPU took in what ran before it (the warm-up,
  // the previous page's end) and missed what ran after its last wake-up (bench/peer-child.mjs).
  const sleepCell = new Int32Array(new SharedArrayBuffer(4));
  const snap = () => {
    Atomics.wait(sleepCell, 0, 0, 0.2);
    const out = new Map();
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const s = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ');
        const st = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        out.set(Number(tid), { cpu: Number(s[0]) / 1e6, wait: Number(s[1]) / 1e6, flt: Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[7]) });
      } catch {
        // a thread that ended between the listing and the read
      }
    }
    return out;
  };
  const store = await openStore({ dataDir, workers, pageCacheBytes: 0 });
  await store.warmUp();
  const tids = [...snap().keys()].sort((a, b) => a - b);
  const pool = tids.slice(-workers);
  const kind = (t) => (t === process.pid ? 'main' : pool.includes(t) ? 'workers' : 'other');
  const pages = [];
  for (let i = 0; i < 11; i++) {
    const a = snap();
    const t = performance.now();
    const pb = await store.pageBuffer(id, { maxMessages: 50 });
    const ms = performance.now() - t;
    const b = snap();
    pb.release?.();
    const p = { ms, main: 0, workers: 0, other: 0, mainWait: 0, workersWait: 0, otherWait: 0, faults: 0, mainFaults: 0, workersFaults: 0, timing: pb.timing ?? {} };
    for (const [tid, v] of b) {
      const u = a.get(tid) ?? { cpu: 0, wait: 0, flt: 0 };
      p[kind(tid)] += v.cpu - u.cpu;
      p[`${kind(tid)}Wait`] += v.wait - u.wait;
      p.faults += v.flt - u.flt;
      if (kind(tid) !== 'other') p[`${kind(tid)}Faults`] += v.flt - u.flt;
    }
    pages.push(p);
  }
  await store.close();
  process.stdout.write(JSON.stringify(pages) + '\n');
  process.exit(0);
}

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    builds: { type: 'string' },
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    session: { type: 'string', default: 'bench-5m' },
    runs: { type: 'string', default: '8' },
    workers: { type: 'string', default: '2' },
  },
});
if (!values.builds) argError(import.meta.url, '--builds is required');
const builds = values.builds.split(',').map((d) => resolve(d));
const runs = Number(values.runs);
if (!Number.isSafeInteger(runs) || runs < 1) argError(import.meta.url, `--runs must be a whole number >= 1, got ${values.runs}`);
const load = [loadavg()[0]];
const got = builds.map(() => ({ cold: [], warm: [] }));
for (let i = 0; i < runs; i++) {
  const order = builds.map((_, k) => k);
  if (i % 2 === 1) order.reverse();
  for (const k of order) {
    const r = spawnSync(process.execPath, [new URL(import.meta.url).pathname, '--child', builds[k], values.data, values.session, values.workers], { encoding: 'utf8', maxBuffer: 1 << 24 });
    if (r.status !== 0) throw new Error(`${builds[k]} failed: ${r.stderr}`);
    const pages = JSON.parse(r.stdout.trim().split('\n').pop());
    got[k].cold.push(pages[0]);
    got[k].warm.push(pages.slice(6, 11).sort((x, y) => x.ms - y.ms)[2]);
  }
  load.push(loadavg()[0]);
}
const f = (x, d = 2) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));
const rows = [
  ['wall ms', (p) => p.ms],
  ['CPU ms, all threads', (p) => p.main + p.workers + p.other],
  ['CPU ms, main thread', (p) => p.main],
  ['CPU ms, workers (sum)', (p) => p.workers],
  ['CPU ms, other threads', (p) => p.other],
  ['wait ms, main thread', (p) => p.mainWait],
  ['wait ms, workers (sum)', (p) => p.workersWait],
  ['minor faults, all threads', (p) => p.faults, 0],
  ['minor faults, main thread', (p) => p.mainFaults, 0],
  ['minor faults, workers (sum)', (p) => p.workersFaults, 0],
  ['timing: plan', (p) => p.timing.plan],
  ['timing: read (slowest slice)', (p) => p.timing.read],
  ['timing: decode (slowest slice)', (p) => p.timing.decode],
  ['timing: pool (the rest of the pool\'s time)', (p) => p.timing.pool],
  ['timing: assemble', (p) => p.timing.assemble],
];
const lines = [`${runs} fresh processes per build, alternating; load average (1 min) ${f(Math.min(...load), 1)}-${f(Math.max(...load), 1)}. Medians over runs.`, ''];
for (const kind of ['cold', 'warm']) {
  lines.push(`| ${kind} 5M tail page | ${builds.join(' | ')} |`);
  lines.push(`|---|${'---|'.repeat(builds.length)}`);
  for (const [name, get, d] of rows) lines.push(`| ${name} | ${builds.map((_, k) => f(median(got[k][kind].map(get)), d)).join(' | ')} |`);
  lines.push('');
}
process.stdout.write(lines.join('\n'));
