#!/usr/bin/env node
// The page workers' CPU per task for two builds in ONE process (issue 15's typical pages): build A's
// store plans random 50-message typical pages of bench/peer-bench.mjs's data (`--setup-only`) into
// worker tasks, as a loaded server does (one slice a page: the pool is given one thread), with no
// prepared-page cache; then every task is run in this thread through A's runPageTask and B's
// (workers/page-task.js), round after round, the builds alternating (A B, B A, ...), so the
// machine's load drifts over both alike. Each task's previous result goes back with the next, as the
// main thread hands consumed results back. Before anything is timed, every result of B must equal A's
// (the page's bytes and its header, less its timings): a difference fails the run. Prints one JSON
// line: process CPU (user + system) a task, median and least over rounds, per build, and B / A.
//
//   node bench/worker-task-ab.mjs --a DIR --b DIR [--data /tmp/rdy/pb] [--pages 400] [--rounds 16]
//        [--coding none|zstd|gzip]
//
// DIR: a built checkout (dist/; its node_modules reachable from there). What this leaves out: the
// piscina message passing and the main thread (bench/http-cpu.mjs --by-thread measures those).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { argError, parseScriptArgs } from './args.mjs';

const { values: a } = parseScriptArgs(import.meta.url, {
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    data: { type: 'string', default: '/tmp/rdy/pb' },
    pages: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '16' },
    coding: { type: 'string', default: 'none' },
  },
});
if (a.a === undefined || a.b === undefined) argError(import.meta.url, '--a and --b are required');
const builds = [resolve(a.a), resolve(a.b)];
const { PagerStore } = await import(`${builds[0]}/dist/main/store.js`);
const runners = [await import(`${builds[0]}/dist/workers/page-task.js`), await import(`${builds[1]}/dist/workers/page-task.js`)];
const tasks = [];
const pool = {
  options: { maxThreads: 1, maxQueue: Number.MAX_SAFE_INTEGER },
  queueSize: 0,
  utilization: 0,
  completed: 0,
  threads: [],
  async run(task) {
    tasks.push(structuredClone(task));
    return runners[0].runPageTask(task);
  },
  async close() {},
};
const store = new PagerStore({ dataDir: a.data, pageCacheBytes: 0, readOnly: true, warmUp: { pagePath: false } }, pool);
const pages = JSON.parse(readFileSync(`${a.data}/pages-typical.json`, 'utf8'));
const coding = a.coding === 'none' ? undefined : { encoding: a.coding, levels: { gzipLevel: 6, brotliQuality: 4 } };
for (let i = 0; i < Number(a.pages); i++) {
  const p = pages[(i * 7) % pages.length];
  (await store.pageBuffer(p.id, p.params, undefined, coding)).release?.();
}
const n = tasks.length;
const copies = [tasks.map((t) => structuredClone(t)), tasks.map((t) => structuredClone(t))];
const last = [undefined, undefined];
/** A result's page bytes (and coded bytes) with its header, less the header's timings. */
const canonical = (b) => {
  const at = b.readUInt32LE(b.length - 8);
  const h = JSON.parse(b.toString('utf8', at, at + b.readUInt32LE(b.length - 4)));
  delete h.readMs;
  delete h.decodeMs;
  delete h.codeMs;
  const end = h.pageBytes === undefined ? at : h.pageBytes + (h.coded ? h.coded[0].bytes : 0);
  return Buffer.concat([Buffer.from(JSON.stringify(h)), b.subarray(0, end)]);
};
const round = (k, keep) => {
  const out = [];
  for (const t of copies[k]) {
    if (last[k] instanceof ArrayBuffer) t.arena = last[k];
    else delete t.arena;
    const r = runners[k].runPageTask(t);
    if (keep) out.push(r instanceof ArrayBuffer ? canonical(Buffer.from(r)) : JSON.stringify(r));
    last[k] = r;
  }
  return out;
};
const ra = round(0, true);
const rb = round(1, true);
const differing = ra.filter((r, i) => (typeof r === 'string' ? r !== rb[i] : !(Buffer.isBuffer(rb[i]) && r.equals(rb[i])))).length;
if (differing > 0) {
  process.stderr.write(`${differing} of ${n} results differ between the builds\n`);
  process.exit(1);
}
for (let w = 0; w < 2; w++) for (const k of [0, 1]) round(k, false);
const us = [[], []];
for (let r = 0; r < Number(a.rounds); r++) {
  for (const k of r % 2 === 0 ? [0, 1] : [1, 0]) {
    const c = process.cpuUsage();
    round(k, false);
    const d = process.cpuUsage(c);
    us[k].push((d.user + d.system) / n);
  }
}
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const least = (xs) => Math.min(...xs);
const fig = (xs) => ({ medianUs: +median(xs).toFixed(1), leastUs: +least(xs).toFixed(1) });
process.stdout.write(`${JSON.stringify({ tasks: n, A: fig(us[0]), B: fig(us[1]), ratioMedian: +(median(us[1]) / median(us[0])).toFixed(3), ratioLeast: +(least(us[1]) / least(us[0])).toFixed(3) })}\n`);
await store.close();
process.exit(0);
