// One measurement in a fresh process, printed as one JSON line. Spawned by
// bench/page-bench.mjs so that every "cold" number comes from a process that
// has never read the session, and peak RSS is that process's own (from the OS).
// The build measured is this checkout's dist/, or the one `dist` in the options names: bench/page-ab.mjs
// runs this one script against both its builds, so that A and B are measured by the same code.
import { openSync, readSync, closeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const [mode, dataDir, id, paramsJson = '{}', extra = '{}'] = process.argv.slice(2);
const params = JSON.parse(paramsJson);
const opts = JSON.parse(extra);
const dist = opts.dist === undefined ? new URL('../dist/', import.meta.url) : pathToFileURL(resolve(opts.dist) + '/');
const out = { mode, id, params };

function rssMB() {
  return process.resourceUsage().maxRSS / 1024; // maxRSS is in KiB
}

if (mode === 'reference') {
  const { readWholeLog, referencePage } = await import(new URL('main/reference-reader.js', dist));
  const t0 = performance.now();
  const log = await readWholeLog(join(dataDir, 'sessions', `${id}.events`));
  const page = referencePage(log, id, params);
  const body = Buffer.from(JSON.stringify(page));
  out.ms = performance.now() - t0;
  out.bytes = body.length;
  out.fromSeq = page.fromSeq;
  out.toSeq = page.toSeq;
  out.events = log.events.length;
} else if (mode === 'pager') {
  const { openStore } = await import(new URL('main/store.js', dist));
  const t0 = performance.now();
  // No prepared-page cache: the repeated pages below must be built, not served from it.
  const store = await openStore({ dataDir, workers: opts.workers, pageCacheBytes: 0, ...(opts.pageWarmUp === false ? { warmUp: { pagePath: false } } : {}) });
  // Let the fixed-size pool finish starting its threads, as a serving process would have.
  await store.warmUp();
  const t1 = performance.now();
  const pb = await store.pageBuffer(id, params);
  const t2 = performance.now();
  out.ms = t2 - t1;
  out.msWithStartup = t2 - t0;
  out.timing = pb.timing;
  out.bytes = pb.body.length;
  out.fromSeq = pb.fromSeq;
  out.toSeq = pb.toSeq;
  out.frames = pb.frames;
  out.frameBytes = pb.frameBytes;
  // Done with the page, as the server is once its response is written (PageBuffer.release: its
  // body's memory may take a later page; a build without it has nothing to release).
  pb.release?.();
  // Peak RSS of a process that served this one page: the pager's figure, taken where the
  // reference's is (after its page), before the floor read below adds a buffer of the frames' size.
  out.maxRssPageMB = rssMB();
  // The same page again, as a long-running server builds it: the median of pages 6-10
  // (the first pages of a process still pay for JIT tiering; see docs/benchmarks.md).
  const again = [];
  for (let i = 0; i < 10; i++) {
    const t = performance.now();
    const p = await store.pageBuffer(id, params);
    again.push({ ms: performance.now() - t, timing: p.timing });
    p.release?.();
  }
  const settled = again.slice(5).sort((a, b) => a.ms - b.ms);
  out.warmMs = settled[2].ms;
  out.warmTiming = settled[2].timing;
  out.firstPagesMs = again.slice(0, 5).map((a) => Math.round(a.ms));
  out.maxRssAfterRepeatsMB = rssMB();
  // The physical floor: read the same frames' bytes, nothing else, in this process. After the
  // repeats, not before: its 6 MB buffer, garbage once read, counted against the main thread's
  // old-generation limit (V8 counts external memory) and started marking among the repeats of a
  // build whose heap runs small, a cost no server pays (docs/benchmarks.md, "same, second round
  // (twelfth session)").
  const plan = await store.plan(id, params);
  const { first, last } = plan.plan.span;
  const t3 = performance.now();
  const len = last.offset + last.length - first.offset;
  const buf = Buffer.allocUnsafe(len);
  const fd = openSync(join(dataDir, 'sessions', `${id}.events`), 'r');
  let got = 0;
  while (got < len) got += readSync(fd, buf, got, len - got, first.offset + got);
  closeSync(fd);
  out.floorMs = performance.now() - t3;
  // And with the floor read's buffer too.
  out.maxRssMB = rssMB();
  await store.close();
} else if (mode === 'warm') {
  // p50/p99 of typical pages after warm-up: random 50-message pages from the middle.
  const { openStore } = await import(new URL('main/store.js', dist));
  const store = await openStore({ dataDir, workers: opts.workers });
  await store.warmUp();
  const info = await store.info(id);
  let x = 12345;
  const rand = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const pick = () => Math.floor(info.lastSeq * (0.1 + 0.6 * rand()));
  for (let i = 0; i < opts.warmup; i++) await store.pageBuffer(id, { throughSeq: pick(), maxMessages: 50 });
  const times = [];
  let bytes = 0;
  for (let i = 0; i < opts.iterations; i++) {
    const t = performance.now();
    const pb = await store.pageBuffer(id, { throughSeq: pick(), maxMessages: 50 });
    times.push(performance.now() - t);
    bytes += pb.body.length;
  }
  times.sort((a, b) => a - b);
  out.p50 = times[Math.floor(times.length * 0.5)];
  out.p90 = times[Math.floor(times.length * 0.9)];
  out.p99 = times[Math.floor(times.length * 0.99)];
  out.meanBytes = Math.round(bytes / times.length);
  await store.close();
} else {
  throw new Error(`unknown mode ${mode}`);
}
out.maxRssMB ??= rssMB();
process.stdout.write(JSON.stringify(out) + '\n');
