#!/usr/bin/env node
// Compressed pages on the wire (issue 12): the cold 5M tail page asked as a
// browser asks (`Accept-Encoding: gzip, deflate, br, zstd`) against the
// identity page, and in each coding alone, side by side in one run. Each
// measurement is a fresh `session-pager serve` process (ready: /readyz 200),
// its first request that page (so nothing is cached), timed from the request
// to the last byte on the wire; modes interleave within each round. Also
// reports the wire bytes per coding next to dsh's published figures for a
// 416,756-event tail page, and the serving process's peak RSS (VmHWM).
//
//   node bench/compress-bench.mjs [--data DIR] [--runs N] [--workers N] [--vs DIR]
//
// --vs DIR: also serve from the built checkout in DIR (another commit, say
// the one before a change), identity and as a browser asks, interleaved in
// the same rounds: a before/after pair measured side by side.
//
// Prints a markdown report on stdout (docs/benchmarks.md keeps the latest).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseScriptArgs } from './args.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/session-pager-compress-bench' },
    runs: { type: 'string', default: '5' },
    workers: { type: 'string', default: '2' },
    vs: { type: 'string' },
  },
});
const dataDir = values.data;
const runs = Number(values.runs);
const workers = values.workers;
const ID = 'bench-5m';

if (!existsSync(join(dataDir, 'sessions', `${ID}.events`))) {
  process.stderr.write(`generating ${ID} (5,000,000 events, 416,000-delta tail) in ${dataDir}...\n`);
  const { generateSession } = await import(join(root, 'dist/main/gen/generate.js'));
  await generateSession(dataDir, { id: ID, events: 5_000_000, tailEvents: 416_000, seed: 7 });
}

const MODES = { identity: 'identity', browser: 'gzip, deflate, br, zstd', zstd: 'zstd', gzip: 'gzip', br: 'br' };
if (values.vs !== undefined) Object.assign(MODES, { 'vs identity': 'identity', 'vs browser': 'gzip, deflate, br, zstd' });
const rootOf = (mode) => (mode.startsWith('vs ') ? resolve(values.vs) : root);
const token = 'bench-token-0123456789';

function get(url, headers) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const req = request(url, { headers, agent: false }, (r) => {
      let n = 0;
      const chunks = [];
      r.on('data', (c) => {
        n += c.length;
        chunks.push(c);
      });
      r.on('end', () => res({ ms: performance.now() - t0, bytes: n, status: r.statusCode, encoding: r.headers['content-encoding'] ?? 'identity', body: Buffer.concat(chunks) }));
    });
    req.on('error', rej);
    req.end();
  });
}

function peakRss(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** A fresh server, ready (warm); resolves with its URL and process. */
async function startServer(from) {
  const srv = spawn(process.execPath, [join(from, 'bin/session-pager.js'), 'serve', '--data', dataDir, '--port', '0', '--workers', workers, '--log-level', 'warn'], { env: { ...process.env, SESSION_PAGER_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
  let banner = '';
  srv.stdout.on('data', (d) => (banner += d));
  srv.stderr.on('data', (d) => (banner += d));
  const url = await new Promise((res, rej) => {
    const t = setInterval(() => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(banner);
      if (m) {
        clearInterval(t);
        clearTimeout(to);
        res(m[1]);
      }
    }, 20);
    const to = setTimeout(() => {
      clearInterval(t);
      rej(new Error(`serve did not start: ${banner}`));
    }, 60_000);
  });
  for (let i = 0; i < 600; i++) {
    const r = await get(`${url}/readyz`, {}).catch(() => ({ status: 0 }));
    if (r.status === 200) break;
    await new Promise((r2) => setTimeout(r2, 25));
  }
  // Let the warm-up's last work and its garbage settle, as a server that has been up a moment would.
  await new Promise((r) => setTimeout(r, 300));
  return { url, srv };
}

async function stop(srv) {
  const done = new Promise((r) => srv.once('exit', r));
  srv.kill('SIGTERM');
  await done;
}

const results = Object.fromEntries(Object.keys(MODES).map((m) => [m, []]));
const names = Object.keys(MODES);
const load = [];
let identityBody = null;
for (let round = 0; round < runs; round++) {
  // Interleaved, and rotated each round so no mode always follows the same one.
  const order = names.map((_, i) => names[(i + round) % names.length]);
  for (const mode of order) {
    const { url, srv } = await startServer(rootOf(mode));
    const headers = { authorization: `Bearer ${token}`, 'accept-encoding': MODES[mode] };
    const r = await get(`${url}/v1/sessions/${ID}/page`, headers);
    if (r.status !== 200) throw new Error(`${mode}: status ${r.status}`);
    results[mode].push({ ms: r.ms, bytes: r.bytes, encoding: r.encoding, rss: peakRss(srv.pid) });
    if (mode === 'identity' && identityBody === null) identityBody = r.body;
    await stop(srv);
    load.push(loadavg()[0]);
    process.stderr.write(`round ${round + 1} ${mode}: ${r.ms.toFixed(1)} ms, ${r.bytes} bytes (${r.encoding})\n`);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const mb = (n) => (n / 1e6).toFixed(2);
const idMs = median(results.identity.map((x) => x.ms));

// The page's events as raw JSONL (dsh's "raw events" figure), from the identity body.
const { expandRecords } = await import(join(root, 'dist/core/chunk-codec.js'));
const page = JSON.parse(identityBody.toString('utf8'));
const events = expandRecords(page.records);
const rawBytes = events.reduce((a, e) => a + Buffer.byteLength(JSON.stringify(e)) + 1, 0);

const lines = [];
if (values.vs !== undefined) lines.push(`--vs: ${values.vs}; its browser/identity ratio: ${(median(results['vs browser'].map((x) => x.ms)) / median(results['vs identity'].map((x) => x.ms))).toFixed(2)}.`, '');
lines.push(`Cold 5M tail page (${page.toSeq - page.fromSeq} events, ${events.length} expanded), fresh server per measurement (${workers} workers), ${runs} rounds interleaved; load average 1-min during the run: ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)}.`);
lines.push('', '| asked (Accept-Encoding) | answered | wire bytes | median ms to last byte | min-max ms | x identity | peak RSS MB (median) |', '|---|---|---|---|---|---|---|');
for (const m of names) {
  const xs = results[m];
  const ms = xs.map((x) => x.ms);
  lines.push(`| ${m === 'browser' ? MODES[m] : m === 'vs browser' ? `${MODES[m]} (--vs)` : m === 'vs identity' ? 'identity (--vs)' : m} | ${xs[0].encoding} | ${xs[0].bytes.toLocaleString('en')} | ${median(ms).toFixed(1)} | ${Math.min(...ms).toFixed(1)}-${Math.max(...ms).toFixed(1)} | ${(median(ms) / idMs).toFixed(2)} | ${mb(median(xs.map((x) => x.rss)))} |`);
}
lines.push('', '| | dsh (416,756-event tail page) | this page |', '|---|---|---|');
lines.push(`| raw events | 69.4 MB | ${mb(rawBytes)} MB |`);
lines.push(`| packed (identity) | 6.36 MB | ${mb(results.identity[0].bytes)} MB |`);
lines.push(`| gzip | 1.15 MB | ${mb(results.gzip[0].bytes)} MB |`);
lines.push(`| brotli | 0.53 MB | ${mb(results.br[0].bytes)} MB |`);
lines.push(`| zstd | (not published) | ${mb(results.zstd[0].bytes)} MB |`);
process.stdout.write(lines.join('\n') + '\n');
