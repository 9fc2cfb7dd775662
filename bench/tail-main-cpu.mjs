#!/usr/bin/env node
// Main-thread CPU a warm 5M tail page, for two or more builds side by side (issue 13): one fresh
// process a build in turn (alternating order) a round, each opening the store as bench/child.mjs
// does (pageCacheBytes 0, 2 workers, warmed), then building the tail page `--pages` + 10 times and
// timing each of the last `--pages` by the main thread's own on-CPU time (/proc/self/task/<pid>/
// schedstat) and minor faults. A single warm page's CPU (bench/page-threads.mjs) swings with the
// collections that fall in it; the median and mean over many pages do not, and the load moves
// them far less than wall time. Prints per build the per-process medians and means, as text.
//
//   node bench/tail-main-cpu.mjs --builds DIR,DIR[,DIR...] [--data DIR] [--rounds N] [--pages N]
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { argError, parseScriptArgs } from './args.mjs';

if (process.argv[2] === '--child') {
  const [build, dataDir, pagesArg] = process.argv.slice(3);
  const pages = Number(pagesArg);
  const { openStore } = await import(join(build, 'dist/main/store.js'));
  const store = await openStore({ dataDir, workers: 2, pageCacheBytes: 0 });
  await store.warmUp();
  const cpu = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  const faults = () => {
    const st = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    return Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[7]);
  };
  const c = [];
  const f = [];
  for (let i = 0; i < pages + 10; i++) {
    const a = cpu();
    const fa = faults();
    (await store.pageBuffer('bench-5m', { maxMessages: 50 })).release?.();
    if (i >= 10) {
      c.push(cpu() - a);
      f.push(faults() - fa);
    }
  }
  await store.close();
  const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1];
  const mean = (x) => x.reduce((p, q) => p + q, 0) / x.length;
  process.stdout.write(JSON.stringify({ cpu: med(c), mean: mean(c), faults: med(f), faultsMean: mean(f) }) + '\n');
  process.exit(0);
}

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    builds: { type: 'string' },
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    rounds: { type: 'string', default: '4' },
    pages: { type: 'string', default: '100' },
  },
});
if (!values.builds) argError(import.meta.url, '--builds is required');
const whole = (name) => {
  const n = Number(values[name]);
  if (!Number.isSafeInteger(n) || n < 1) argError(import.meta.url, `--${name} must be a whole number >= 1, got ${values[name]}`);
  return n;
};
const rounds = whole('rounds');
const pages = whole('pages');
const builds = values.builds.split(',').map((d) => resolve(d));
const got = builds.map(() => []);
const load = [loadavg()[0]];
for (let r = 0; r < rounds; r++) {
  const order = builds.map((_, k) => k);
  if (r % 2 === 1) order.reverse();
  for (const k of order) {
    const out = spawnSync(process.execPath, [new URL(import.meta.url).pathname, '--child', builds[k], values.data, String(pages)], { encoding: 'utf8' });
    if (out.status !== 0) throw new Error(`${builds[k]} failed: ${out.stderr}`);
    got[k].push(JSON.parse(out.stdout.trim().split('\n').pop()));
  }
  load.push(loadavg()[0]);
}
const f = (x) => x.toFixed(3);
console.log(`${rounds} fresh processes per build, alternating; ${pages} warm pages each; load average (1 min) ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)}`);
for (const [k, b] of builds.entries()) {
  const rs = got[k];
  console.log(`${b}: main-thread CPU ms a page, median per process ${rs.map((x) => f(x.cpu)).join(' ')}; mean ${rs.map((x) => f(x.mean)).join(' ')}; faults a page, median/mean ${rs.map((x) => `${x.faults}/${x.faultsMean.toFixed(0)}`).join(' ')}`);
}
