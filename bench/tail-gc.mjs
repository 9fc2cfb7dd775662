#!/usr/bin/env node
// The main thread's garbage collections while a process builds warm 5M tail pages,
// per build, alternating fresh processes: how many full (mark-compact) and young
// collections ran in pages 6-15 of each process (bench/child.mjs's warm figure is
// the median of pages 6-10), their pause, and the process's minor page faults a
// page, and the CPU time a page of the main thread, the page workers and the
// process's other threads (V8's helpers). Counts and CPU times, unlike wall
// times, hardly move with the machine's load.
//
//   node bench/tail-gc.mjs --roots DIR[,DIR...] [--runs 3] [--inline-slice-bytes N] [--data DIR]
//
// DIR: a built checkout (dist/). --inline-slice-bytes: the store option for every
// build that has it (0: no slice decoded on the main thread, main/small-slice-pool.ts).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { parseScriptArgs } from './args.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    roots: { type: 'string' },
    runs: { type: 'string', default: '3' },
    'inline-slice-bytes': { type: 'string' },
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    child: { type: 'boolean', default: false },
    root: { type: 'string' },
  },
});

/**
 * CPU time of each of this process's threads so far, ns by thread id (Linux:
 * /proc/self/task/<tid>/schedstat, whose first field is time on a CPU); empty
 * elsewhere.
 */
function threadCpu() {
  const m = new Map();
  let tids = [];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return m;
  }
  for (const t of tids) {
    try {
      m.set(Number(t), Number(readFileSync(`/proc/self/task/${t}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // The thread ended meanwhile.
    }
  }
  return m;
}

/**
 * CPU ms a page between two threadCpu() snapshots: the main thread (its tid is
 * the pid), the page workers (the 2 busiest other threads: all of them are
 * named "node", as V8's helper threads are) and every other thread (V8's
 * helpers: concurrent marking, sweeping, parallel scavenges, compiles; libuv's).
 */
function cpuByRole(before, after, pages) {
  if (after.size === 0) return {};
  const ms = (tid) => ((after.get(tid) ?? 0) - (before.get(tid) ?? 0)) / 1e6 / pages;
  const others = [...after.keys()].filter((t) => t !== process.pid).map(ms).sort((a, b) => b - a);
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  return { mainCpu: ms(process.pid), workersCpu: sum(others.slice(0, 2)), otherCpu: sum(others.slice(2)) };
}

if (values.child) {
  const { PerformanceObserver, constants } = await import('node:perf_hooks');
  const { openStore } = await import(new URL(`file://${values.root}/dist/main/store.js`).href);
  const inline = values['inline-slice-bytes'];
  const store = await openStore({ dataDir: values.data, workers: 2, pageCacheBytes: 0, ...(inline === undefined ? {} : { inlineSliceBytes: Number(inline) }) });
  await store.warmUp();
  const page = () => store.pageBuffer('bench-5m', { maxMessages: 50 });
  for (let i = 0; i < 5; i++) await page();
  const gcs = { major: 0, minor: 0, pauseMs: 0 };
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) gcs.major++;
      else gcs.minor++;
      gcs.pauseMs += e.duration;
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  const f0 = process.resourceUsage().minorPageFault;
  const cpu0 = threadCpu();
  for (let i = 0; i < 10; i++) await page();
  const faults = (process.resourceUsage().minorPageFault - f0) / 10;
  // The observer hears of the last collections on a later turn.
  await new Promise((r) => setTimeout(r, 20));
  const cpu = cpuByRole(cpu0, threadCpu(), 10);
  obs.disconnect();
  await store.close();
  process.stdout.write(JSON.stringify({ ...gcs, faults, ...cpu }) + '\n');
} else {
  if (!values.roots) throw new Error('--roots is required');
  const roots = values.roots.split(',').map((r) => resolve(r));
  const runs = Number(values.runs);
  const got = roots.map(() => []);
  const load = [loadavg()[0]];
  for (let i = 0; i < runs; i++) {
    for (const k of i % 2 === 0 ? roots.keys() : [...roots.keys()].reverse()) {
      const args = [new URL(import.meta.url).pathname, '--child', '--root', roots[k], '--data', values.data];
      if (values['inline-slice-bytes'] !== undefined) args.push('--inline-slice-bytes', values['inline-slice-bytes']);
      const r = spawnSync(process.execPath, args, { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${roots[k]}: ${r.stderr}`);
      got[k].push(JSON.parse(r.stdout.trim().split('\n').pop()));
    }
    load.push(loadavg()[0]);
  }
  console.log(`${runs} processes per build, 10 warm 5M tail pages each (pages 6-15); load average ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)}`);
  console.log('');
  console.log('| build | full collections (each process) | young collections | pause ms | minor page faults a page | CPU ms a page: main thread | page workers (both) | other threads |');
  console.log('|---|---|---|---|---|---|---|---|');
  roots.forEach((root, k) => {
    const col = (f) => got[k].map((g) => (typeof g[f] === 'number' ? Math.round(g[f]) : g[f])).join(', ');
    const cpu = (f) => got[k].map((g) => (typeof g[f] === 'number' ? g[f].toFixed(1) : '-')).join(', ');
    console.log(`| ${root} | ${col('major')} | ${col('minor')} | ${col('pauseMs')} | ${col('faults')} | ${cpu('mainCpu')} | ${cpu('workersCpu')} | ${cpu('otherCpu')} |`);
  });
}
