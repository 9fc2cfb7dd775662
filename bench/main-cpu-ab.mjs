#!/usr/bin/env node
// Main-thread CPU a page of two builds, side by side (issue 15): fresh processes alternating A/B,
// each opening the store over peer-bench's random-page workload (pageCacheBytes 0, 2 workers,
// warmed), 600 pages unmeasured, then `--pages` pages at `--inflight` in flight, timed by the main
// thread's own on-CPU time from /proc/self/task/<pid>/schedstat (nanoseconds; the tick-granular
// /proc stat that peer-child reads is ~10 ms a reading, coarse over a 1 s lane). Prints one JSON
// line per process, then the medians and B / A of CPU µs a page and pages/s.
//
//   node bench/main-cpu-ab.mjs --a /work/main --b . [--workload typical|many] [--inflight 16] [--pages 4000] [--rounds 4]
//        [--data /tmp/sp-peer-bench]
//
// Needs the workloads of `node bench/peer-bench.mjs --setup-only --data DIR` and their pages files.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseScriptArgs } from './args.mjs';

if (process.argv[2] === '--child') {
  const [dir, data, workload, inflightArg, pagesArg] = process.argv.slice(3);
  const pages = JSON.parse(readFileSync(join(data, `pages-${workload}.json`), 'utf8'));
  process.env.SESSION_PAGER_JIT_WARMUP ??= '1';
  const { openStore } = await import(join(dir, 'dist/main/store.js'));
  const store = await openStore({ dataDir: data, workers: 2, pageCacheBytes: 0 });
  await store.warmUp();
  const inflight = Number(inflightArg);
  const run = async (n) => {
    let i = 0;
    await Promise.all(
      Array.from({ length: inflight }, async () => {
        while (i < n) {
          const p = pages[i++ % pages.length];
          (await store.pageBuffer(p.id, p.params)).release?.();
        }
      }),
    );
  };
  await run(600);
  const onCpuNs = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  const n = Number(pagesArg);
  const c0 = onCpuNs();
  const t0 = performance.now();
  await run(n);
  const cpuNs = onCpuNs() - c0;
  const ms = performance.now() - t0;
  process.stdout.write(JSON.stringify({ cpuUsPerPage: cpuNs / 1000 / n, pagesPerSec: n / (ms / 1000) }) + '\n');
  await store.close();
  process.exit(0);
}

const { values: a } = parseScriptArgs(import.meta.url, {
  options: {
    a: { type: 'string' },
    b: { type: 'string', default: '.' },
    workload: { type: 'string', default: 'typical' },
    inflight: { type: 'string', default: '16' },
    pages: { type: 'string', default: '4000' },
    rounds: { type: 'string', default: '4' },
    data: { type: 'string', default: '/tmp/sp-peer-bench' },
  },
});
if (a.a === undefined) throw new Error('--a DIR (a built checkout) is required');
const self = fileURLToPath(import.meta.url);
const builds = { A: resolve(a.a), B: resolve(a.b) };
const res = { A: [], B: [] };
for (let r = 0; r < Number(a.rounds); r++) {
  for (const who of r % 2 === 0 ? ['A', 'B'] : ['B', 'A']) {
    const out = spawnSync(process.execPath, [self, '--child', builds[who], a.data, a.workload, a.inflight, a.pages], { encoding: 'utf8' });
    if (out.status !== 0) throw new Error(`${who} failed: ${out.stderr}`);
    const x = JSON.parse(out.stdout.trim().split('\n').pop());
    res[who].push(x);
    console.log(JSON.stringify({ round: r + 1, who, ...x }));
  }
}
const median = (xs) => {
  const s = [...xs].sort((p, q) => p - q);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
for (const k of ['cpuUsPerPage', 'pagesPerSec']) {
  const ma = median(res.A.map((x) => x[k]));
  const mb = median(res.B.map((x) => x[k]));
  console.log(`${k}: A ${ma.toFixed(1)}, B ${mb.toFixed(1)}, B / A ${(mb / ma).toFixed(3)} (A ${res.A.map((x) => x[k].toFixed(1)).join(' ')}; B ${res.B.map((x) => x[k].toFixed(1)).join(' ')})`);
}
