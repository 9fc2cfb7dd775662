#!/usr/bin/env node
// What "ready" buys (issue 12 start-up): pages asked the moment a fresh `serve` says it is ready,
// against the same pages asked of that process once it is long warmed up.
//
//   node bench/ready-pages.mjs --variants NAME=ROOT[|ENV=V;ENV=V],... [--data DIR] [--starts N] [--settle N]
//
// NAME=ROOT: a built checkout whose bin/ is started (as a command, as startup-memory.mjs does),
// optionally with environment settings after `|` (SESSION_PAGER_JIT_WARMUP=0, ...). Variants
// alternate start by start (A B C A B C ...), each a fresh `serve --workers 2` over --data
// (page-bench's sessions: bench-5m, bench-typical). Per start, one JSON line:
//   listen, ready: launch to the first /livez, /readyz 200 (polled every 2 / 5 ms);
//   cpuReady: CPU of every thread at ready, ms;
//   atReady: ms to the last byte of, asked one after the other as soon as /readyz is 200:
//     tail = bench-5m's 50-message tail page, typ = three 50-message pages from the middle of
//     bench-typical (the same three every start), identity;
//   settled: after --settle N pages of both kinds, 5 rounds of: the tail page again (the same body:
//     only maxBytes, far above the page, differs, so the prepared-page cache misses) and three
//     typical pages this process has not been asked before (other fixed seqs: as at ready, pages
//     whose log bytes the OS has cached from earlier starts, none of them in this process's own
//     caches); medians of the 5 rounds.
// Then per variant: medians of ready and CPU, and of each page at ready and settled, and their
// ratio (at ready / settled): 1.0 is a ready that is honest.
// Run measurements at normal priority, one at a time (BRIEF: bench.lock).
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { median, parseScriptArgs } from './args.mjs';
import { getOnce, launchServe } from './servers.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: { variants: { type: 'string' }, data: { type: 'string', default: '/tmp/session-pager-bench' }, starts: { type: 'string', default: '6' }, settle: { type: 'string', default: '30' } },
});
if (!values.variants) throw new Error('--variants is required');
const variants = values.variants.split(',').map((v) => {
  const [name, rest] = v.split('=', 2).length === 2 ? [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)] : [v, v];
  const [root, envs = ''] = rest.split('|');
  const env = Object.fromEntries(envs.split(';').filter(Boolean).map((kv) => kv.split('=')));
  return { name, root, env };
});
const starts = Number(values.starts);
const settle = Number(values.settle);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cpuMs = (stat) => {
  const f = stat.split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

// Pages from the middle of bench-typical: fixed seqs (its ~1M events), the same every start.
const TYPICAL_SEQS = [231_000, 517_000, 702_000];
/** Round r of the settled pages asks these instead (seqs no earlier page of the process reached). */
const settledSeqs = (r) => TYPICAL_SEQS.map((s, i) => s + 20_000 * (r + 1) + 1_000 * i);
const BIG = 900_000_000;
const identity = { 'accept-encoding': 'identity' };
const pagePath = (id, p) => `/v1/sessions/${id}/page?${new URLSearchParams(Object.fromEntries(Object.entries(p).map(([k, v]) => [k, String(v)])))}`;
const measured = (bytes, seqs) => [
  ['tail', pagePath('bench-5m', { maxMessages: 50, maxBytes: bytes })],
  ...seqs.map((s, i) => [`typ${i}`, pagePath('bench-typical', { throughSeq: s, maxMessages: 50 })]),
];

async function one(v, port) {
  const { child, waitFor } = launchServe(v.root, values.data, port, v.env);
  const listen = await waitFor('/livez', 2);
  const ready = await waitFor('/readyz', 5);
  const cpuReady = cpuMs(readFileSync(`/proc/${child.pid}/stat`, 'utf8'));
  const threads = readdirSync(`/proc/${child.pid}/task`).map((t) => cpuMs(readFileSync(`/proc/${child.pid}/task/${t}/stat`, 'utf8'))).filter((ms) => ms > 0);
  const ask = async (path) => {
    const r = await getOnce(port, path, identity);
    if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
    return +r.ms.toFixed(2);
  };
  const atReady = {};
  for (const [k, path] of measured(BIG, TYPICAL_SEQS)) atReady[k] = await ask(path);
  // A long warm-up: pages of both kinds, each built (distinct maxBytes).
  for (let i = 0; i < settle; i++) {
    // (Seqs below those of the measured pages.)
    const seq = 20_000 + ((i * 3_813) % 200_000);
    await ask(i % 3 === 0 ? pagePath('bench-5m', { maxMessages: 40 + (i % 20), maxBytes: BIG + 100 + i }) : pagePath('bench-typical', { throughSeq: seq, maxMessages: 50, maxBytes: BIG + 100 + i }));
  }
  const rounds = {};
  for (let r = 0; r < 5; r++) for (const [k, path] of measured(BIG + 1 + r, settledSeqs(r))) (rounds[k] ??= []).push(await ask(path));
  const settled = Object.fromEntries(Object.entries(rounds).map(([k, xs]) => [k, median(xs)]));
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
  return { variant: v.name, load: +loadavg()[0].toFixed(2), listen, ready, cpuReady, threads, atReady, settled };
}

let port = 21_000 + Math.floor(Math.random() * 2000);
const all = [];
for (let s = 0; s < starts; s++) {
  // Alternating, and rotated each start so no variant always follows the same one.
  for (let k = 0; k < variants.length; k++) {
    const v = variants[(k + s) % variants.length];
    const r = await one(v, ++port);
    all.push(r);
    process.stdout.write(JSON.stringify(r) + '\n');
  }
}
const lines = ['| variant | ready ms (range) | CPU at ready ms | tail at ready / settled ms | typical at ready / settled ms (median of the 3 pages\' medians) |', '|---|---|---|---|---|'];
for (const v of variants) {
  const rs = all.filter((r) => r.variant === v.name);
  const readies = rs.map((r) => r.ready);
  const typ = (key) => median(rs.map((r) => median(['typ0', 'typ1', 'typ2'].map((k) => r[key][k]))));
  const tailR = median(rs.map((r) => r.atReady.tail));
  const tailS = median(rs.map((r) => r.settled.tail));
  lines.push(`| ${v.name} | ${median(readies)} (${Math.min(...readies)}-${Math.max(...readies)}) | ${median(rs.map((r) => r.cpuReady))} | ${tailR} / ${tailS} (${(tailR / tailS).toFixed(2)}) | ${typ('atReady')} / ${typ('settled')} (${(typ('atReady') / typ('settled')).toFixed(2)}) |`);
}
process.stdout.write(lines.join('\n') + '\n');
