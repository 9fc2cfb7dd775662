#!/usr/bin/env node
// Start-up and idle memory of a fresh `session-pager serve --workers 2`, as the OS sees it
// (issue 12): one JSON line per run.
//
//   node bench/startup-memory.mjs [--root DIR] [--data DIR] [--runs N] [--page ID]
//
// Per run a fresh server (--root: the checkout whose bin/ is started, default this one):
//   listen / ready: launch to the first /livez, /readyz 200 (polled every 2 / 5 ms);
//   cpuReady: CPU of the whole process (every thread) at ready, ms; threads: the same per thread;
//   idle: VmRSS one second after ready; smaps: that RSS by mapping (the node binary's
//   pages, V8's 256 KiB heap pages, the malloc heap, large and small anonymous mappings);
//   with --page ID: that session's tail page is asked at once (while the server warms up:
//   early) and again after the idle reading (page: ms to the last byte), then peak (VmHWM)
//   and the RSS 0.5 s later (after).
// Run measurements at normal priority, one at a time (BRIEF: bench.lock).
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseScriptArgs } from './args.mjs';
import { getOnce, launchServe } from './servers.mjs';
import { rssByMapping } from './smaps.mjs';

const here = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseScriptArgs(import.meta.url, { options: { root: { type: 'string', default: here }, data: { type: 'string', default: '/tmp/session-pager-startup-empty' }, runs: { type: 'string', default: '3' }, page: { type: 'string', default: '' } } });
const { root, data, page: pageId } = values;
mkdirSync(data, { recursive: true });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const statusMB = (pid, k) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${k}:\\s+(\\d+)`))[1]) / 1024;
const cpuMs = (stat) => {
  const f = stat.split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

const get = async (port, path, headers) => {
  const r = await getOnce(port, path, headers);
  return { ...r, ms: +r.ms.toFixed(1) };
};

/** RSS (MB) by kind of mapping, the kinds of half a MB or more. */
function smaps(pid) {
  return Object.fromEntries(Object.entries(rssByMapping(pid)).filter(([, v]) => v >= 0.5).map(([k, v]) => [k, +v.toFixed(1)]));
}

let port = 18_000 + Math.floor(Math.random() * 2000);
for (let run = 0; run < Number(values.runs); run++) {
  port++;
  const { child, waitFor } = launchServe(root, data, port);
  const listen = await waitFor('/livez', 2);
  const early = pageId ? get(port, `/v1/sessions/${pageId}/page`, { 'accept-encoding': 'identity' }) : null;
  const ready = await waitFor('/readyz', 5);
  const cpuReady = cpuMs(readFileSync(`/proc/${child.pid}/stat`, 'utf8'));
  const threads = {};
  for (const t of readdirSync(`/proc/${child.pid}/task`)) {
    const ms = cpuMs(readFileSync(`/proc/${child.pid}/task/${t}/stat`, 'utf8'));
    if (ms > 0) threads[t] = ms;
  }
  await sleep(1000);
  const idle = +statusMB(child.pid, 'VmRSS').toFixed(1);
  const byMapping = smaps(child.pid);
  const out = { load: +loadavg()[0].toFixed(1), listen, ready, cpuReady, threads, idle, smaps: byMapping };
  if (pageId) {
    out.early = await early;
    out.page = await get(port, `/v1/sessions/${pageId}/page`, { 'accept-encoding': 'identity' });
    out.peak = +statusMB(child.pid, 'VmHWM').toFixed(1);
    await sleep(500);
    out.after = +statusMB(child.pid, 'VmRSS').toFixed(1);
  }
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
  process.stdout.write(JSON.stringify(out) + '\n');
}
