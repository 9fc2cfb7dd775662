#!/usr/bin/env node
// Page benchmark (issue 3): the pager against the reference reader, side by
// side in one run, each measurement in a fresh child process so "cold" means
// cold and peak RSS is that process's own (process.resourceUsage().maxRSS).
//
//   node bench/page-bench.mjs [--data DIR] [--runs N] [--reference-runs N] [--skip-reference]
//
// Generates (once) a 5,000,000-event and a 600,000-event session, each
// ending in a 416,000-delta in-flight message, then measures:
//   1. the 50-message tail page: pager vs reference, time and peak RSS;
//   2. the same page on the 600k and the 5M session (size independence);
//   3. typical 50-message pages from the middle, warm: p50/p90/p99;
//   4. the physical floor: reading the page's frame bytes alone.
// Prints a markdown report on stdout (docs/benchmarks.md keeps the latest).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';
import { median, parseScriptArgs } from './args.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    runs: { type: 'string', default: '3' },
    'reference-runs': { type: 'string', default: '3' },
    'skip-reference': { type: 'boolean', default: false },
    workers: { type: 'string', default: '2' },
  },
});
const dataDir = values.data;
const runs = Number(values.runs);
const referenceRuns = Number(values['reference-runs']);
const workers = Number(values.workers);
const child = join(root, 'bench/child.mjs');

const sessions = [
  { id: 'bench-5m', events: 5_000_000, tail: 416_000, seed: 7 },
  { id: 'bench-600k', events: 600_000, tail: 416_000, seed: 8 },
];

const { generateSession } = await import(join(root, 'dist/main/gen/generate.js'));
for (const s of sessions) {
  if (existsSync(join(dataDir, 'sessions', `${s.id}.events`))) {
    // Sessions written before the row-metadata projection page correctly but scan every row.
    if (!existsSync(join(dataDir, 'sessions', 'index', s.id, 'frames.meta'))) {
      process.stderr.write(`warning: ${s.id} in ${dataDir} was written by an older writer (no frames.meta): delete the data dir to regenerate it, or these numbers are not the current writer's\n`);
    }
    continue;
  }
  process.stderr.write(`generating ${s.id} (${s.events} events, ${s.tail}-delta tail)...\n`);
  await generateSession(dataDir, { id: s.id, events: s.events, tailEvents: s.tail, seed: s.seed });
}

// A session of fixture-shaped conversations (bench/fixture-session.mjs), for
// "typical page" latency: the generated sessions' 50-message pages are ~1.4 MB.
const TYPICAL = 'bench-typical';
if (!existsSync(join(dataDir, 'sessions', `${TYPICAL}.events`))) {
  process.stderr.write(`building ${TYPICAL} from the dsh fixtures...\n`);
  const { buildFixtureSession } = await import('./fixture-session.mjs');
  await buildFixtureSession(dataDir, TYPICAL, 1_000_000);
}

function measure(mode, id, params = {}, extra = {}) {
  const r = spawnSync(process.execPath, [child, mode, dataDir, id, JSON.stringify(params), JSON.stringify({ workers, ...extra })], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${mode} ${id} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

const fmt = (x, d = 1) => (x === undefined ? '–' : x.toFixed(d));

const tail = { maxMessages: 50 };
const results = {};
for (const s of sessions) results[s.id] = { pager: [], references: [] };
// Runs interleaved (5M, 600k, 5M, ..., and a reference run of each after
// every few): a noisy spell on this shared machine then hits both sessions,
// and the pager and the reference, alike. Ratios are of medians.
const referenceEvery = Math.max(1, Math.floor(runs / referenceRuns));
for (let i = 0; i < runs; i++) {
  for (const s of sessions) results[s.id].pager.push(measure('pager', s.id, tail));
  if (!values['skip-reference'] && i % referenceEvery === 0 && results[sessions[0].id].references.length < referenceRuns) {
    for (const s of sessions) results[s.id].references.push(measure('reference', s.id, tail));
  }
}
for (const s of sessions) {
  const refs = results[s.id].references;
  results[s.id].reference = refs.length === 0 ? null : { ...refs[0], ms: median(refs.map((r) => r.ms)), maxRssMB: median(refs.map((r) => r.maxRssMB)) };
}
const warm = measure('warm', 'bench-5m', {}, { warmup: 200, iterations: 1000 });
const typical = measure('warm', TYPICAL, {}, { warmup: 200, iterations: 1000 });

const lines = [];
const now = new Date().toISOString();
lines.push(`Run ${now} on ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; ${workers} page workers; pager figures are medians of ${runs} fresh processes, reference figures of ${results[sessions[0].id].references.length}, interleaved.`);
lines.push('');
lines.push('| session | events | page events | page bytes | reference ms | reference peak RSS MB | pager cold ms | pager cold ms incl. pool start | pager warm ms | pager peak RSS MB | time ratio cold / warm | RSS ratio | frame-read floor ms | pager / floor cold / warm |');
lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const s of sessions) {
  const { pager, reference } = results[s.id];
  const ms = median(pager.map((p) => p.ms));
  const msAll = median(pager.map((p) => p.msWithStartup));
  const rss = median(pager.map((p) => p.maxRssPageMB));
  const floor = median(pager.map((p) => p.floorMs));
  const warmMs = median(pager.map((p) => p.warmMs));
  const p0 = pager[0];
  lines.push(
    `| ${s.id} | ${s.events.toLocaleString('en')} | ${(p0.toSeq - p0.fromSeq).toLocaleString('en')} | ${p0.bytes.toLocaleString('en')} | ${fmt(reference?.ms, 0)} | ${fmt(reference?.maxRssMB, 0)} | ${fmt(ms)} | ${fmt(msAll)} | ${fmt(warmMs)} | ${fmt(rss, 0)} | ${reference ? `${fmt(reference.ms / ms, 0)}× / ${fmt(reference.ms / warmMs, 0)}×` : '–'} | ${reference ? `1/${fmt(reference.maxRssMB / rss, 1)}` : '–'} | ${fmt(floor, 2)} | ${fmt(ms / floor, 1)}× / ${fmt(warmMs / floor, 1)}× |`,
  );
}
const phases = (t) => (t ? Object.entries(t).map(([k, v]) => `${k} ${fmt(v)}`).join(', ') : '–');
for (const s of sessions) {
  const { pager } = results[s.id];
  const mid = [...pager].sort((a, b) => a.ms - b.ms)[Math.floor(pager.length / 2)];
  lines.push('');
  lines.push(`${s.id}, the median cold run's phases (ms): ${phases(mid.timing)}; the next five pages of that process: ${mid.firstPagesMs.join(', ')} ms; a settled page's phases: ${phases(mid.warmTiming)}.`);
}
lines.push('');
lines.push(
  `Peak RSS (MB, medians): ${sessions.map((s) => `${s.id} ${fmt(median(results[s.id].pager.map((p) => p.maxRssPageMB)), 0)} after the page alone (the table's figure, as the reference's is after its page alone), ${fmt(median(results[s.id].pager.map((p) => p.maxRssAfterRepeatsMB)), 0)} after ten more pages, ${fmt(median(results[s.id].pager.map((p) => p.maxRssMB)), 0)} once the floor read's buffer was added too`).join('; ')}.`,
);
lines.push('');
lines.push(`Cold runs in order (ms): ${sessions.map((s) => `${s.id} ${results[s.id].pager.map((p) => fmt(p.ms)).join(', ')}`).join('; ')}. Reference runs (ms): ${sessions.map((s) => `${s.id} ${results[s.id].references.map((r) => fmt(r.ms, 0)).join(', ') || '–'}`).join('; ')}.`);
const a = results['bench-600k'].pager;
const b = results['bench-5m'].pager;
lines.push('');
lines.push(`Size independence (same 50-message tail page): 600k → ${fmt(median(a.map((p) => p.ms)))} ms / ${fmt(median(a.map((p) => p.maxRssPageMB)), 0)} MB; 5M → ${fmt(median(b.map((p) => p.ms)))} ms / ${fmt(median(b.map((p) => p.maxRssPageMB)), 0)} MB; time ratio ${fmt(median(b.map((p) => p.ms)) / median(a.map((p) => p.ms)), 2)}, RSS ratio ${fmt(median(b.map((p) => p.maxRssPageMB)) / median(a.map((p) => p.maxRssPageMB)), 2)}.`);
lines.push('');
lines.push(`Typical 50-message pages from the middle of the 5M session, warm (200 warm-up pages, 1000 measured, mean ${warm.meanBytes.toLocaleString('en')} bytes): p50 ${fmt(warm.p50, 2)} ms, p90 ${fmt(warm.p90, 2)} ms, p99 ${fmt(warm.p99, 2)} ms; peak RSS ${fmt(warm.maxRssMB, 0)} MB.`);
lines.push('');
lines.push(`Typical 50-message pages from the middle of a 1M-event session of fixture-shaped conversations, warm (200 warm-up, 1000 measured, mean ${typical.meanBytes.toLocaleString('en')} bytes): p50 ${fmt(typical.p50, 2)} ms, p90 ${fmt(typical.p90, 2)} ms, p99 ${fmt(typical.p99, 2)} ms; peak RSS ${fmt(typical.maxRssMB, 0)} MB.`);
process.stdout.write(lines.join('\n') + '\n');
process.stderr.write(JSON.stringify(results) + '\n');
