#!/usr/bin/env node
// Where a fresh server's peak RSS goes in the quick bench's random-page HTTP lanes (issue 15's
// "peak RSS of a fresh process from the OS"): one `serve` (2 workers, started by the launcher as
// bench/servers.mjs does), then bench/peer-bench.mjs's HTTP steps in its order (each after an
// unmeasured warm-up at its own connections and encoding), on one workload of its data. While
// each step runs, /proc/<pid>/smaps is read every --every ms; after it, the step's peak RSS
// (VmHWM), the RSS then, the mapping split (bench/smaps.mjs's kinds, malloc arenas apart) of the sample with the most RSS, and
// the main thread's heap and external memory (/metrics) are printed, one JSON line a step.
//
//   node bench/rss-lanes.mjs [--data /tmp/sp-peer-bench] [--workload typical|many] [--checkout DIR]
//        [--steps identity-1,identity-16,browser-1,browser-16] [--rounds 2] [--seconds 2] [--warm 2]
//        [--every 200] [--env K=V,K=V] [--arenas]
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseScriptArgs } from './args.mjs';
import { linkedDataDir, peakRssOf, startService } from './servers.mjs';

const { values: a } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/sp-peer-bench' },
    workload: { type: 'string', default: 'typical' },
    checkout: { type: 'string' },
    steps: { type: 'string', default: 'identity-1,identity-16,browser-1,browser-16' },
    rounds: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '2' },
    warm: { type: 'string', default: '2' },
    every: { type: 'string', default: '200' },
    env: { type: 'string', default: '' },
    // After the steps: each malloc arena's size, free bytes and threads (needs gdb and glibc's symbols).
    arenas: { type: 'boolean', default: false },
  },
});
const root = new URL('..', import.meta.url).pathname;
const ENCODINGS = { identity: 'identity', browser: 'gzip, deflate, br, zstd' };
const pagesFile = join(a.data, `pages-${a.workload}.json`);
const ids = [...new Set(JSON.parse(readFileSync(pagesFile, 'utf8')).map((p) => p.id))];
const token = 'bench-token-0123456789';
const env = Object.fromEntries(a.env.split(',').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const dir = join(a.data, `rss-lanes-${process.pid}`);
const srv = await startService(linkedDataDir(a.data, ids, dir), token, { env, ...(a.checkout === undefined ? {} : { checkout: a.checkout }) });
const mb = (x) => Math.round(x * 10) / 10;
const rssOf = (pid) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
/**
 * RSS by kind of mapping, MB: bench/smaps.mjs's kinds, with the large anonymous mappings split in
 * two: those starting on a 64 MiB boundary (glibc's per-thread malloc arenas are 64 MiB-aligned
 * heaps) and the rest (V8's large objects and reservations, mmapped buffers, stacks).
 */
function split() {
  const out = {};
  let name = '';
  for (const line of readFileSync(`/proc/${srv.pid}/smaps`, 'utf8').split('\n')) {
    const m = line.match(/^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/);
    if (m) {
      const start = BigInt(`0x${m[1]}`);
      const size = Number(BigInt(`0x${m[2]}`) - start);
      name = m[3] ? (m[3].includes('/node') ? 'node binary' : m[3].startsWith('/') ? 'other files' : m[3]) : size === 262144 ? 'v8 heap pages' : start % (64n << 20n) === 0n ? 'malloc arenas' : size >= 1 << 20 ? 'anon large' : 'anon small';
      continue;
    }
    const r = line.match(/^Rss:\s+(\d+)/);
    if (r) out[name] = (out[name] ?? 0) + Number(r[1]) / 1024;
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, mb(v)]));
}
async function heap() {
  const text = await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${token}`, connection: 'close' } }).then((r) => r.text());
  const pick = (re) => [...text.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0) / 1048576;
  return { heapUsed: mb(pick(/^nodejs_heap_size_used_bytes (\S+)/gm)), heapTotal: mb(pick(/^nodejs_heap_size_total_bytes (\S+)/gm)), external: mb(pick(/^nodejs_external_memory_bytes (\S+)/gm)), pageCache: mb(pick(/^\w*page_cache_bytes (\S+)/gm)) };
}
function load(step, seed, seconds) {
  const [enc, c] = step.split('-');
  const argv = [join(root, 'bench/lean-load.mjs'), '--url', srv.url, '--token', token, '--pages', pagesFile, '--random', '--connections', c, '--seconds', seconds, '--accept-encoding', ENCODINGS[enc], '--seed', String(seed)];
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.once('exit', (code) => (code === 0 ? res(JSON.parse(out.trim().split('\n').pop())) : rej(new Error(`lean-load ${code}`))));
  });
}
/** Runs a step while sampling the mapping split; returns the sample with the most RSS. */
async function sampled(step, seed, seconds) {
  let top = { rss: 0 };
  const t = setInterval(() => {
    const s = split();
    const rss = Object.values(s).reduce((x, y) => x + y, 0);
    if (rss > top.rss) top = { rss: mb(rss), byMapping: s };
  }, Number(a.every));
  try {
    const r = await load(step, seed, seconds);
    return { r, top };
  } finally {
    clearInterval(t);
  }
}
try {
  process.stdout.write(`${JSON.stringify({ at: 'ready', peakRssMB: mb(peakRssOf(srv.pid)), rssMB: mb(rssOf(srv.pid)), byMapping: split(), ...(await heap()) })}\n`);
  for (let round = 0; round < Number(a.rounds); round++) {
    for (const step of a.steps.split(',')) {
      const w = Number(a.warm) > 0 ? await sampled(step, 1001 + round, a.warm) : { top: { rss: 0 } };
      const m = await sampled(step, 1 + round, a.seconds);
      const top = m.top.rss >= w.top.rss ? m.top : w.top;
      process.stdout.write(`${JSON.stringify({ at: `${step} r${round + 1}`, okPerSec: m.r.okPerSec, peakRssMB: mb(peakRssOf(srv.pid)), rssMB: mb(rssOf(srv.pid)), topSampleMB: top.rss, topByMapping: top.byMapping, ...(await heap()) })}\n`);
    }
  }
  await new Promise((r) => setTimeout(r, 3000));
  process.stdout.write(`${JSON.stringify({ at: 'idle 3 s after', peakRssMB: mb(peakRssOf(srv.pid)), rssMB: mb(rssOf(srv.pid)), byMapping: split(), ...(await heap()) })}\n`);
  if (a.arenas) {
    // Each malloc arena's size, free bytes and threads (bench/malloc-arenas.py, read by gdb attached
    // for a moment: nothing is called in the server), and each thread's name from /proc.
    const g = spawnSync('gdb', ['-p', String(srv.pid), '-batch', '-ex', `source ${join(root, 'bench/malloc-arenas.py')}`], { encoding: 'utf8', env: { ...process.env, ARENA_CHUNKS: '1' } });
    const names = Object.fromEntries(readdirSync(`/proc/${srv.pid}/task`).map((t) => [t, readFileSync(`/proc/${srv.pid}/task/${t}/comm`, 'utf8').trim()]));
    for (const line of g.stdout.split('\n').concat(g.stderr.split('\n').filter((l) => /Error/.test(l)).map((l) => `arena walk: ${l}`)).filter((l) => l.startsWith('arena ') || l.startsWith('chunks '))) process.stdout.write(`${line.replace(/'node:(\d+)'/g, (_, t) => `'${t === String(srv.pid) ? 'main' : names[t]}:${t}'`)}\n`);
  }
} finally {
  await srv.stop();
  rmSync(dir, { recursive: true, force: true });
}
