#!/usr/bin/env node
// S3-backed pages against local files, side by side in one run (issue 14).
//
//   AWS_ENDPOINT_URL=... AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \
//     node bench/s3-page-bench.mjs --store s3://bucket/prefix [--data DIR] [--runs N] [--events N] [--id ID --seed N]
//
// Generates (once) a session in --data (default 600,000 events ending in a
// 416,000-delta in-flight message, as bench/page-bench.mjs's 600k one),
// copies it into the S3 store through the S3 backend (sealed into segments
// as a writer would), then, alternating local and S3 in every round:
//   - cold tail page (50 messages): a fresh backend (S3: empty block cache,
//     no manifest) and a fresh store over the one warm worker pool;
//   - cold random page (50 and 5 messages, throughSeq random): the same;
//   - warm tail pages (50 messages) and warm random pages (5 messages) on
//     one long-lived backend each (S3: the block cache and check tables
//     filled by the pages before; the manifest looked at again every 100 ms);
//   - the sequential round trips and GET bytes of each S3 cold page;
//   - whole-process `session-pager page` (tail, 50 messages), --data vs --store.
// Prints a markdown report (docs/benchmarks.md keeps the latest).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseScriptArgs } from './args.mjs';
import { loadavg } from 'node:os';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseScriptArgs(import.meta.url, {
  options: {
    data: { type: 'string', default: '/tmp/session-pager-s3-bench' },
    store: { type: 'string' },
    runs: { type: 'string', default: '5' },
    events: { type: 'string', default: '600000' },
    // bench/page-bench.mjs's 5M session: --events 5000000 --id bench-5m --seed 7
    id: { type: 'string' },
    seed: { type: 'string', default: '8' },
    'cli-runs': { type: 'string', default: '3' },
  },
});
if (!values.store) throw new Error('--store s3://bucket/prefix is required (endpoint and keys from AWS_* variables)');
const dataDir = values.data;
const runs = Number(values.runs);
const events = Number(values.events);
const id = values.id ?? `bench-${events}`;
const d = (p) => import(join(root, 'dist', p));
const [{ generateSession }, { LocalBackend }, { S3Backend }, { S3ObjectStore }, { RecordingStore, roundTrips }, { parseS3Url }, { openStore, PagerStore }, { sessionKeys, projectionKey }] = await Promise.all([
  d('main/gen/generate.js'),
  d('storage/local/local-backend.js'),
  d('storage/s3/s3-backend.js'),
  d('storage/s3/s3-client.js'),
  d('storage/s3/object-store.js'),
  d('storage/s3/store-url.js'),
  d('main/store.js'),
  d('storage/layout.js'),
]);

if (!existsSync(join(dataDir, 'sessions', `${id}.events`))) {
  process.stderr.write(`generating ${id} (${events} events, 416,000-delta tail)...\n`);
  await generateSession(dataDir, { id, events, tailEvents: 416_000, seed: Number(values.seed) });
}
const loc = parseS3Url(values.store);
const endpoint = process.env.AWS_ENDPOINT_URL_S3 || process.env.AWS_ENDPOINT_URL;
const credentials = { accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY };
const client = () => new S3ObjectStore({ bucket: loc.bucket, endpoint, credentials });
const tailDir = join(dataDir, 's3-tail');
const local = new LocalBackend(dataDir);
const keys = sessionKeys(id);

// Copy into S3 once (what a writer would have sealed), unless it is there already.
{
  const objects = client();
  const { CreateBucketCommand } = await import('@aws-sdk/client-s3');
  await objects.client.send(new CreateBucketCommand({ Bucket: loc.bucket })).catch(() => undefined);
  const s3 = new S3Backend({ objects, location: loc, tailDir });
  const there = await s3.stat(keys.events);
  const size = (await local.stat(keys.events)).size;
  if (there?.size !== size) {
    process.stderr.write(`copying ${id} (${(size / 1e6).toFixed(0)} MB) into ${values.store}...\n`);
    const t0 = performance.now();
    const members = [keys.events, keys.entries, ...(await local.list(keys.projections)).map((n) => projectionKey(keys, n))];
    for (const key of members) {
      const st = await local.stat(key);
      const w = await s3.openWritable(key, 'truncate');
      for (let pos = 0; pos < st.size; pos += 8 << 20) await w.write(await local.read(key, pos, Math.min(st.size, pos + (8 << 20))), pos);
      await w.sync();
    }
    await s3.replace(keys.meta, await local.readAll(keys.meta));
    await s3.close();
    process.stderr.write(`copied in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  } else await s3.close();
}

const base = await openStore({ dataDir, workers: 2, warmUp: { jit: true, pagePath: false } });
await base.warmUp();
const pool = base.pool;
const info = await base.info(id);
const last = info.nextSeq - 1;
const storeOver = (storage) => new PagerStore({ storage, pageCacheBytes: 0 }, pool);
let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);

const results = { local: {}, s3: {} };
const push = (kind, what, v) => ((results[kind][what] ??= []).push(v));
const rtts = {};
const lists = {};
const own = {};
const bytes = {};

async function cold(kind, what, params) {
  const rec = kind === 's3' ? new RecordingStore(client()) : null;
  const storage = kind === 's3' ? new S3Backend({ objects: rec, location: loc, tailDir }) : new LocalBackend(dataDir);
  const store = storeOver(storage);
  const t0 = performance.now();
  const page = await store.pageBuffer(id, params);
  const ms = performance.now() - t0;
  push(kind, what, ms);
  if (rec) {
    (rtts[what] ??= []).push(roundTrips(rec.calls));
    // LISTs past the first: looks at the manifest again because the page outlived the 100 ms freshness window.
    (lists[what] ??= []).push(rec.calls.filter((c) => c.op === 'list').length);
    // The page's own chain: without the re-looks (every LIST and manifest GET but the first).
    const first = (op, f) => rec.calls.filter((c) => c.op === op && f(c)).sort((a, b) => a.start - b.start)[0];
    const list0 = first('list', () => true);
    const man0 = first('get', (c) => c.name.includes('/manifest/'));
    (own[what] ??= []).push(roundTrips(rec.calls.filter((c) => c.op === 'list' ? c === list0 : !c.name.includes('/manifest/') || c === man0)));
    (bytes[what] ??= []).push(rec.calls.filter((c) => c.op === 'get').reduce((a, c) => a + c.bytes, 0));
  }
  await store.close();
  await storage.close?.();
  return page.body.length;
}

const pageBytes = {};
for (let r = 0; r < runs; r++) {
  const order = r % 2 === 0 ? ['local', 's3'] : ['s3', 'local'];
  const through = Math.floor(rand() * last);
  for (const kind of order) {
    pageBytes.tail = await cold(kind, 'cold tail page (50 msgs)', { maxMessages: 50 });
    pageBytes.r50 = await cold(kind, 'cold random page (50 msgs)', { throughSeq: through, maxMessages: 50 });
    pageBytes.r5 = await cold(kind, 'cold random page (5 msgs)', { throughSeq: through, maxMessages: 5 });
  }
}
// Warm random pages: one backend each, its caches filled by earlier pages.
{
  const s3 = new S3Backend({ objects: client(), location: loc, tailDir });
  const stores = { local: storeOver(new LocalBackend(dataDir)), s3: storeOver(s3) };
  for (let i = 0; i < 10; i++) for (const k of ['local', 's3']) await stores[k].pageBuffer(id, { throughSeq: Math.floor(rand() * last), maxMessages: 5 });
  // Warm tail: no page cache (pageCacheBytes 0), so each is planned, read and decoded again.
  for (const k of ['local', 's3']) await stores[k].pageBuffer(id, { maxMessages: 50 });
  for (let i = 0; i < 2 * runs; i++) {
    for (const k of i % 2 === 0 ? ['local', 's3'] : ['s3', 'local']) {
      const t0 = performance.now();
      await stores[k].pageBuffer(id, { maxMessages: 50 });
      push(k, 'warm tail page (50 msgs)', performance.now() - t0);
    }
  }
  for (let i = 0; i < 60; i++) {
    const through = Math.floor(rand() * last);
    for (const k of i % 2 === 0 ? ['local', 's3'] : ['s3', 'local']) {
      const t0 = performance.now();
      await stores[k].pageBuffer(id, { throughSeq: through, maxMessages: 5 });
      push(k, 'warm random page (5 msgs)', performance.now() - t0);
    }
  }
  for (const s of Object.values(stores)) await s.close();
  await s3.close();
}
// Appends of one event, acknowledged (local: fsyncs; S3: the same fsyncs into the local tail plus the manifest PUT).
{
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const tmp = mkdtempSync(join(tmpdir(), 'sp-s3bench-'));
  const s3 = new S3Backend({ objects: client(), location: loc, tailDir: join(tmp, 'tail') });
  const stores = { local: storeOver(new LocalBackend(join(tmp, 'local'))), s3: storeOver(s3) };
  const aid = `append-${Date.now()}`;
  for (const s of Object.values(stores)) await s.create(aid, {});
  let seq = 0;
  for (let i = 0; i < 100; i++) {
    for (const k of ['local', 's3']) {
      const t0 = performance.now();
      await stores[k].append(aid, [{ type: 'user/message', seq, time: seq, data: { text: `m${seq}` } }]);
      if (i >= 10) push(k, 'append of one event (acknowledged)', performance.now() - t0);
    }
    seq++;
  }
  for (const s of Object.values(stores)) await s.close();
  await s3.close();
  rmSync(tmp, { recursive: true, force: true });
}
await base.close();

// Whole process: the CLI, tail page, --data vs --store.
const cli = join(root, 'bin/session-pager.js');
for (let r = 0; r < Number(values['cli-runs']); r++) {
  for (const kind of r % 2 === 0 ? ['local', 's3'] : ['s3', 'local']) {
    const args = [cli, 'page', id, '--max-messages', '50', '--data', dataDir, ...(kind === 's3' ? ['--store', values.store] : [])];
    const t0 = performance.now();
    const out = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const ms = performance.now() - t0;
    if (out.status !== 0) throw new Error(`cli page failed: ${out.stderr}`);
    push(kind, 'whole process `page` tail (50 msgs)', ms);
    push(kind, 'whole process peak RSS (MB)', Number(out.stderr.trim().split('\n').pop()) / 1024);
  }
}

const med = (a) => [...a].sort((x, y) => x - y)[Math.floor((a.length - 1) / 2)];
const p90 = (a) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * 0.9))];
const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 1024;
const lines = [];
const indexBytes = (await Promise.all([keys.entries, ...(await local.list(keys.projections)).map((n) => projectionKey(keys, n))].map(async (k) => (await local.stat(k))?.size ?? 0))).reduce((a, b) => a + b, 0);
lines.push(`Session ${id}: ${info.eventCount.toLocaleString('en')} events, log ${((await local.stat(keys.events)).size / 1e6).toFixed(0)} MB, index (entry sidecar and projections) ${(indexBytes / 1e6).toFixed(1)} MB; ${runs} rounds, local and S3 alternating; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')} at the end; bench process peak RSS ${hwm.toFixed(0)} MB.`);
lines.push('');
lines.push('| measure | local p50 (ms) | S3 p50 (ms) | S3 / local | S3 p90 | S3 sequential round trips (each run) | the same without freshness re-looks | S3 LISTs (max) | S3 GET bytes (p50) |');
lines.push('|---|---|---|---|---|---|---|---|---|');
for (const what of Object.keys(results.s3)) {
  const a = results.local[what];
  const b = results.s3[what];
  const unit = what.includes('RSS') ? '' : '';
  lines.push(`| ${what} | ${med(a).toFixed(1)}${unit} | ${med(b).toFixed(1)} | ${(med(b) / med(a)).toFixed(2)}x | ${p90(b).toFixed(1)} | ${rtts[what] ? rtts[what].join(', ') : ''} | ${own[what] ? own[what].join(', ') : ''} | ${lists[what] ? Math.max(...lists[what]) : ''} | ${bytes[what] ? med(bytes[what]).toLocaleString('en') : ''} |`);
}
lines.push('');
lines.push(`Page bodies: tail ${pageBytes.tail?.toLocaleString('en')} B, random 50 msgs ${pageBytes.r50?.toLocaleString('en')} B (last round), random 5 msgs ${pageBytes.r5?.toLocaleString('en')} B.`);
process.stdout.write(lines.join('\n') + '\n');
