#!/usr/bin/env node
// The worker's decode of a 50-message tail page, JSONL against binary, on
// the main thread (one thread, no pool): the whole page's frames as one
// slice, with the session's checksum and row-metadata records as a task
// gets them, rounds alternating between the two sessions, CPU time
// (process.cpuUsage) as well as wall time, so a loaded machine disturbs the
// ratio less. Sessions from bench/format-bench.mjs (run it first).
//
//   node bench/format-decode.mjs [--data DIR] [--events N] [--rounds N] [--dist DIR]
//
// --dist: another build's dist/ (a before/after pair on the same sessions).
import { existsSync, openSync, readFileSync, readSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, parseScriptArgs } from './args.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/session-pager-format-bench' },
    events: { type: 'string', default: '600000' },
    rounds: { type: 'string', default: '30' },
    dist: { type: 'string', default: join(root, 'dist') },
  },
});
const dist = pathToFileURL(resolve(values.dist) + '/').href;
// Builds before the pure core left src/main/ hold it at dist/main/core/.
const core = existsSync(join(resolve(values.dist), 'core')) ? 'core/' : 'main/core/';
const { openStore } = await import(dist + 'main/store.js');
const { decodeSlice } = await import(dist + 'workers/page-task.js');
const { sliceCrcRecords } = await import(dist + 'streams/frame-crc-file.js');
const { NO_CLAIM } = await import(dist + core + 'frame-claim.js');
const dataDir = values.data;
const store = await openStore({ dataDir, workers: 1, pageCacheBytes: 0, warmUp: { jit: false, pagePath: false } });

async function sliceOf(id) {
  const { plan } = await store.plan(id, { maxMessages: 50 });
  const { first, last } = plan.span;
  const start = first.offset;
  const end = last.offset + last.length;
  const bytes = Buffer.alloc(end - start);
  readSync(openSync(join(dataDir, 'sessions', `${id}.events`), 'r'), bytes, 0, bytes.length, start);
  const dir = join(dataDir, 'sessions', 'index', id);
  const all = readFileSync(join(dir, 'frames.crc2'));
  const recs = sliceCrcRecords(all, start, end);
  const k = (recs.byteOffset - all.byteOffset) / 16;
  const meta = readFileSync(join(dir, 'frames.meta')).subarray(k * 40, (k + recs.byteLength / 16) * 40);
  const task = { source: '', session: id, start, end, firstSeq: first.seq, endSeq: last.seq + last.count, fromSeq: plan.fromSeq, toSeq: plan.toSeq, crcs: new Uint8Array(recs), meta: new Uint8Array(meta), bytes: undefined, arena: undefined, inPlace: false, digest: NO_CLAIM };
  return { task, bytes, frames: recs.byteLength / 16 - 1 };
}

const ids = { jsonl: `fmt-jsonl-${values.events}`, binary: `fmt-binary-${values.events}` };
const slices = { jsonl: await sliceOf(ids.jsonl), binary: await sliceOf(ids.binary) };
const res = { jsonl: [], binary: [] };
for (let r = 0; r < Number(values.rounds); r++) {
  for (const f of r % 2 === 0 ? ['jsonl', 'binary'] : ['binary', 'jsonl']) {
    const { task, bytes } = slices[f];
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const out = decodeSlice(task, bytes);
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(c0).user / 1000;
    if (!(out instanceof ArrayBuffer)) throw new Error(`${f}: ${JSON.stringify(out)}`);
    res[f].push({ wall, cpu });
  }
}
await store.close();
// The first third of the rounds warm the JIT up: medians of the rest.
const settled = (f, k) => median(res[f].slice(Math.floor(res[f].length / 3)).map((x) => x[k]));
const line = (f) => `${f}: ${slices[f].frames} frames, ${slices[f].bytes.length} bytes; decode CPU ${settled(f, 'cpu').toFixed(1)} ms, wall ${settled(f, 'wall').toFixed(1)} ms`;
process.stdout.write(`${values.dist}\n${line('jsonl')}\n${line('binary')}\nbinary / jsonl: CPU ${(settled('binary', 'cpu') / settled('jsonl', 'cpu')).toFixed(2)}×, wall ${(settled('binary', 'wall') / settled('jsonl', 'wall')).toFixed(2)}×\n`);
