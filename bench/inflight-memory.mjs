#!/usr/bin/env node
// Peak RSS and pages/s of a store used as a library with K pages in flight
// (issue 15's in-process lanes), one fresh process per run:
//   node bench/inflight-memory.mjs <checkout> <K> <decodeBudgetBytes|-> [pb-tail|many]
// on npm run bench's quick data (/tmp/sp-peer-bench; run `node bench/peer-bench.mjs --setup-only` first).
// `-` keeps the checkout's default budget (or none, before decode-budget.ts).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
const [rootArg, k, budget, id = 'pb-tail'] = process.argv.slice(2);
const root = resolve(rootArg);
const { openStore } = await import(pathToFileURL(`${root}/dist/main/store.js`).href);
const hwm = () => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
const opts = { dataDir: '/tmp/sp-peer-bench', workers: 2, pageCacheBytes: 0 };
if (budget !== '-') opts.decodeBudgetBytes = Number(budget);
const store = await openStore(opts);
await store.warmUp();
const pages = id === 'many' ? JSON.parse(readFileSync('/tmp/sp-peer-bench/pages-many.json', 'utf8')) : [{ id, params: { maxMessages: 50 } }];
const stop = performance.now() + 3000; let n = 0, i = 0; const lat = [];
const t0 = performance.now();
await Promise.all(Array.from({ length: Number(k) }, async () => { while (performance.now() < stop) { const p = pages[i++ % pages.length]; const t = performance.now(); await store.pageBuffer(p.id, p.params); lat.push(performance.now() - t); n++; } }));
lat.sort((a, b) => a - b);
console.log(`${root} ${id} k=${k} budget=${budget} pages/s ${(n / ((performance.now() - t0) / 1000)).toFixed(1)} p99 ${lat[Math.ceil(lat.length * 0.99) - 1].toFixed(1)} hwm ${hwm().toFixed(0)}`);
await store.close();
