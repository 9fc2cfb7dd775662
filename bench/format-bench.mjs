#!/usr/bin/env node
// Binary (SPF2 + MessagePack) against JSONL sessions (issue 12): the same
// session generated in both frame encodings, its 50-message tail page
// measured side by side in one run, runs interleaved (jsonl, binary, jsonl,
// ...), every measurement in a fresh process:
//   - in process: bench/child.mjs pager (store opened, pool warmed, one cold
//     page, then ten more: the settled figure is the median of pages 6-10);
//   - over HTTP: a fresh `session-pager serve` per measurement, the page
//     asked once it is ready (identity), timed to the last byte on the wire,
//     peak RSS of the server from /proc (VmHWM).
//
//   node bench/format-bench.mjs [--data DIR] [--runs N] [--events N] [--tail N] [--workers N] [--roots A,B]
//
// --roots: other checkouts (built) measured in the same run, rounds
// alternating between them (A/B side by side); default this checkout.
//
// Prints a markdown report on stdout (docs/benchmarks.md keeps the latest).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, parseScriptArgs } from './args.mjs';
import { performance } from 'node:perf_hooks';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/session-pager-format-bench' },
    runs: { type: 'string', default: '5' },
    events: { type: 'string', default: '600000' },
    tail: { type: 'string', default: '416000' },
    workers: { type: 'string', default: '2' },
    roots: { type: 'string' },
  },
});
const dataDir = values.data;
const runs = Number(values.runs);
const workers = Number(values.workers);
const events = Number(values.events);
const formats = ['jsonl', 'binary'];
const idOf = (format) => `fmt-${format}-${events}`;

const { generateSession } = await import(join(root, 'dist/main/gen/generate.js'));
for (const format of formats) {
  if (existsSync(join(dataDir, 'sessions', `${idOf(format)}.events`))) continue;
  process.stderr.write(`generating ${idOf(format)}...\n`);
  await generateSession(dataDir, { id: idOf(format), events, tailEvents: Number(values.tail), seed: 8, format });
}

const tail = { maxMessages: 50 };
const roots = values.roots === undefined ? [root] : values.roots.split(',').map((r) => resolve(r));

function inProcess(format, root) {
  const r = spawnSync(process.execPath, [join(root, 'bench/child.mjs'), 'pager', dataDir, idOf(format), JSON.stringify(tail), JSON.stringify({ workers })], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`pager ${format} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

function get(port, path, token) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const req = request({ host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${token}`, 'accept-encoding': 'identity' } }, (r) => {
      let bytes = 0;
      const chunks = [];
      r.on('data', (c) => {
        bytes += c.length;
        chunks.push(c);
      });
      r.on('end', () => res({ status: r.statusCode, ms: performance.now() - t0, bytes, body: Buffer.concat(chunks) }));
      r.on('error', rej);
    });
    req.on('error', rej);
    req.end();
  });
}

function vmHwmMB(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function overHttp(format, root) {
  const token = 'format-bench';
  const srv = spawn(process.execPath, [join(root, 'bin/session-pager.js'), 'serve', '--data', dataDir, '--port', '0', '--workers', String(workers), '--log-level', 'warn'], { env: { ...process.env, SESSION_PAGER_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const port = await new Promise((res, rej) => {
      let banner = '';
      const on = (c) => {
        banner += c;
        const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(banner);
        if (m) res(Number(m[1]));
      };
      srv.stdout.on('data', on);
      srv.stderr.on('data', on);
      srv.on('exit', (code) => rej(new Error(`serve exited (${code}): ${banner}`)));
      setTimeout(() => rej(new Error(`serve did not start: ${banner}`)), 60_000);
    });
    // Ready (warmed up), as a client attaching to a running server finds it.
    for (let i = 0; i < 600; i++) {
      const r = await get(port, '/readyz', token);
      if (r.status === 200) break;
      await new Promise((r2) => setTimeout(r2, 10));
    }
    const page = await get(port, `/v1/sessions/${idOf(format)}/page?maxMessages=50`, token);
    if (page.status !== 200) throw new Error(`page ${format}: ${page.status} ${page.body.toString().slice(0, 200)}`);
    const again = [];
    for (let i = 0; i < 5; i++) again.push((await get(port, `/v1/sessions/${idOf(format)}/page?maxMessages=50&throughSeq=${JSON.parse(page.body).throughSeq - i - 1}`, token)).ms);
    return { ms: page.ms, bytes: page.bytes, body: page.body, warmMs: again.sort((a, b) => a - b)[2], rssMB: vmHwmMB(srv.pid) };
  } finally {
    srv.kill('SIGTERM');
    await new Promise((r) => srv.once('exit', r));
  }
}

const fmt = (x, d = 1) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));
const byRoot = new Map(roots.map((r) => [r, Object.fromEntries(formats.map((f) => [f, { proc: [], http: [] }]))]));
const load = [loadavg()[0]];
const bodies = {};
for (let i = 0; i < runs; i++) {
  // Alternate which build and which format go first, so neither always follows the other.
  for (const r of i % 2 === 0 ? roots : [...roots].reverse()) {
    const res = byRoot.get(r);
    for (const f of i % 2 === 0 ? formats : [...formats].reverse()) {
      res[f].proc.push(inProcess(f, r));
      const h = await overHttp(f, r);
      bodies[f] = h.body;
      delete h.body;
      res[f].http.push(h);
    }
  }
  load.push(loadavg()[0]);
}
const samePage = bodies.jsonl.toString('utf8').replace(idOf('jsonl'), '') === bodies.binary.toString('utf8').replace(idOf('binary'), '');
const lines = [];
lines.push(`Run ${new Date().toISOString()}, ${events.toLocaleString('en')}-event session (seed 8, ${Number(values.tail).toLocaleString('en')}-delta tail) in each encoding, ${workers} page workers, ${runs} interleaved rounds of fresh processes${roots.length > 1 ? `, builds alternating (${roots.join(', ')})` : ''}; 1-minute load average ${load.map((l) => l.toFixed(1)).join(' → ')}. The two sessions' HTTP page bodies are ${samePage ? 'byte-identical' : 'DIFFERENT'}.`);
for (const [r, res] of byRoot) {
  lines.push('');
  if (roots.length > 1) lines.push(`${r}:`, '');
  lines.push('| format | page bytes | frames | in process cold ms | in process settled ms | in process peak RSS MB | HTTP cold ms | HTTP warm ms | server peak RSS MB |');
  lines.push('|---|---|---|---|---|---|---|---|---|');
  for (const f of formats) {
    const { proc, http } = res[f];
    lines.push(`| ${f} | ${proc[0].bytes.toLocaleString('en')} | ${proc[0].frames.toLocaleString('en')} | ${fmt(median(proc.map((p) => p.ms)))} | ${fmt(median(proc.map((p) => p.warmMs)))} | ${fmt(median(proc.map((p) => p.maxRssPageMB)), 0)} | ${fmt(median(http.map((p) => p.ms)))} | ${fmt(median(http.map((p) => p.warmMs)))} | ${fmt(median(http.map((p) => p.rssMB)), 0)} |`);
  }
  const ratio = (k, sel) => median(res.binary[k].map(sel)) / median(res.jsonl[k].map(sel));
  lines.push('');
  lines.push(`binary / jsonl (medians): in process cold ${fmt(ratio('proc', (p) => p.ms), 2)}×, settled ${fmt(ratio('proc', (p) => p.warmMs), 2)}×; over HTTP cold ${fmt(ratio('http', (p) => p.ms), 2)}×, warm ${fmt(ratio('http', (p) => p.warmMs), 2)}×.`);
  lines.push('');
  for (const f of formats) lines.push(`${f} runs in order (ms): in process ${res[f].proc.map((p) => fmt(p.ms)).join(', ')}; HTTP ${res[f].http.map((p) => fmt(p.ms)).join(', ')}. Median cold run's worker phases: ${JSON.stringify(median(res[f].proc.map((p) => p.ms)) && res[f].proc.sort((a, b) => a.ms - b.ms)[Math.floor(runs / 2)].timing)}.`);
}
process.stdout.write(lines.join('\n') + '\n');
