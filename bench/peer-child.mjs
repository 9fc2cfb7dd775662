// One reader in a fresh process (bench/peer-bench.mjs spawns it), one JSON
// line out: the first page (cold), the same pages again (warm), pages/s and
// p99 latency with 1 and 16 in flight, peak RSS from the OS and bytes read (/proc/self/io),
// and the CPU a page cost during each of those lanes, the main thread's and the other threads'
// (the page workers', the peer's worker threads, V8's and libuv's helpers), from /proc.
//   node bench/peer-child.mjs <pager|peer|reference|floor> <dataDir> <dbPath> <pagesJson> <seconds>
import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { threadCpuSecondsOf } from './servers.mjs';

const [mode, dataDir, dbPath, pagesJson, secondsArg] = process.argv.slice(2);
const pages = JSON.parse(readFileSync(pagesJson, 'utf8')); // [{ id, params }]
const seconds = Number(secondsArg);
const dist = new URL('../dist/', import.meta.url);
const now = () => performance.now();

// Peak RSS of this process from the OS: VmHWM (the high-water mark of this process's
// memory map). Not getrusage's maxRSS, which Linux carries across fork and exec, so a
// child would report the bench parent's size whenever that is larger.
function peakRssMB() {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : process.resourceUsage().maxRSS / 1024;
}

function io() {
  try {
    const t = readFileSync('/proc/self/io', 'utf8');
    const get = (k) => Number(new RegExp(`^${k}: (\\d+)`, 'm').exec(t)?.[1] ?? NaN);
    return { rchar: get('rchar'), readBytes: get('read_bytes') };
  } catch {
    return { rchar: NaN, readBytes: NaN };
  }
}

/** CPU ms a page between two /proc snapshots: the main thread's and all other threads' (ticks of 10 ms: read over seconds). */
function cpuPerPage(before, after, pages) {
  let main = 0;
  let others = 0;
  for (const [tid, s] of Object.entries(after)) {
    const d = s - (before[tid] ?? 0);
    if (Number(tid) === process.pid) main += d;
    else others += d;
  }
  return { main: (main * 1000) / pages, others: (others * 1000) / pages };
}

let one; // (page) => Promise<Buffer-ish length>
let close = async () => undefined;
let concurrent; // (page) => Promise for 16-in-flight runs
const io0 = io();
const t0 = now();
if (mode === 'pager') {
  const { openStore } = await import(new URL('main/store.js', dist).href);
  process.env.SESSION_PAGER_JIT_WARMUP ??= '1';
  const store = await openStore({ dataDir, workers: 2, pageCacheBytes: 0 });
  await store.warmUp();
  // A host done with a page releases it (PageBuffer.release), as `serve` does once the reply is
  // written and store.page() once parsed: its memory may then take a later page (body-pool.ts).
  // Until the thirteenth session's second round this lane dropped its pages unreleased, which no
  // caller in the product does (docs/decisions.md, "The in-process lanes release their pages").
  one = async (p) => {
    const pb = await store.pageBuffer(p.id, p.params);
    const n = pb.body.length;
    pb.release?.();
    return n;
  };
  concurrent = one;
  close = () => store.close();
} else if (mode === 'peer') {
  const { PeerReader } = await import(new URL('./sqlite-peer.mjs', import.meta.url).href);
  const reader = new PeerReader(dbPath);
  one = async (p) => reader.page(p.id, p.params).length;
  // 16 in flight: two worker threads with a connection each (SQLite calls are synchronous).
  const workers = [0, 1].map(() => new Worker(new URL('./peer-worker.mjs', import.meta.url), { workerData: { dbPath } }));
  const waiting = new Map();
  let nextId = 0;
  for (const w of workers) w.on('message', ({ id, bytes, error }) => { const r = waiting.get(id); waiting.delete(id); error ? r.reject(new Error(error)) : r.resolve(bytes); });
  let rr = 0;
  concurrent = (p) => new Promise((resolve, reject) => { const id = nextId++; waiting.set(id, { resolve, reject }); workers[rr++ % 2].postMessage({ id, page: p }); });
  close = async () => { reader.close(); await Promise.all(workers.map((w) => w.terminate())); };
  // Both workers up and their connections open before anything is timed, as the service's page
  // workers are (openStore, warmUp): until 12-03 the cold page ran while the two threads booted
  // (~140 ms of CPU between them beside the page's ~140 on the main thread), and waited for a core.
  await Promise.all(workers.map((w) => new Promise((resolve, reject) => { const id = nextId++; waiting.set(id, { resolve, reject }); w.postMessage({ id }); })));
} else if (mode === 'reference') {
  const { readWholeLog, referencePage } = await import(new URL('main/reference-reader.js', dist).href);
  one = async (p) => Buffer.from(JSON.stringify(referencePage(await readWholeLog(join(dataDir, 'sessions', `${p.id}.events`)), p.id, p.params))).length;
  concurrent = one;
} else if (mode === 'floor') {
  // The physical floor: one positional read of the page's frame bytes (span from the planner, not timed).
  const { openStore } = await import(new URL('main/store.js', dist).href);
  process.env.SESSION_PAGER_JIT_WARMUP = '0';
  const store = await openStore({ dataDir, workers: 1, readOnly: true });
  const spans = new Map();
  for (const p of pages) {
    const plan = await store.plan(p.id, p.params);
    const { first, last } = plan.plan.span;
    spans.set(p, { offset: first.offset, length: last.offset + last.length - first.offset });
  }
  await store.close();
  one = async (p) => {
    const s = spans.get(p);
    const buf = Buffer.allocUnsafe(s.length);
    const fd = openSync(join(dataDir, 'sessions', `${p.id}.events`), 'r');
    let got = 0;
    while (got < s.length) got += readSync(fd, buf, got, s.length - got, s.offset + got);
    closeSync(fd);
    return got;
  };
  concurrent = one;
}
const startupMs = now() - t0;
const out = { mode, startupMs };
// The cold page's CPU (ms) on every thread of this process and on the main thread, from each
// thread's on-CPU ns (/proc/self/task/*/schedstat): beside the wall time, a figure the machine's
// load does not move (the peer's page runs on the main thread; the service's on the main thread
// and its page workers).
const onCpuNs = () => {
  const m = new Map();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      m.set(tid, Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // the thread ended
    }
  }
  return m;
};
// The main thread's own figure is exact only when read after it has slept: Linux adds a running
// thread's CPU to its schedstat at a scheduler tick or a switch, so read while it runs the figure
// lags by up to a tick (4 ms here: a 3 ms spin read 0.00-5.07 ms, 3.08 after a 0.2 ms sleep).
// Read so, the cold page's main-thread CPU took in whatever ran since the last tick before it
// (the open and warm-up) and missed what ran after its last wake-up. A 0.2 ms sleep (a futex
// wait) before each read makes both ends exact; it is outside the timed wall clock.
const sleepCell = new Int32Array(new SharedArrayBuffer(4));
const settledOnCpuNs = () => {
  Atomics.wait(sleepCell, 0, 0, 0.2);
  return onCpuNs();
};
const coldCpu0 = settledOnCpuNs();
let t = now();
out.coldBytes = await one(pages[0]);
out.coldMs = now() - t;
{
  const cpu1 = settledOnCpuNs();
  let all = 0;
  for (const [tid, ns] of cpu1) all += ns - (coldCpu0.get(tid) ?? 0);
  const main = cpu1.get(String(process.pid)) - coldCpu0.get(String(process.pid));
  out.coldCpuMs = { all: Math.round(all / 1e3) / 1e3, main: Math.round(main / 1e3) / 1e3 };
}
out.coldRssMB = peakRssMB();
const warm = [];
const deadline = now() + seconds * 500;
// At least 3 warm pages, unless one page outlasts the budget (bounded below).
for (let i = 1; (i < pages.length || warm.length < 3) && now() < deadline && !(warm.length > 0 && out.coldMs > Math.max(seconds * 250, 5000)); i++) {
  const p = pages[i % pages.length];
  t = now();
  await one(p);
  warm.push(now() - t);
}
out.warmMs = warm;
// Pages/s, 1 in flight then 16 in flight, each for a quarter of the budget.
// Bounded: a reader whose one page takes longer than that quarter (the
// reference reader on the 5M session: a minute a page, gigabytes of RSS)
// runs no throughput lanes (NaN, `bounded` says so): 16 of its pages at
// once would need 16 copies of the whole log in memory.
const quarterMs = Math.max(seconds * 250, 5000);
out.bounded = Math.max(out.coldMs, ...warm) > quarterMs;
for (const inflight of [1, 16]) {
  if (out.bounded) {
    out[`pagesPerSec${inflight}`] = NaN;
    out[`p99at${inflight}`] = NaN;
    continue;
  }
  const cpu0 = threadCpuSecondsOf(process.pid);
  const stopAt = now() + seconds * 250;
  let done = 0;
  let i = 0;
  const lat = [];
  const t1 = now();
  const lane = async () => {
    while (now() < stopAt) {
      const ts = now();
      await (inflight === 1 ? one : concurrent)(pages[i++ % pages.length]);
      lat.push(now() - ts);
      done++;
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
  out[`pagesPerSec${inflight}`] = done / ((now() - t1) / 1000);
  const cpu1 = threadCpuSecondsOf(process.pid);
  out[`cpuMsPerPage${inflight}`] = cpuPerPage(cpu0, cpu1, done);
  // PEER_CHILD_BY_THREAD=1: each thread's CPU ms a page, keyed by its id less the process's (Node 20 names every
  // thread `node`; V8's platform threads are made first, at +1..+4, then the page workers, libuv's pool when first used).
  if (process.env.PEER_CHILD_BY_THREAD === '1') {
    const by = {};
    for (const [tid, s1] of Object.entries(cpu1)) {
      const d = ((s1 - (cpu0[tid] ?? 0)) * 1000) / done;
      if (d > 0) by[`+${Number(tid) - process.pid}`] = Math.round(d * 1000) / 1000;
    }
    out[`cpuByThread${inflight}`] = by;
  }
  lat.sort((a, b) => a - b);
  out[`p99at${inflight}`] = lat[Math.min(lat.length - 1, Math.ceil(0.99 * lat.length) - 1)];
}
const io1 = io();
out.peakRssMB = peakRssMB();
out.rchar = io1.rchar - io0.rchar;
out.readBytes = io1.readBytes - io0.readBytes;
await close();
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
