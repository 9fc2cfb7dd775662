#!/usr/bin/env node
// Start-up, idle memory and the cold tail page over HTTP (issue 12), side by
// side with the reference reader in one run, each measurement in a fresh
// process:
//
//   node bench/serve-bench.mjs [--data DIR] [--runs N] [--reference-runs N] [--workers N] [--page-runs N]
//
// Per run and session (bench-5m, bench-600k; generated once, as
// bench/page-bench.mjs generates them), a fresh `session-pager serve`:
//   - listen: launch to the first /livez 200 (polled every 2 ms);
//   - ready: launch to the first /readyz 200 (warm-up done);
//   - idle RSS: the server's VmRSS one second after ready (nothing asked yet);
//   - cold tail page: one GET of the 50-message tail page, identity, from the
//     request's start to its last byte (node:http, a fresh connection);
//   - peak RSS: the server's VmHWM after that page (/proc/<pid>/status).
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
import { parseArgs } from 'node:util';
import { freePort, getOnce } from './servers.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    runs: { type: 'string', default: '5' },
    'reference-runs': { type: 'string', default: '3' },
    'page-runs': { type: 'string', default: '5' },
    workers: { type: 'string', default: '2' },
  },
});
const dataDir = values.data;
const runs = Number(values.runs);
const referenceRuns = Number(values['reference-runs']);
const pageRuns = Number(values['page-runs']);
const workers = values.workers;
const bin = join(root, 'bin/session-pager.js');

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

async function serverRun(s) {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [bin, 'serve', '--data', dataDir, '--port', String(port), '--workers', workers, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
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
    const page = await get(port, `/v1/sessions/${s.id}/page?maxMessages=50`, { 'accept-encoding': 'identity' });
    if (page.status !== 200) throw new Error(`page ${s.id}: HTTP ${page.status}`);
    const peakRssMB = statusMB(child.pid, 'VmHWM');
    return { listenMs, readyMs, idleRssMB, pageMs: page.ms, pageBytes: page.bytes, peakRssMB };
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
function pageCliRun(s) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [bin, 'page', s.id, '--data', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
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

const results = Object.fromEntries(sessions.map((s) => [s.id, { serve: [], reference: [], page: [] }]));
const loads = [loadavg()[0]];
const referenceEvery = Math.max(1, Math.floor(runs / Math.max(1, referenceRuns)));
for (let i = 0; i < runs; i++) {
  for (const s of sessions) results[s.id].serve.push(await serverRun(s));
  if (i % referenceEvery === 0 && results[sessions[0].id].reference.length < referenceRuns) for (const s of sessions) results[s.id].reference.push(await referenceRun(s));
  loads.push(loadavg()[0]);
}
for (let i = 0; i < pageRuns; i++) results['bench-5m'].page.push(await pageCliRun(sessions[0]));
loads.push(loadavg()[0]);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const med = (xs, k) => median(xs.map((x) => x[k]));
const f = (x, d = 1) => (x === undefined || x === null ? '–' : x.toFixed(d));
const lines = [];
lines.push(
  `Run ${new Date().toISOString()} on ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; ${workers} page workers; medians of ${runs} fresh servers per session, ${results[sessions[0].id].reference.length} reference processes, ${pageRuns} page commands; load average (1 min) ${f(Math.min(...loads))}-${f(Math.max(...loads))} during the run.`,
);
lines.push('');
lines.push('| session | listen ms | ready ms | idle RSS MB | cold tail page ms (last byte) | page bytes | server peak RSS MB | reference ms | reference peak RSS MB | reference / cold page | server / reference peak RSS |');
lines.push('|---|---|---|---|---|---|---|---|---|---|---|');
for (const s of sessions) {
  const { serve, reference } = results[s.id];
  const page = med(serve, 'pageMs');
  const rss = med(serve, 'peakRssMB');
  const ref = reference.length ? med(reference, 'ms') : null;
  const refRss = reference.length ? med(reference, 'peakRssMB') : null;
  lines.push(
    `| ${s.id} | ${f(med(serve, 'listenMs'), 0)} | ${f(med(serve, 'readyMs'), 0)} | ${f(med(serve, 'idleRssMB'))} | ${f(page)} | ${serve[0].pageBytes.toLocaleString('en')} | ${f(rss)} | ${f(ref, 0)} | ${f(refRss, 0)} | ${ref === null ? '–' : `${f(ref / page, 0)}×`} | ${refRss === null ? '–' : `1/${f(refRss / rss, 1)}`} |`,
  );
}
const a = med(results['bench-600k'].serve, 'pageMs');
const b = med(results['bench-5m'].serve, 'pageMs');
lines.push('');
lines.push(`Flatness: cold tail page 600k ${f(a)} ms, 5M ${f(b)} ms: 5M / 600k = ${f(b / a, 2)}.`);
lines.push('');
for (const s of sessions) {
  const { serve, reference } = results[s.id];
  lines.push(`${s.id} runs in order: listen ${serve.map((r) => f(r.listenMs, 0)).join(', ')} ms; ready ${serve.map((r) => f(r.readyMs, 0)).join(', ')} ms; idle RSS ${serve.map((r) => f(r.idleRssMB, 0)).join(', ')} MB; cold page ${serve.map((r) => f(r.pageMs)).join(', ')} ms; peak RSS ${serve.map((r) => f(r.peakRssMB, 0)).join(', ')} MB; reference ${reference.map((r) => f(r.ms, 0)).join(', ')} ms.`);
  lines.push('');
}
const pg = results['bench-5m'].page;
if (pg.length) lines.push(`\`session-pager page bench-5m\` (${pg[0].bytes.toLocaleString('en')} bytes on stdout), fresh processes, spawn to exit: median ${f(med(pg, 'wallMs'), 0)} ms (${pg.map((r) => f(r.wallMs, 0)).join(', ')}), peak RSS ${f(med(pg, 'peakRssMB'), 0)} MB.`);
process.stdout.write(lines.join('\n') + '\n');
process.stderr.write(JSON.stringify(results) + '\n');
