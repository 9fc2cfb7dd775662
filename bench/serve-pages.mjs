#!/usr/bin/env node
// Built pages through `serve` (its launcher, so glibc's settings as shipped), two checkouts side by
// side: each round a fresh server of A and of B (alternating A B B A ...), then --pages pinned pages
// of the session near its tail (throughSeq = last, last-step, last-2*step ...: each a page built once,
// never a prepared-page cache hit), one at a time, to the last byte. Per page: ms and the server's
// minor faults (all threads, /proc/PID/stat); then RSS --idle-ms after the last page and the peak.
//
//   node bench/serve-pages.mjs --a DIR --b DIR [--data DIR] [--id ID] [--rounds N] [--pages N]
//        [--step N] [--max-messages N] [--idle-ms N] [--env K=V,...] [--env-a ...] [--env-b ...]
//
// --env sets variables in both servers (e.g. GLIBC_TUNABLES=glibc.malloc.mmap_threshold=...: the
// launcher keeps a threshold set by the user), --env-a / --env-b in one alone.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { keyValueList, median, parseScriptArgs } from './args.mjs';
import { getOnce, launchServe } from './servers.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    id: { type: 'string', default: 'bench-5m' },
    rounds: { type: 'string', default: '4' },
    pages: { type: 'string', default: '12' },
    step: { type: 'string', default: '7' },
    'max-messages': { type: 'string', default: '50' },
    'idle-ms': { type: 'string', default: '4000' },
    env: { type: 'string', default: '' },
    'env-a': { type: 'string', default: '' },
    'env-b': { type: 'string', default: '' },
  },
});
if (!values.a || !values.b) throw new Error('--a and --b are required');
const builds = [
  { dir: resolve(values.a), env: { ...keyValueList(values.env), ...keyValueList(values['env-a']) } },
  { dir: resolve(values.b), env: { ...keyValueList(values.env), ...keyValueList(values['env-b']) } },
];
const nPages = Number(values.pages);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const statusMB = (pid, k) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${k}:\\s+(\\d+)`))[1]) / 1024;
const minflt = (pid) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[7]);

let port = 21_000 + Math.floor(Math.random() * 2000);
async function round(b) {
  port++;
  const { child, waitFor } = launchServe(b.dir, values.data, port, b.env);
  try {
    await waitFor('/readyz', 5);
    await sleep(500);
    const idleBefore = statusMB(child.pid, 'VmRSS');
    const info = await fetch(`http://127.0.0.1:${port}/v1/sessions/${values.id}`).then((r) => r.json());
    const last = info.lastSeq;
    const pages = [];
    for (let i = 0; i < nPages; i++) {
      const f0 = minflt(child.pid);
      const r = await getOnce(port, `/v1/sessions/${values.id}/page?throughSeq=${last - i * Number(values.step)}&maxMessages=${values['max-messages']}`, { 'accept-encoding': 'identity' });
      if (r.status !== 200) throw new Error(`page ${i}: ${r.status}`);
      pages.push({ ms: r.ms, faults: minflt(child.pid) - f0, bytes: r.bytes });
    }
    const peak = statusMB(child.pid, 'VmHWM');
    await sleep(Number(values['idle-ms']));
    return { pages, idleBefore, idleAfter: statusMB(child.pid, 'VmRSS'), peak };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.on('exit', r));
  }
}

const load = [loadavg()[0]];
const got = [[], []];
for (let i = 0; i < Number(values.rounds); i++) {
  for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) got[k].push(await round(builds[k]));
  load.push(loadavg()[0]);
}
// '–' where a part has no pages (fewer --pages than the part's first).
const f = (x, d = 1) => (x === undefined ? '–' : x.toFixed(d));
const lines = [`${values.rounds} fresh servers per build, alternating, ${nPages} pinned ${values.id} pages each (step ${values.step}, maxMessages ${values['max-messages']}); load average (1 min) ${f(Math.min(...load))}-${f(Math.max(...load))}.`, ''];
lines.push('| build | page bytes | ms per page, median (pages 1 / 2-4 / 5-12) | faults per page, median (pages 1 / 2-4 / 5-12) | idle RSS MB before / after (medians) | peak RSS MB (median) |');
lines.push('|---|---|---|---|---|---|');
for (const [k, b] of builds.entries()) {
  const all = got[k];
  const part = (key, from, to) => median(all.flatMap((r) => r.pages.slice(from, to).map((p) => p[key])));
  const env = Object.entries(b.env).map(([x, y]) => `${x}=${y}`).join(' ');
  lines.push(
    `| ${k === 0 ? 'A' : 'B'} ${b.dir}${env ? ` (${env})` : ''} | ${median(all.flatMap((r) => r.pages.map((p) => p.bytes))).toLocaleString('en')} | ${f(part('ms', 0, 1), 2)} / ${f(part('ms', 1, 4), 2)} / ${f(part('ms', 4), 2)} | ${f(part('faults', 0, 1), 0)} / ${f(part('faults', 1, 4), 0)} / ${f(part('faults', 4), 0)} | ${f(median(all.map((r) => r.idleBefore)))} / ${f(median(all.map((r) => r.idleAfter)))} | ${f(median(all.map((r) => r.peak)))} |`,
  );
}
lines.push('');
for (const [k] of builds.entries()) lines.push(`${k === 0 ? 'A' : 'B'} idle after, per round: ${got[k].map((r) => f(r.idleAfter)).join(', ')}; peak: ${got[k].map((r) => f(r.peak)).join(', ')}.`);
process.stdout.write(lines.join('\n') + '\n');
