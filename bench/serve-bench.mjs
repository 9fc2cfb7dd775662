#!/usr/bin/env node
// Start-up, idle memory and the cold tail page over HTTP (issue 12), side by
// side with the reference reader in one run, each measurement in a fresh
// process:
//
//   node bench/serve-bench.mjs [--data DIR] [--runs N] [--reference-runs N] [--workers N] [--page-runs N]
//                              [--warm-pages N] [--roots DIR,DIR]
//
// --roots: built checkouts compared side by side (A/B), each run alternating between them in
// the same order; default this checkout alone. Their bin/session-pager.js is started as a
// command (its shebang), as a user's `session-pager` is, not as `node bin/...`: a launcher's
// own work (bin/session-pager.js sets a glibc tunable for `serve`) is part of what is measured.
//
// Per run and session (bench-5m, bench-600k; generated once, as
// bench/page-bench.mjs generates them), a fresh `session-pager serve`:
//   - listen: launch to the first /livez 200 (polled every 2 ms);
//   - ready: launch to the first /readyz 200 (warm-up done);
//   - idle RSS: the server's VmRSS one second after ready (nothing asked yet);
//   - cold tail page: one GET of the 50-message tail page, identity, from the
//     request's start to its last byte (node:http, a fresh connection);
//   - peak RSS: the server's VmHWM after that page (/proc/<pid>/status);
//   - warm tail page (--warm-pages N, default 0): N more of the same page, one after
//     another, their median (peak RSS is read after them).
//   - its malloc memory idle: the RSS of its heap mappings ([heap] and large anonymous ones).
// The reference reader (decode the whole log, select, pack, serialize: what
// hosts do today) runs in fresh processes of bench/child.mjs, interleaved
// with the servers; its peak RSS is its own VmHWM.
// Then `session-pager page <id>` (the 50-message tail page on stdout) in
// fresh processes: wall time from spawn to exit, and the process's peak RSS.
// Prints a markdown report on stdout, the raw figures as JSON on stderr.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, parseScriptArgs } from './args.mjs';
import { freePort, getOnce } from './servers.mjs';
import { rssByMapping } from './smaps.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    runs: { type: 'string', default: '5' },
    'reference-runs': { type: 'string', default: '3' },
    'page-runs': { type: 'string', default: '5' },
    workers: { type: 'string', default: '2' },
    'warm-pages': { type: 'string', default: '0' },
    roots: { type: 'string', default: '' },
  },
});
const dataDir = values.data;
const runs = Number(values.runs);
const referenceRuns = Number(values['reference-runs']);
const pageRuns = Number(values['page-runs']);
const workers = values.workers;
const warmPages = Number(values['warm-pages']);
const roots = values.roots === '' ? [root] : values.roots.split(',').map((r) => resolve(r));
const binOf = (r) => join(r, 'bin/session-pager.js');

const sessions = [
  { id: 'bench-5m', events: 5_000_000, tail: 416_000, seed: 7 },
  { id: 'bench-600k', events: 600_000, tail: 416_000, seed: 8 },
];
const { generateSession } = await import(join(root, 'dist/main/gen/generate.js'));
for (const s of sessions) {
  if (existsSync(join(dataDir, 'sessions', `${s.id}.events`))) continue;
  process.stderr.write(`generating ${s.id} (${s.events} events, ${s.tail}-delta tail)...\n`);
  await generateSession(dataDir, { id: s.id, events: s.events, tailEvents: s.tail, seed: s.seed });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const statusMB = (pid, key) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${key}:\\s+(\\d+)`))[1]) / 1024;


const get = getOnce;
/** RSS (MB) of the malloc heaps: the main thread's [heap] and the large anonymous mappings (the threads' arenas, with V8's large objects and stacks). */
function mallocMB(pid) {
  const m = rssByMapping(pid);
  return (m['[heap]'] ?? 0) + (m['anon large'] ?? 0);
}

async function serverRun(s, r) {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(binOf(r), ['serve', '--data', dataDir, '--port', String(port), '--workers', workers, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((r) => child.on('exit', r));
  try {
    let listenMs = null;
    while (listenMs === null) {
      if (child.exitCode !== null) throw new Error(`serve exited: ${err}`);
      if ((await get(port, '/livez')).status === 200) listenMs = performance.now() - t0;
      else await sleep(2);
      if (performance.now() - t0 > 60_000) throw new Error('serve did not listen within 60 s');
    }
    let readyMs = null;
    while (readyMs === null) {
      if ((await get(port, '/readyz')).status === 200) readyMs = performance.now() - t0;
      else await sleep(2);
      if (performance.now() - t0 > 120_000) throw new Error('serve was not ready within 120 s');
    }
    await sleep(1000);
    const idleRssMB = statusMB(child.pid, 'VmRSS');
    const idleMallocMB = mallocMB(child.pid);
    const page = await get(port, `/v1/sessions/${s.id}/page?maxMessages=50`, { 'accept-encoding': 'identity' });
    if (page.status !== 200) throw new Error(`page ${s.id}: HTTP ${page.status}`);
    const warm = [];
    for (let i = 0; i < warmPages; i++) warm.push((await get(port, `/v1/sessions/${s.id}/page?maxMessages=50`, { 'accept-encoding': 'identity' })).ms);
    const peakRssMB = statusMB(child.pid, 'VmHWM');
    return { listenMs, readyMs, idleRssMB, idleMallocMB, pageMs: page.ms, pageBytes: page.bytes, warmMs: warm.length ? median(warm) : null, peakRssMB };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/** A fresh process of bench/child.mjs; its peak RSS from /proc while it runs (VmHWM just before exit is not readable from here, so it is polled). */
function childRun(args) {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let hwm = 0;
    const poll = setInterval(() => {
      try {
        hwm = Math.max(hwm, statusMB(child.pid, 'VmHWM'));
      } catch {
        // exited
      }
    }, 20);
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      clearInterval(poll);
      if (code !== 0) return rej(new Error(`${args.join(' ')}: exit ${code}: ${err}`));
      res({ out, hwm });
    });
  });
}

async function referenceRun(s) {
  const { out, hwm } = await childRun([join(root, 'bench/child.mjs'), 'reference', dataDir, s.id, JSON.stringify({ maxMessages: 50 })]);
  const r = JSON.parse(out.trim().split('\n').pop());
  return { ms: r.ms, bytes: r.bytes, peakRssMB: Math.max(hwm, r.maxRssMB) };
}

/** `session-pager page` in a fresh process: spawn to exit. */
function pageCliRun(s, r) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const child = spawn(binOf(r), ['page', s.id, '--data', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let bytes = 0;
    let err = '';
    let hwm = 0;
    const poll = setInterval(() => {
      try {
        hwm = Math.max(hwm, statusMB(child.pid, 'VmHWM'));
      } catch {
        // exited
      }
    }, 5);
    child.stdout.on('data', (d) => (bytes += d.length));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      const wallMs = performance.now() - t0;
      clearInterval(poll);
      if (code !== 0) return rej(new Error(`page ${s.id}: exit ${code}: ${err}`));
      res({ wallMs, bytes, peakRssMB: hwm });
    });
  });
}

const results = Object.fromEntries(roots.map((r) => [r, Object.fromEntries(sessions.map((s) => [s.id, { serve: [], reference: [], page: [] }]))]));
const reference = Object.fromEntries(sessions.map((s) => [s.id, []]));
const loads = [loadavg()[0]];
const referenceEvery = Math.max(1, Math.floor(runs / Math.max(1, referenceRuns)));
for (let i = 0; i < runs; i++) {
  for (const s of sessions) for (const r of roots) results[r][s.id].serve.push(await serverRun(s, r));
  if (i % referenceEvery === 0 && reference[sessions[0].id].length < referenceRuns) for (const s of sessions) reference[s.id].push(await referenceRun(s));
  loads.push(loadavg()[0]);
}
for (let i = 0; i < pageRuns; i++) for (const r of roots) results[r]['bench-5m'].page.push(await pageCliRun(sessions[0], r));
loads.push(loadavg()[0]);

const med = (xs, k) => median(xs.map((x) => x[k]));
const f = (x, d = 1) => (x === undefined || x === null || Number.isNaN(x) ? '–' : x.toFixed(d));
const lines = [];
lines.push(
  `Run ${new Date().toISOString()} on ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; ${workers} page workers; medians of ${runs} fresh servers per session and build, ${reference[sessions[0].id].length} reference processes, ${pageRuns} page commands per build; load average (1 min) ${f(Math.min(...loads))}-${f(Math.max(...loads))} during the run.`,
);
lines.push('');
lines.push('| build | session | listen ms | ready ms | idle RSS MB | idle malloc MB | cold tail page ms (last byte) | warm tail page ms | page bytes | server peak RSS MB | reference ms | reference peak RSS MB | reference / cold page | server / reference peak RSS |');
lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of roots) {
  for (const s of sessions) {
    const { serve } = results[r][s.id];
    const page = med(serve, 'pageMs');
    const rss = med(serve, 'peakRssMB');
    const ref = reference[s.id].length ? med(reference[s.id], 'ms') : null;
    const refRss = reference[s.id].length ? med(reference[s.id], 'peakRssMB') : null;
    lines.push(
      `| ${r} | ${s.id} | ${f(med(serve, 'listenMs'), 0)} | ${f(med(serve, 'readyMs'), 0)} | ${f(med(serve, 'idleRssMB'))} | ${f(med(serve, 'idleMallocMB'))} | ${f(page)} | ${f(warmPages ? med(serve, 'warmMs') : null)} | ${serve[0].pageBytes.toLocaleString('en')} | ${f(rss)} | ${f(ref, 0)} | ${f(refRss, 0)} | ${ref === null ? '–' : `${f(ref / page, 0)}×`} | ${refRss === null ? '–' : `1/${f(refRss / rss, 1)}`} |`,
    );
  }
}
lines.push('');
for (const r of roots) {
  const a = med(results[r]['bench-600k'].serve, 'pageMs');
  const b = med(results[r]['bench-5m'].serve, 'pageMs');
  lines.push(`${r}: flatness, cold tail page 600k ${f(a)} ms, 5M ${f(b)} ms: 5M / 600k = ${f(b / a, 2)}.`);
  lines.push('');
  for (const s of sessions) {
    const { serve } = results[r][s.id];
    lines.push(`${r} ${s.id} runs in order: listen ${serve.map((x) => f(x.listenMs, 0)).join(', ')} ms; ready ${serve.map((x) => f(x.readyMs, 0)).join(', ')} ms; idle RSS ${serve.map((x) => f(x.idleRssMB, 0)).join(', ')} MB; cold page ${serve.map((x) => f(x.pageMs)).join(', ')} ms; warm page ${serve.map((x) => f(x.warmMs)).join(', ')} ms; peak RSS ${serve.map((x) => f(x.peakRssMB, 0)).join(', ')} MB.`);
    lines.push('');
  }
  const pg = results[r]['bench-5m'].page;
  if (pg.length) lines.push(`${r}: \`session-pager page bench-5m\` (${pg[0].bytes.toLocaleString('en')} bytes on stdout), fresh processes, spawn to exit: median ${f(med(pg, 'wallMs'), 0)} ms (${pg.map((x) => f(x.wallMs, 0)).join(', ')}), peak RSS ${f(med(pg, 'peakRssMB'), 0)} MB.`);
  lines.push('');
}
for (const s of sessions) lines.push(`reference ${s.id}: ${reference[s.id].map((x) => f(x.ms, 0)).join(', ')} ms.`);
process.stdout.write(lines.join('\n') + '\n');
process.stderr.write(JSON.stringify({ results, reference }) + '\n');
