#!/usr/bin/env node
// `npm run bench` (issue 15): this service, the SQLite peer, the reference
// reader and the raw read of the page's bytes (the floor), side by side in one
// run, interleaved, each measurement in a fresh process (peer-child.mjs).
//
//   node bench/peer-bench.mjs [--full] [--data DIR] [--rounds N] [--seconds S] [--no-plots] [--setup-only]
//        [--generator lean|autocannon] [--http-warm S]
//
// Over HTTP the load comes from bench/lean-load.mjs (--generator lean, the default: bodies counted, not
// decoded; identity bodies sampled and checked against the peer reader after each lane) or from
// autocannon (bench/http-load.mjs, the load harness's client, ~0.6 ms of CPU a page on the same cores;
// docs/decisions.md).
//
// Each HTTP step is measured after --http-warm seconds (default 2) of the same load, unmeasured.
//
// Quick mode (default, a few minutes on 2 cores) scales the workloads down;
// --full runs the issue's sizes. Before anything is timed the peer's page
// bytes are checked against the service's on hundreds of random pages.
// Prints markdown tables; writes docs/bench-*.svg and the raw JSON beside
// (--no-plots: the tables only, nothing written under docs/).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { argError, parseScriptArgs } from './args.mjs';
import { barChart, lineChart, runNote } from './svg-plot.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseScriptArgs(import.meta.url, {
  options: {
    full: { type: 'boolean', default: false },
    data: { type: 'string' },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    'no-plots': { type: 'boolean', default: false },
    'setup-only': { type: 'boolean', default: false },
    generator: { type: 'string', default: 'lean' },
    'http-warm': { type: 'string', default: '2' },
  },
});
if (values.generator !== 'lean' && values.generator !== 'autocannon') throw new Error(`--generator lean|autocannon, not ${values.generator}`);
const full = values.full;
const dataDir = values.data ?? (full ? '/tmp/sp-peer-bench-full' : '/tmp/sp-peer-bench');
const rounds = Number(values.rounds ?? (full ? 5 : 2));
const seconds = Number(values.seconds ?? (full ? 10 : 4));
// Each step is measured after an unmeasured warm-up at its own connections and encoding, both servers
// alike (as bench/peer-ab.mjs does): without it a fresh server's first steps measured its start-up,
// not its pages (docs/benchmarks.md, the lead's quick run of the eighteenth session).
const httpWarmSeconds = Number(values['http-warm']);
if (!(Number.isInteger(httpWarmSeconds) && httpWarmSeconds >= 0 && httpWarmSeconds <= 60)) argError(import.meta.url, '--http-warm must be an integer in [0, 60]');
const dist = (p) => new URL(`../dist/${p}`, import.meta.url).href;
const log = (s) => process.stderr.write(`${s}\n`);

const W = full
  ? { tail: [5_000_000, 416_000], unpacked: 600_000, many: [200, 50_000], typical: 1_000_000 }
  : { tail: [1_000_000, 416_000], unpacked: 200_000, many: [40, 10_000], typical: 200_000 };

mkdirSync(dataDir, { recursive: true });
const { generateSession } = await import(dist('main/gen/generate.js'));
const { SessionWriter } = await import(dist('main/session-writer.js'));
const { readWholeLog } = await import(dist('main/reference-reader.js'));
const has = (id) => existsSync(join(dataDir, 'sessions', `${id}.events`));

// --- workloads -------------------------------------------------------------
if (!has('pb-tail')) {
  log(`generating pb-tail (${W.tail[0]} events, ${W.tail[1]}-delta tail)`);
  await generateSession(dataDir, { id: 'pb-tail', events: W.tail[0], tailEvents: W.tail[1], seed: 7 });
}
if (!has('pb-unpacked')) {
  log(`generating pb-unpacked (${W.unpacked} events stored unpacked: appends of 2 events never pack)`);
  const src = join(dataDir, 'src');
  if (!existsSync(join(src, 'sessions', 'pb-src.events'))) await generateSession(src, { id: 'pb-src', events: W.unpacked, seed: 8 });
  const { events } = await readWholeLog(join(src, 'sessions', 'pb-src.events'));
  const w = await SessionWriter.create(dataDir, 'pb-unpacked', { type: 'session', version: 1, createdAt: 1_780_000_000_000 }, { durable: false });
  for (let i = 0; i < events.length; i += 2) await w.append(events.slice(i, i + 2));
  await w.close();
}
const manyIds = Array.from({ length: W.many[0] }, (_, k) => `pb-many-${k}`);
if (!has(manyIds.at(-1))) {
  log(`generating ${W.many[0]} sessions of ${W.many[1]} events`);
  for (let k = 0; k < manyIds.length; k++) if (!has(manyIds[k])) await generateSession(dataDir, { id: manyIds[k], events: W.many[1], seed: 100 + k, stream: k });
}
if (!has('pb-typical')) {
  log(`building pb-typical (${W.typical} events of dsh-fixture-shaped conversations)`);
  const { buildFixtureSession } = await import('./fixture-session.mjs');
  await buildFixtureSession(dataDir, 'pb-typical', W.typical);
}

const workloads = [
  { name: 'tail', ids: ['pb-tail'], label: `1 session, ${W.tail[0].toLocaleString('en')} events, ${W.tail[1].toLocaleString('en')}-delta tail`, tailOnly: true },
  { name: 'unpacked', ids: ['pb-unpacked'], label: `1 session, ${W.unpacked.toLocaleString('en')} events stored unpacked`, tailOnly: true },
  { name: 'many', ids: manyIds, label: `${W.many[0]} sessions x ${W.many[1].toLocaleString('en')} events, random 50-message pages` },
  { name: 'typical', ids: ['pb-typical'], label: `1 session, ${W.typical.toLocaleString('en')} events of fixture-shaped conversations, random 50-message pages` },
];

// --- the peer's databases (one per workload, so each has its own size) ---
const { openPeer, loadSession, PeerReader } = await import(new URL('./sqlite-peer.mjs', import.meta.url).href);
const fileSize = (p) => (existsSync(p) ? statSync(p).size : 0);
for (const w of workloads) {
  w.db = join(dataDir, `peer-${w.name}.db`);
  if (!existsSync(w.db)) {
    log(`loading the peer: ${w.db}`);
    const db = openPeer(w.db);
    for (const id of w.ids) loadSession(db, dataDir, id);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
  w.peerBytes = fileSize(w.db) + fileSize(`${w.db}-wal`);
  w.storeBytes = 0;
  for (const id of w.ids) {
    w.storeBytes += fileSize(join(dataDir, 'sessions', `${id}.events`));
    const idx = join(dataDir, 'sessions', 'index');
    for (const f of [`${id}.index.json`, `${id}.entries.jsonl`]) w.storeBytes += fileSize(join(idx, f));
    const proj = join(idx, id);
    if (existsSync(proj)) for (const f of readdirSync(proj)) w.storeBytes += fileSize(join(proj, f));
  }
}

// --- the pages each workload asks for --------------------------------------
let seed = 12345;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
const { openStore } = await import(dist('main/store.js'));
const store = await openStore({ dataDir, workers: 2, pageCacheBytes: 0 });
const last = new Map();
for (const w of workloads) for (const id of w.ids) last.set(id, (await store.info(id)).lastSeq);
for (const w of workloads) {
  w.events = last.get(w.ids[0]) + 1;
  if (w.tailOnly) w.pages = [{ id: w.ids[0], params: { maxMessages: 50 } }];
  else
    w.pages = Array.from({ length: 200 }, () => {
      const id = w.ids[Math.floor(rand() * w.ids.length)];
      const l = last.get(id);
      return { id, params: { throughSeq: l, beforeSeq: 1 + Math.floor(rand() * (l + 1)), maxMessages: 50 } };
    });
  w.pagesFile = join(dataDir, `pages-${w.name}.json`);
  writeFileSync(w.pagesFile, JSON.stringify(w.pages));
}
// The pages files too (bench/peer-ab.mjs and bench/http-cpu.mjs read them), so a set-up directory is complete.
if (values['setup-only']) {
  await store.close();
  log(`workloads, peer databases and pages files ready in ${dataDir}`);
  process.exit(0);
}

// --- same bytes, before anything is timed ---------------------------------
let checked = 0;
for (const w of workloads) {
  const peer = new PeerReader(w.db);
  const asks = [...w.pages.slice(0, 40)];
  for (let i = 0; i < 60; i++) {
    const id = w.ids[Math.floor(rand() * w.ids.length)];
    const l = last.get(id);
    const mm = [1, 5, 50, 200][Math.floor(rand() * 4)];
    asks.push({ id, params: rand() < 0.2 ? { maxMessages: mm } : { throughSeq: l, beforeSeq: 1 + Math.floor(rand() * (l + 1)), maxMessages: mm } });
  }
  for (const a of asks) {
    const mine = (await store.pageBuffer(a.id, a.params)).body;
    const theirs = peer.page(a.id, a.params);
    if (!mine.equals(theirs)) throw new Error(`peer page differs from the service's: ${a.id} ${JSON.stringify(a.params)} (${theirs.length} vs ${mine.length} bytes)`);
    checked++;
  }
  peer.close();
}
await store.close();
log(`peer and service gave the same bytes on ${checked} pages`);

// --- interleaved fresh-process runs ---------------------------------------
function child(mode, w) {
  const r = spawnSync(process.execPath, [join(root, 'bench/peer-child.mjs'), mode, dataDir, w.db, w.pagesFile, String(seconds)], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${mode} ${w.name} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}
const READERS = ['pager', 'peer', 'floor', 'reference'];
for (const w of workloads) w.runs = Object.fromEntries(READERS.map((m) => [m, []]));
for (let r = 0; r < rounds; r++) {
  for (const w of workloads) {
    for (const m of READERS) {
      if (m === 'reference' && r > 0) continue; // seconds per page: one fresh process per workload
      log(`round ${r + 1}/${rounds}: ${w.name} ${m}`);
      w.runs[m].push(child(m, w));
    }
  }
}

// --- over HTTP: this service and the peer, side by side ---------------------
// Per workload, a fresh `serve` (2 page workers) over a data dir holding just
// that workload's sessions, and a fresh peer server (2 worker threads) over
// its database; the load from bench/http-load.mjs children (a process of
// their own), alternating servers step by step and the order round by round.
// Random-page workloads get fresh random pages per request (what a prepared-
// page cache cannot hold); tail workloads the tail page again and again.
const { startService, startPeer, linkedDataDir } = await import(new URL('./servers.mjs', import.meta.url).href);
const { laneSeed } = await import(new URL('./lane-seed.mjs', import.meta.url).href);
const token = 'bench-token-0123456789';
const ENCODINGS = { identity: 'identity', gzip: 'gzip', br: 'br', zstd: 'zstd', browser: 'gzip, deflate, br, zstd' };
const { request } = await import('node:http');
function wireBytes(url, path, enc) {
  return new Promise((res, rej) => {
    const req = request(`${url}${path}`, { headers: { authorization: `Bearer ${token}`, 'accept-encoding': enc } }, (r) => {
      let n = 0;
      r.on('data', (c) => (n += c.length));
      r.on('end', () => res({ bytes: n, encoding: r.headers['content-encoding'] ?? 'identity', status: r.statusCode }));
    });
    req.on('error', rej);
    req.end();
  });
}
function httpLoad(server, w, connections, enc, round, step, warm = false) {
  const lean = values.generator === 'lean';
  // Every lane draws its own pages (a warm-up too), so no lane finds an earlier one's in a page cache.
  const seed = laneSeed({ round, step, warm });
  const args = [join(root, lean ? 'bench/lean-load.mjs' : 'bench/http-load.mjs'), '--url', server.url, '--token', token, '--pages', w.pagesFile, '--connections', String(connections), '--seconds', String(warm ? httpWarmSeconds : httpSeconds), '--accept-encoding', ENCODINGS[enc], '--seed', String(seed)];
  if (!w.tailOnly) args.push('--random');
  // The lean lane's identity bodies, sampled, against the peer reader's pages after the lane.
  if (lean && enc === 'identity' && !warm) args.push('--check-db', w.db);
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`http-load ${server.name} ${w.name} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}
const httpSeconds = Math.max(2, Math.round(seconds / 2));
const HTTP_STEPS = ['identity-1', 'identity-16', 'browser-1', 'browser-16'];
const SERVERS = ['pager', 'peer'];
const HTTP_CHECKS = 100;
let httpChecked = 0;
for (const w of workloads) {
  const dir = linkedDataDir(dataDir, w.ids, join(dataDir, `http-${w.name}`));
  const servers = { pager: await startService(dir, token), peer: await startPeer(w.db, token) };
  try {
    const p = w.pages[0];
    const path = `/v1/sessions/${p.id}/page?${new URLSearchParams(Object.entries(p.params).map(([k, v]) => [k, String(v)]))}`;
    w.wire = {};
    w.peerWire = {};
    for (const [name, enc] of Object.entries(ENCODINGS)) {
      w.wire[name] = await wireBytes(servers.pager.url, path, enc);
      w.peerWire[name] = await wireBytes(servers.peer.url, path, enc);
    }
    // Same bytes over HTTP too, before anything is timed: random pages of the workload from both servers.
    const { mulberry32 } = await import(dist('main/gen/prng.js'));
    const r32 = mulberry32(w.events);
    for (let k = 0; k < HTTP_CHECKS; k++) {
      const id = w.ids[Math.floor(r32() * w.ids.length)];
      const l = last.get(id);
      const q = k === 0 ? 'maxMessages=50' : `throughSeq=${l}&beforeSeq=${1 + Math.floor(r32() * (l + 1))}&maxMessages=${[1, 5, 50, 200][k % 4]}`;
      const [a, b] = await Promise.all([servers.pager, servers.peer].map((sv) => fetch(`${sv.url}/v1/sessions/${id}/page?${q}`, { headers: { authorization: `Bearer ${token}`, 'accept-encoding': 'identity' } }).then(async (res) => ({ status: res.status, body: Buffer.from(await res.arrayBuffer()) }))));
      if (a.status !== 200 || b.status !== 200 || !a.body.equals(b.body)) throw new Error(`over HTTP the peer's page differs from the service's: ${id} ?${q} (status ${b.status} vs ${a.status}, ${b.body.length} vs ${a.body.length} bytes)`);
      httpChecked++;
    }
    w.http = Object.fromEntries(SERVERS.map((s) => [s, Object.fromEntries(HTTP_STEPS.map((k) => [k, []]))]));
    for (let r = 0; r < rounds; r++) {
      for (const [k, step] of HTTP_STEPS.entries()) {
        const [enc, c] = step.split('-');
        for (const s of r % 2 === 0 ? SERVERS : [...SERVERS].reverse()) {
          log(`http round ${r + 1}/${rounds}: ${w.name} ${s} ${step}`);
          if (httpWarmSeconds > 0) httpLoad(servers[s], w, Number(c), enc, r, k, true);
          w.http[s][step].push(httpLoad(servers[s], w, Number(c), enc, r, k));
        }
      }
    }
    w.httpRssMB = { pager: servers.pager.peakRssMB(), peer: servers.peer.peakRssMB() };
  } finally {
    await Promise.all(Object.values(servers).map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- report -----------------------------------------------------------------
const pct = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]; };
const med = (xs) => pct(xs, 0.5);
const f1 = (x) => (Number.isFinite(x) ? (x >= 100 ? Math.round(x).toLocaleString('en') : x.toFixed(x >= 10 ? 1 : 2)) : '–');
const mb = (b) => (b / 1048576).toFixed(1);
const summary = {};
const lines = [];
lines.push(`Run ${new Date().toISOString()} on ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, better-sqlite3 ${JSON.parse(readFileSync(join(root, 'node_modules/better-sqlite3/package.json'), 'utf8')).version}; ${full ? 'full' : 'quick'} mode, ${rounds} fresh processes per reader and workload (reference: 1), ${seconds} s budget each; peer == service bytes on ${checked} pages in process and ${httpChecked} over HTTP. A reader whose one page outlasts a quarter of the budget (and 5 s) runs no pages/s lanes (– below: bench/peer-child.mjs, bounded).`, '');
lines.push('| workload | reader | cold p50 ms | cold p99 ms | warm p50 ms | warm p99 ms | pages/s (1) | p99 ms (1) | pages/s (16) | p99 ms (16) | peak RSS MB | bytes read (rchar) MB |', '|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const w of workloads) {
  summary[w.name] = { label: w.label, events: w.events, storeBytes: w.storeBytes, peerBytes: w.peerBytes, wire: w.wire, peerWire: w.peerWire, http: w.http, httpRssMB: w.httpRssMB, readers: {} };
  for (const m of READERS) {
    const runs = w.runs[m];
    const cold = runs.map((x) => x.coldMs);
    const warm = runs.flatMap((x) => x.warmMs);
    const s = { coldP50: med(cold), coldP99: pct(cold, 0.99), warmP50: med(warm), warmP99: pct(warm, 0.99), pps1: med(runs.map((x) => x.pagesPerSec1)), pps16: med(runs.map((x) => x.pagesPerSec16)), p99at1: med(runs.map((x) => x.p99at1)), p99at16: med(runs.map((x) => x.p99at16)), peakRssMB: med(runs.map((x) => x.peakRssMB)), coldRssMB: med(runs.map((x) => x.coldRssMB)), rcharMB: med(runs.map((x) => x.rchar)) / 1048576 };
    summary[w.name].readers[m] = s;
    lines.push(`| ${w.name} | ${m} | ${f1(s.coldP50)} | ${f1(s.coldP99)} | ${f1(s.warmP50)} | ${f1(s.warmP99)} | ${f1(s.pps1)} | ${f1(s.p99at1)} | ${f1(s.pps16)} | ${f1(s.p99at16)} | ${f1(s.peakRssMB)} | ${f1(s.rcharMB)} |`);
  }
}
lines.push('', '| workload | service store MB | peer db MB | server | wire identity | gzip | br | zstd | browser (what it chose) |', '|---|---|---|---|---|---|---|---|---|');
for (const w of workloads) {
  for (const [who, wire] of [['session-pager', w.wire], ['SQLite peer', w.peerWire]]) {
    lines.push(`| ${w.name} | ${mb(w.storeBytes)} | ${mb(w.peerBytes)} | ${who} | ${wire.identity.bytes.toLocaleString('en')} | ${wire.gzip.bytes.toLocaleString('en')} | ${wire.br.bytes.toLocaleString('en')} | ${wire.zstd.bytes.toLocaleString('en')} (${wire.zstd.encoding}) | ${wire.browser.bytes.toLocaleString('en')} (${wire.browser.encoding}) |`);
  }
}
// Over HTTP: 2xx/s and p99 per step, medians over the rounds (fresh random pages for the random workloads).
const httpStat = (runs) => ({ okPerSec: med(runs.map((x) => x.okPerSec)), p99: med(runs.map((x) => (x.okPerSec > 0 ? x.p99 : NaN)).filter(Number.isFinite)), non2xx: runs.reduce((a, x) => a + Object.entries(x.byStatus).filter(([k]) => k !== '200').reduce((b, [, v]) => b + v, 0) + x.errors + x.timeouts, 0) });
lines.push('', `Over HTTP (fresh server processes, load from a separate process (${values.generator === 'lean' ? 'bench/lean-load.mjs' : 'autocannon, bench/http-load.mjs'}), ${httpSeconds} s per step after a ${httpWarmSeconds} s warm-up at its own connections, medians of ${rounds} rounds; 2xx pages/s, p99 ms):`, '');
lines.push('| workload | server | identity 1 conn | identity 16 | browser encoding 1 | browser encoding 16 | server peak RSS MB |', '|---|---|---|---|---|---|---|');
for (const w of workloads) {
  summary[w.name].httpStats = {};
  for (const sv of SERVERS) {
    const st = Object.fromEntries(HTTP_STEPS.map((k) => [k, httpStat(w.http[sv][k])]));
    summary[w.name].httpStats[sv] = st;
    lines.push(`| ${w.name} | ${sv === 'pager' ? 'session-pager' : 'SQLite peer'} | ${HTTP_STEPS.map((k) => `${f1(st[k].okPerSec)}, ${f1(st[k].p99)}${st[k].non2xx ? ` (${st[k].non2xx} non-2xx)` : ''}`).join(' | ')} | ${f1(w.httpRssMB[sv])} |`);
  }
}
lines.push('', '| workload | in process: service / peer pages/s (1) | (16) | p99 peer / service (1) | (16) | peer cold / service cold | service / peer peak RSS | HTTP: service / peer 2xx/s (1) | (16) | p99 peer / service (1) | (16) |', '|---|---|---|---|---|---|---|---|---|---|---|');
for (const w of workloads) {
  const r = summary[w.name].readers;
  const h = summary[w.name].httpStats;
  summary[w.name].ratios = {
    pps1: r.pager.pps1 / r.peer.pps1, pps16: r.pager.pps16 / r.peer.pps16, p99x1: r.peer.p99at1 / r.pager.p99at1, p99x16: r.peer.p99at16 / r.pager.p99at16,
    cold: r.peer.coldP50 / r.pager.coldP50, rss: r.pager.peakRssMB / r.peer.peakRssMB,
    http1: h.pager['identity-1'].okPerSec / h.peer['identity-1'].okPerSec, http16: h.pager['identity-16'].okPerSec / h.peer['identity-16'].okPerSec,
    httpP99x1: h.peer['identity-1'].p99 / h.pager['identity-1'].p99, httpP99x16: h.peer['identity-16'].p99 / h.pager['identity-16'].p99,
  };
  const x = summary[w.name].ratios;
  lines.push(`| ${w.name} | ${f1(x.pps1)}x | ${f1(x.pps16)}x | ${f1(x.p99x1)}x | ${f1(x.p99x16)}x | ${f1(x.cold)}x | ${f1(x.rss)} | ${f1(x.http1)}x | ${f1(x.http16)}x | ${f1(x.httpP99x1)}x | ${f1(x.httpP99x16)}x |`);
}
const report = lines.join('\n') + '\n';
process.stdout.write(report);
// --no-plots writes nothing under docs/ (the raw JSON beside the plots is the plots' data).
if (!values['no-plots']) {
  writeFileSync(join(root, 'docs', `bench-peer-${full ? 'full' : 'quick'}.json`), JSON.stringify(summary, null, 1) + '\n');
  const note = runNote(`${full ? 'full' : 'quick'} mode`, `${rounds} rounds of ${seconds} s`);
  const byLen = [...workloads].sort((a, b) => a.events - b.events);
  const series = (key) => READERS.map((m) => ({ name: m === 'pager' ? 'session-pager' : m === 'peer' ? 'SQLite peer' : m, dashed: m === 'floor', points: byLen.map((w) => [w.events, summary[w.name].readers[m][key]]) }));
  writeFileSync(join(root, 'docs/bench-latency.svg'), lineChart({ title: 'Cold page latency (p50) by session length', note, xLabel: 'events in the session (log)', yLabel: 'ms (log)', logX: true, logY: true, series: series('coldP50') }));
  writeFileSync(join(root, 'docs/bench-rss.svg'), lineChart({ title: 'Peak RSS of a fresh process by session length', note, xLabel: 'events in the session (log)', yLabel: 'MB (log)', logX: true, logY: true, series: series('peakRssMB') }));
  const encs = Object.keys(ENCODINGS);
  writeFileSync(join(root, 'docs/bench-wire.svg'), barChart({ title: 'Bytes on the wire per encoding (first page of each workload)', note, xLabel: 'workload', yLabel: 'bytes (log)', logY: true, categories: workloads.map((w) => w.name), series: encs.map((e) => ({ name: e, values: workloads.map((w) => w.wire[e].bytes) })) }));
  log(`wrote docs/bench-peer-${full ? 'full' : 'quick'}.json, docs/bench-latency.svg, docs/bench-rss.svg, docs/bench-wire.svg`);
}
