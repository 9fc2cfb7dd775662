#!/usr/bin/env node
// CPU per page by thread for two builds side by side, in fresh processes of
// build A and build B alternating (A B B A ...): the 5M tail page built 40
// times (after 5 not counted) and 1,500 random 50-message typical pages
// (after 300), on 2 workers, no prepared-page cache. Per page: wall ms, the
// main thread's CPU ms and all threads' CPU ms (/proc/self/task/*/schedstat),
// a figure the machine's load moves much less than the wall time. Medians
// per build and their B/A ratios as markdown.
//
//   node bench/page-cpu-ab.mjs --a DIR --b DIR [--data DIR] [--runs N] [--coding zstd|gzip|br]
//
// --coding: each page built in that coding (as the page route asks it, at the
// default levels): the workers compress gzip and zstd slice by slice.
//
// DIR: a built checkout; the data dir is bench/page-bench.mjs's.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, parseScriptArgs } from './args.mjs';

if (process.argv[2] === '--child') {
  const [, , , build, data, encoding] = process.argv;
  // The page route's default levels (options.ts; zstd left to each build's default, levelFor:
  // 6 before the twelfth session, 3 since); none: identity.
  const coding = encoding === 'none' ? undefined : { encoding, levels: { gzipLevel: 6, brotliQuality: 4 } };
  const { openStore } = await import(`${build}/dist/main/store.js`);
  const store = await openStore({ dataDir: data, workers: 2, pageCacheBytes: 0 });
  await store.warmUp();
  const cpu = () => Object.fromEntries(readdirSync('/proc/self/task').map((t) => [t, Number(readFileSync(`/proc/self/task/${t}/schedstat`, 'utf8').split(' ')[0])]));
  const measure = async (n, warm, next) => {
    for (let i = 0; i < warm; i++) (await store.pageBuffer(...next(), undefined, coding)).release?.();
    const c0 = cpu();
    const w0 = performance.now();
    for (let i = 0; i < n; i++) (await store.pageBuffer(...next(), undefined, coding)).release?.();
    const wall = performance.now() - w0;
    const c1 = cpu();
    let all = 0;
    for (const [t, ns] of Object.entries(c1)) all += ns - (c0[t] ?? 0);
    const main = c1[String(process.pid)] - c0[String(process.pid)];
    return { wallMs: wall / n, mainCpuMs: main / 1e6 / n, allCpuMs: all / 1e6 / n };
  };
  const tail = await measure(40, 5, () => ['bench-5m', { maxMessages: 50 }]);
  const info = await store.info('bench-typical');
  let x = 12345;
  const rand = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const typical = await measure(1500, 300, () => ['bench-typical', { throughSeq: Math.floor(info.lastSeq * (0.1 + 0.6 * rand())), maxMessages: 50 }]);
  await store.close();
  process.stdout.write(`${JSON.stringify({ tail, typical })}\n`);
  process.exit(0);
}

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    runs: { type: 'string', default: '6' },
    coding: { type: 'string', default: 'none' },
  },
});
if (!values.a || !values.b) throw new Error('--a and --b are required');
const runs = Number(values.runs);
const builds = [resolve(values.a), resolve(values.b)];
const load = [loadavg()[0]];
const got = builds.map(() => []);
for (let i = 0; i < runs; i++) {
  for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', builds[k], values.data, values.coding], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${builds[k]} failed: ${r.stderr}`);
    got[k].push(JSON.parse(r.stdout.trim().split('\n').pop()));
  }
  load.push(loadavg()[0]);
}
const lines = [`A = ${builds[0]}, B = ${builds[1]}; ${runs} alternating fresh processes per build; coding ${values.coding}; load average (1 min) ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)}.`, ''];
lines.push('| figure (per page) | A median | B median | B / A |', '|---|---|---|---|');
for (const page of ['tail', 'typical']) {
  for (const [key, name] of [['wallMs', 'wall ms'], ['mainCpuMs', 'main thread CPU ms'], ['allCpuMs', 'all threads CPU ms']]) {
    const a = median(got[0].map((g) => g[page][key]));
    const b = median(got[1].map((g) => g[page][key]));
    lines.push(`| ${page === 'tail' ? '5M tail page' : 'typical page'}, ${name} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(b / a).toFixed(3)} |`);
  }
}
process.stdout.write(`${lines.join('\n')}\n`);
