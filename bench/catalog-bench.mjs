#!/usr/bin/env node
// Catalog benchmark: list N small sessions, first (cold) and again (warm),
// in a process whose worker pool has finished starting.
//   node bench/catalog-bench.mjs [--sessions 2000] [--data /tmp/session-pager-catalog]
import { existsSync } from 'node:fs';
import { parseScriptArgs } from './args.mjs';

const { values } = parseScriptArgs(import.meta.url, { options: { sessions: { type: 'string', default: '2000' }, data: { type: 'string', default: '/tmp/session-pager-catalog' } } });
const n = Number(values.sessions);
const dist = new URL('../dist/main/', import.meta.url);
const { SessionWriter } = await import(new URL('session-writer.js', dist).href);
const { openStore } = await import(new URL('store.js', dist).href);

if (!existsSync(`${values.data}/sessions/s${n - 1}.events`)) {
  for (let i = 0; i < n; i++) {
    if (existsSync(`${values.data}/sessions/s${i}.events`)) continue;
    const w = await SessionWriter.create(values.data, `s${i}`, { type: 'session' }, { durable: false });
    await w.append([
      { type: 'user/message', seq: 0, time: 1, data: { text: 'hi' }, surfaceOp: 'append' },
      { type: 'session/title', seq: 1, time: 2, data: { title: `session ${i}` } },
    ]);
    await w.close();
  }
}
const store = await openStore({ dataDir: values.data, workers: 1 });
await store.warmUp();
const times = [];
for (let r = 0; r < 4; r++) {
  const t = performance.now();
  const list = await store.list();
  times.push(performance.now() - t);
  if (list.length !== n) throw new Error(`listed ${list.length} of ${n}`);
}
await store.close();
console.log(`${n} sessions: first list ${times[0].toFixed(0)} ms, then ${times.slice(1).map((t) => t.toFixed(0)).join(' / ')} ms; peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
