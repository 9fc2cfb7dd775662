#!/usr/bin/env node
// Minor page faults per built page, thread by thread, for two builds side by side: each run is a
// fresh process of build A and of build B (alternating A B B A ...) that opens the store as
// bench/child.mjs does (no prepared-page cache, warmed up) and builds the 5M tail page --pages
// times in a row, reading every thread's minflt from /proc/self/task/*/stat around each page.
// A page whose body is written into memory the process has not touched before pays ~1,100
// faults on the main thread (4.6 MB / 4 KiB); one written into memory glibc reuses pays ~none.
//
//   node bench/page-faults.mjs --a DIR [--b DIR] [--data DIR] [--runs N] [--pages N] [--env K=V,...]
//
// DIR: a built checkout (dist/). --env sets variables in the measured processes only (e.g.
// MALLOC_TOP_PAD_=..., GLIBC_TUNABLES=...), --env-a / --env-b for one build alone. Each page is
// released (PageBuffer.release, where the build has it) once measured, as the server releases a
// body when its response is done; --no-release drops it instead, as a library caller may.
// Prints, per build, the median over runs of each page's main-thread faults, all threads'
// faults and ms, and the median of pages 6-10 (page-ab's "warm"), as markdown.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { keyValueList, median, parseScriptArgs } from './args.mjs';

if (process.argv[2] === '--child') {
  const [, , , build, dataDir, id, pagesArg, workers, release] = process.argv;
  const dist = pathToFileURL(resolve(build, 'dist') + '/');
  const { openStore } = await import(new URL('main/store.js', dist));
  const { performance } = await import('node:perf_hooks');
  // minflt (field 10) of each thread; the comm field may hold spaces, so split after its ')'.
  const faults = () => {
    const out = new Map();
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const s = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        out.set(tid, Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[7]));
      } catch {
        // a thread that ended between the listing and the read
      }
    }
    return out;
  };
  const store = await openStore({ dataDir, workers: Number(workers), pageCacheBytes: 0 });
  await store.warmUp();
  const main = String(process.pid);
  const pages = [];
  for (let i = 0; i < Number(pagesArg); i++) {
    const f0 = faults();
    const t = performance.now();
    const pb = await store.pageBuffer(id, { maxMessages: 50 });
    const ms = performance.now() - t;
    const f1 = faults();
    // Done with it, as the server is once the response's write has finished (a build without PageBuffer.release has none).
    if (release === 'release') pb.release?.();
    let all = 0;
    for (const [tid, n] of f1) all += n - (f0.get(tid) ?? 0);
    const tm = pb.timing ?? {};
    pages.push({ ms, main: f1.get(main) - f0.get(main), all, plan: tm.plan, read: tm.read, decode: tm.decode, pool: tm.pool, assemble: tm.assemble ?? null, bytes: pb.body.length });
  }
  await store.close();
  process.stdout.write(JSON.stringify({ pages, maxRssMB: process.resourceUsage().maxRSS / 1024 }) + '\n');
  process.exit(0);
}

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    runs: { type: 'string', default: '6' },
    pages: { type: 'string', default: '12' },
    workers: { type: 'string', default: '2' },
    env: { type: 'string', default: '' },
    'env-a': { type: 'string', default: '' },
    'env-b': { type: 'string', default: '' },
    'no-release': { type: 'boolean', default: false },
  },
});
if (!values.a) throw new Error('--a is required');
const builds = [{ dir: resolve(values.a), env: { ...keyValueList(values.env), ...keyValueList(values['env-a']) } }];
if (values.b) builds.push({ dir: resolve(values.b), env: { ...keyValueList(values.env), ...keyValueList(values['env-b']) } });
const runs = Number(values.runs);
const nPages = Number(values.pages);

const load = [loadavg()[0]];
const got = builds.map(() => []);
for (let i = 0; i < runs; i++) {
  const order = builds.length === 1 ? [0] : i % 2 === 0 ? [0, 1] : [1, 0];
  for (const k of order) {
    const b = builds[k];
    const r = spawnSync(process.execPath, [new URL(import.meta.url).pathname, '--child', b.dir, values.data, 'bench-5m', String(nPages), values.workers, values['no-release'] ? 'keep' : 'release'], {
      encoding: 'utf8',
      env: { ...process.env, ...b.env },
      maxBuffer: 1 << 24,
    });
    if (r.status !== 0) throw new Error(`${b.dir} failed: ${r.stderr}`);
    got[k].push(JSON.parse(r.stdout.trim().split('\n').pop()));
  }
  load.push(loadavg()[0]);
}
const f = (x, d = 1) => (x === null || x === undefined ? '–' : x.toFixed(d));
const lines = [];
lines.push(`${runs} fresh processes per build, alternating, ${nPages} 5M tail pages each, ${values['no-release'] ? 'never released' : 'each released once measured'}; load average (1 min) ${f(Math.min(...load))}-${f(Math.max(...load))}.`);
for (const [k, b] of builds.entries()) {
  const env = Object.entries(b.env).map(([x, y]) => `${x}=${y}`).join(' ');
  lines.push('');
  lines.push(`${k === 0 ? 'A' : 'B'} = ${b.dir}${env ? ` (${env})` : ''}: medians over runs; peak RSS ${f(median(got[k].map((g) => g.maxRssMB)))} MB`);
  lines.push('');
  lines.push(`| page | ${Array.from({ length: nPages }, (_, i) => i + 1).join(' | ')} |`);
  lines.push(`|---|${'---|'.repeat(nPages)}`);
  const row = (name, key, d) => lines.push(`| ${name} | ${Array.from({ length: nPages }, (_, i) => f(median(got[k].map((g) => g.pages[i][key])), d)).join(' | ')} |`);
  row('main-thread faults', 'main', 0);
  row('all threads\' faults', 'all', 0);
  row('ms', 'ms', 2);
  row('plan ms', 'plan', 2);
  row('read ms (slowest slice)', 'read', 2);
  row('decode ms (slowest slice)', 'decode', 2);
  row('pool ms', 'pool', 2);
  row('assemble ms', 'assemble', 2);
  // page-ab's warm figure: the median of pages 6-10 (third of five), per run, then the median over runs.
  const warm = got[k].map((g) => median(g.pages.slice(5, 10).map((p) => p.ms)));
  const slowMain = got[k].map((g) => g.pages.slice(5).filter((p) => p.main > 800).length);
  lines.push('');
  lines.push(`pages 6-10 median ms per run: ${warm.map((x) => f(x, 2)).join(', ')} (median ${f(median(warm), 2)}); pages from 6 on with > 800 main-thread faults, per run: ${slowMain.join(', ')}.`);
}
process.stdout.write(lines.join('\n') + '\n');
