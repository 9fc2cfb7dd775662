#!/usr/bin/env node
// `npm run bench` (issue 15): this service, the SQLite peer, the reference
// reader and the raw read of the page's bytes (the floor), side by side in one
// run, interleaved, each measurement in a fresh process (peer-child.mjs).
//
//   node bench/peer-bench.mjs [--full] [--data DIR] [--rounds N] [--seconds S] [--no-plots]
//
// Quick mode (default, a few minutes on 2 cores) scales the workloads down;
// --full runs the issue's sizes. Before anything is timed the peer's page
// bytes are checked against the service's on hundreds of random pages.
// Prints markdown tables; writes docs/bench-*.svg and the raw JSON beside.
import { spawnSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { barChart, lineChart } from './svg-plot.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    full: { type: 'boolean', default: false },
    data: { type: 'string' },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    'no-plots': { type: 'boolean', default: false },
  },
});
const full = values.full;
const dataDir = values.data ?? (full ? '/tmp/sp-peer-bench-full' : '/tmp/sp-peer-bench');
const rounds = Number(values.rounds ?? (full ? 5 : 2));
const seconds = Number(values.seconds ?? (full ? 10 : 4));
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
  const { expandRow } = await import(dist('main/core/chunk-codec.js'));
  const fixtures = join(root, 'test/fixtures/dsh');
  const convs = readdirSync(fixtures).filter((f) => f.endsWith('.jsonl')).sort().map((f) => {
    const out = [];
    for (const line of readFileSync(join(fixtures, f), 'utf8').split('\n').slice(1)) {
      if (!line) continue;
      const r = JSON.parse(line);
      if ('seq0' in r) out.push(...expandRow(r));
      else out.push(r);
    }
    return out;
  }).filter((c) => c.length > 0);
  const w = await SessionWriter.create(dataDir, 'pb-typical', { type: 'session', version: 0, createdAt: 1_780_000_000_000 }, { durable: false });
  let seq = 0;
  let time = 1_780_000_000_000;
  while (seq < W.typical) {
    for (const conv of convs) {
      const base = seq;
      const t0 = conv[0]?.time ?? 0;
      const shifted = conv.map((e) => {
        const c = { ...e, seq: base + e.seq, time: time + (e.time - t0) };
        if (Array.isArray(e.sourceEventSeqs)) c.sourceEventSeqs = e.sourceEventSeqs.map((x) => base + x);
        return c;
      });
      for (let i = 0; i < shifted.length; i += 7) await w.append(shifted.slice(i, i + 7));
      seq += shifted.length;
      time = shifted[shifted.length - 1].time + 1000;
    }
  }
  await w.close();
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

// --- over HTTP: this service in a fresh process ---------------------------
const token = 'bench-token-0123456789';
const srv = spawn(process.execPath, [join(root, 'bin/session-pager.js'), 'serve', '--data', dataDir, '--port', '0', '--workers', '2', '--log-level', 'warn'], { env: { ...process.env, SESSION_PAGER_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
let banner = '';
srv.stdout.on('data', (d) => (banner += d));
srv.stderr.on('data', (d) => (banner += d));
const url = await new Promise((res, rej) => {
  const t = setInterval(() => {
    const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(banner);
    if (m) {
      clearInterval(t);
      res(m[1]);
    }
  }, 100);
  setTimeout(() => rej(new Error(`serve did not start: ${banner}`)), 60_000);
});
const auth = { authorization: `Bearer ${token}` };
const ENCODINGS = { identity: 'identity', gzip: 'gzip', br: 'br', zstd: 'zstd', browser: 'gzip, deflate, br, zstd' };
const { request } = await import('node:http');
function wireBytes(path, enc) {
  return new Promise((res, rej) => {
    const req = request(`${url}${path}`, { headers: { ...auth, 'accept-encoding': enc } }, (r) => {
      let n = 0;
      r.on('data', (c) => (n += c.length));
      r.on('end', () => res({ bytes: n, encoding: r.headers['content-encoding'] ?? 'identity', status: r.statusCode }));
    });
    req.on('error', rej);
    req.end();
  });
}
const autocannon = (await import('autocannon')).default;
async function cannon(w, connections, enc) {
  let i = 0;
  const r = await autocannon({
    url,
    connections,
    duration: Math.max(2, Math.round(seconds / 2)),
    headers: { ...auth, 'accept-encoding': enc },
    requests: [{ setupRequest: (req) => { const p = w.pages[i++ % w.pages.length]; const q = new URLSearchParams(Object.entries(p.params).map(([k, v]) => [k, String(v)])); return { ...req, path: `/v1/sessions/${p.id}/page?${q}` }; } }],
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx };
}
for (const w of workloads) {
  const p = w.pages[0];
  const q = new URLSearchParams(Object.entries(p.params).map(([k, v]) => [k, String(v)]));
  w.wire = {};
  for (const [name, enc] of Object.entries(ENCODINGS)) w.wire[name] = await wireBytes(`/v1/sessions/${p.id}/page?${q}`, enc);
  w.http = {};
  for (const enc of ['identity', 'browser']) for (const c of [1, 16]) w.http[`${enc}-${c}`] = await cannon(w, c, ENCODINGS[enc]);
  log(`http ${w.name}: ${JSON.stringify(w.http)}`);
}
srv.kill('SIGTERM');
await new Promise((r) => srv.once('exit', r));

// --- report -----------------------------------------------------------------
const pct = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]; };
const med = (xs) => pct(xs, 0.5);
const f1 = (x) => (Number.isFinite(x) ? (x >= 100 ? Math.round(x).toLocaleString('en') : x.toFixed(x >= 10 ? 1 : 2)) : '–');
const mb = (b) => (b / 1048576).toFixed(1);
const summary = {};
const lines = [];
lines.push(`Run ${new Date().toISOString()} on ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, better-sqlite3 ${JSON.parse(readFileSync(join(root, 'node_modules/better-sqlite3/package.json'), 'utf8')).version}; ${full ? 'full' : 'quick'} mode, ${rounds} fresh processes per reader and workload (reference: 1), ${seconds} s budget each; peer == service bytes on ${checked} pages.`, '');
lines.push('| workload | reader | cold p50 ms | cold p99 ms | warm p50 ms | warm p99 ms | pages/s (1) | pages/s (16) | peak RSS MB | bytes read (rchar) MB |', '|---|---|---|---|---|---|---|---|---|---|');
for (const w of workloads) {
  summary[w.name] = { label: w.label, events: w.events, storeBytes: w.storeBytes, peerBytes: w.peerBytes, wire: w.wire, http: w.http, readers: {} };
  for (const m of READERS) {
    const runs = w.runs[m];
    const cold = runs.map((x) => x.coldMs);
    const warm = runs.flatMap((x) => x.warmMs);
    const s = { coldP50: med(cold), coldP99: pct(cold, 0.99), warmP50: med(warm), warmP99: pct(warm, 0.99), pps1: med(runs.map((x) => x.pagesPerSec1)), pps16: med(runs.map((x) => x.pagesPerSec16)), peakRssMB: med(runs.map((x) => x.peakRssMB)), coldRssMB: med(runs.map((x) => x.coldRssMB)), rcharMB: med(runs.map((x) => x.rchar)) / 1048576 };
    summary[w.name].readers[m] = s;
    lines.push(`| ${w.name} | ${m} | ${f1(s.coldP50)} | ${f1(s.coldP99)} | ${f1(s.warmP50)} | ${f1(s.warmP99)} | ${f1(s.pps1)} | ${f1(s.pps16)} | ${f1(s.peakRssMB)} | ${f1(s.rcharMB)} |`);
  }
}
lines.push('', '| workload | service store MB | peer db MB | wire identity | gzip | br | zstd | browser (what it chose) |', '|---|---|---|---|---|---|---|---|');
for (const w of workloads) lines.push(`| ${w.name} | ${mb(w.storeBytes)} | ${mb(w.peerBytes)} | ${w.wire.identity.bytes.toLocaleString('en')} | ${w.wire.gzip.bytes.toLocaleString('en')} | ${w.wire.br.bytes.toLocaleString('en')} | ${w.wire.zstd.bytes.toLocaleString('en')} (${w.wire.zstd.encoding}) | ${w.wire.browser.bytes.toLocaleString('en')} (${w.wire.browser.encoding}) |`);
lines.push('', '| workload | HTTP identity 1 conn pages/s, p99 ms | identity 16 | browser encoding 1 | browser encoding 16 |', '|---|---|---|---|---|');
for (const w of workloads) lines.push(`| ${w.name} | ${['identity-1', 'identity-16', 'browser-1', 'browser-16'].map((k) => `${f1(w.http[k].rps)}, ${w.http[k].p99}${w.http[k].non2xx ? ` (${w.http[k].non2xx} non-2xx)` : ''}`).join(' | ')} |`);
lines.push('', '| workload | service / peer pages/s (1) | (16) | peer cold / service cold | service / peer peak RSS |', '|---|---|---|---|---|');
for (const w of workloads) {
  const r = summary[w.name].readers;
  lines.push(`| ${w.name} | ${f1(r.pager.pps1 / r.peer.pps1)}x | ${f1(r.pager.pps16 / r.peer.pps16)}x | ${f1(r.peer.coldP50 / r.pager.coldP50)}x | ${f1(r.pager.peakRssMB / r.peer.peakRssMB)} |`);
}
const report = lines.join('\n') + '\n';
process.stdout.write(report);
writeFileSync(join(root, 'docs', `bench-peer-${full ? 'full' : 'quick'}.json`), JSON.stringify(summary, null, 1) + '\n');

if (!values['no-plots']) {
  const byLen = [...workloads].sort((a, b) => a.events - b.events);
  const series = (key) => READERS.map((m) => ({ name: m === 'pager' ? 'session-pager' : m === 'peer' ? 'SQLite peer' : m, dashed: m === 'floor', points: byLen.map((w) => [w.events, summary[w.name].readers[m][key]]) }));
  writeFileSync(join(root, 'docs/bench-latency.svg'), lineChart({ title: 'Cold page latency (p50) by session length', xLabel: 'events in the session (log)', yLabel: 'ms (log)', logX: true, logY: true, series: series('coldP50') }));
  writeFileSync(join(root, 'docs/bench-rss.svg'), lineChart({ title: 'Peak RSS of a fresh process by session length', xLabel: 'events in the session (log)', yLabel: 'MB (log)', logX: true, logY: true, series: series('peakRssMB') }));
  const encs = Object.keys(ENCODINGS);
  writeFileSync(join(root, 'docs/bench-wire.svg'), barChart({ title: 'Bytes on the wire per encoding (first page of each workload)', xLabel: 'workload', yLabel: 'bytes (log)', logY: true, categories: workloads.map((w) => w.name), series: encs.map((e) => ({ name: e, values: workloads.map((w) => w.wire[e].bytes) })) }));
  log('wrote docs/bench-latency.svg, docs/bench-rss.svg, docs/bench-wire.svg');
}
