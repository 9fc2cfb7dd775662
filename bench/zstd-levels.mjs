#!/usr/bin/env node
// Ratio against CPU for the codings a typical page is asked in, on the real page bodies: N random
// 50-message pages of `bench-typical` (bench/page-bench.mjs's data), their identity bodies built
// by this checkout's store, then each body compressed in one piece (as a page worker compresses a
// one-slice page: workers/slice-compress.ts codePiece) at zstd levels 1-6 and gzip 1 and 6, in
// this thread, after a round not counted. Per page: this thread's CPU (process.threadCpuUsage,
// which the machine's load moves much less than wall time), the wire bytes and the ratio; every
// zstd body is decoded by fzstd (an independent decoder) and compared with its identity body.
//
//   node bench/zstd-levels.mjs [--data DIR] [--pages 200] [--rounds 3] [--eval-dir DIR]
//
// --eval-dir DIR: a directory where another zstd binding is installed (`npm install
// @mongodb-js/zstd@1.2.2` there, not a dependency of the project): its compress(body, level)
// timed the same way (it is async only: the figure includes its thread-pool hop, and its CPU is
// the whole process's). The binding's per-call fixed cost is printed too: a 100-byte body.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants as zc, deflateRawSync } from 'node:zlib';
import { parseScriptArgs } from './args.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    pages: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    'eval-dir': { type: 'string' },
  },
});
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const { Encoder } = require('@toondepauw/node-zstd');
const { decompress } = require('fzstd');
const { openStore } = await import(join(root, 'dist/main/store.js'));

const store = await openStore({ dataDir: values.data, workers: 2, pageCacheBytes: 0 });
const info = await store.info('bench-typical');
let x = 777;
const rand = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const bodies = [];
for (let i = 0; i < Number(values.pages); i++) {
  const pb = await store.pageBuffer('bench-typical', { throughSeq: Math.floor(info.lastSeq * (0.1 + 0.6 * rand())), maxMessages: 50 });
  bodies.push(Buffer.from(pb.body));
  pb.release?.();
}
await store.close();
const sizes = bodies.map((b) => b.length).sort((a, b) => a - b);
const total = sizes.reduce((a, b) => a + b, 0);
const rounds = Number(values.rounds);
const load = [loadavg()[0]];
// This thread's CPU time (/proc schedstat: Node 20 has no process.threadCpuUsage).
const cpuMs = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
const rows = [];
const processCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
async function time(name, f, check, cpu = cpuMs) {
  for (const b of bodies) check(b, await f(b));
  let out = 0;
  const c0 = cpu();
  const w0 = performance.now();
  for (let r = 0; r < rounds; r++) for (const b of bodies) out += (await f(b)).length;
  const n = rounds * bodies.length;
  const tiny = Buffer.from('{"messages":[]}'.repeat(7));
  const c1 = cpu();
  const wall = (performance.now() - w0) / n;
  const t0 = cpu();
  for (let i = 0; i < 500; i++) await f(tiny);
  rows.push({ name, cpu: (c1 - c0) / n, wall, ratio: (total * rounds) / out, kib: out / n / 1024, fixedUs: ((cpu() - t0) / 500) * 1000 });
}
const zstdCheck = (b, z) => {
  if (Buffer.compare(Buffer.from(decompress(z)), b) !== 0) throw new Error('zstd body does not decode to its identity body');
};
for (const level of [1, 2, 3, 4, 5, 6]) {
  const e = new Encoder(level);
  await time(`zstd ${level}`, (b) => e.encodeSync(b), zstdCheck);
}
for (const level of [1, 6]) await time(`gzip ${level}`, (b) => deflateRawSync(b, { level, finishFlush: zc.Z_FULL_FLUSH }), () => {});
if (values['eval-dir'] !== undefined) {
  const other = createRequire(join(resolve(values['eval-dir']), 'package.json'))('@mongodb-js/zstd');
  // Its CPU is on the libuv pool: the whole process's is counted for it.
  for (const level of [1, 3, 6]) await time(`@mongodb-js/zstd ${level}`, (b) => other.compress(b, level), zstdCheck, processCpuMs);
}
load.push(loadavg()[0]);
const out = [`${bodies.length} typical pages (identity ${sizes[0]}-${sizes.at(-1)} B, median ${sizes[sizes.length >> 1]}), ${rounds} rounds; load average (1 min) ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)}.`, ''];
out.push('| coding | CPU ms / page | wall ms / page | ratio | KiB on the wire / page | fixed cost (100-byte body) us |', '|---|---|---|---|---|---|');
for (const r of rows) out.push(`| ${r.name} | ${r.cpu.toFixed(3)} | ${r.wall.toFixed(3)} | ${r.ratio.toFixed(2)} | ${r.kib.toFixed(1)} | ${r.fixedUs.toFixed(0)} |`);
process.stdout.write(`${out.join('\n')}\n`);
process.exit(0);
