#!/usr/bin/env node
// bench/page-bench.mjs's figures for two builds side by side in one run: the
// cold and warm 5M tail page (and the cold one from the store's opening: open,
// warm-up, page) and the typical-page p50, each from fresh
// bench/child.mjs processes of build A and build B alternating (A B B A ...),
// so a noisy stretch of a shared machine hits both alike. Both run this
// checkout's bench/child.mjs (each build's dist/ given to it): a build's own
// copy could measure differently (an older one read the floor's 6 MB buffer
// before the repeated pages, garbage that started marking among them).
//
//   node bench/page-ab.mjs --a DIR --b DIR [--data DIR] [--runs N] [--typical-runs N] [--page-warmup 0|1]
//
// --page-warmup 0: the tail page's stores open without the page-path warm-up
// (StoreOptions.warmUp.pagePath false, as SESSION_PAGER_PAGE_WARMUP=0 runs `serve`).
//
// DIR: a built checkout (its dist/), e.g. from
// `git worktree add /tmp/a <commit> && (cd /tmp/a && npm ci && npm run build)`.
// The data dir is page-bench's (run it once to generate the sessions).
// Prints medians per build, B/A ratios of the medians, and the median of
// the per-pair ratios, as markdown.
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { median, parseScriptArgs } from './args.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    data: { type: 'string', default: '/tmp/session-pager-bench' },
    runs: { type: 'string', default: '12' },
    'typical-runs': { type: 'string', default: '4' },
    workers: { type: 'string', default: '2' },
    // 0: the stores open without the page-path warm-up (what SESSION_PAGER_PAGE_WARMUP=0 gives `serve`).
    'page-warmup': { type: 'string', default: '1' },
  },
});
if (!values.a || !values.b) throw new Error('--a and --b are required');
const count = (name) => {
  const n = Number(values[name]);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${name} must be a whole number >= 0, got ${values[name]}`);
  return n;
};
const runs = count('runs');
const typicalRuns = count('typical-runs');
const builds = [resolve(values.a), resolve(values.b)];
const workers = Number(values.workers);
if (values['page-warmup'] !== '0' && values['page-warmup'] !== '1') throw new Error(`--page-warmup must be 0 or 1, got ${values['page-warmup']}`);
const pageWarmUp = values['page-warmup'] === '1';

const child = new URL('child.mjs', import.meta.url).pathname;

function measure(build, mode, id, params, extra) {
  const r = spawnSync(process.execPath, [child, mode, values.data, id, JSON.stringify(params), JSON.stringify({ workers, dist: join(build, 'dist'), ...extra })], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${build} ${mode} ${id} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

const load = [loadavg()[0]];
const got = builds.map(() => ({ start: [], cold: [], warm: [], typical: [] }));
const pairs = { start: [], cold: [], warm: [], typical: [] };
const order = (i) => (i % 2 === 0 ? [0, 1] : [1, 0]);
for (let i = 0; i < runs; i++) {
  const r = [];
  for (const k of order(i)) r[k] = measure(builds[k], 'pager', 'bench-5m', { maxMessages: 50 }, pageWarmUp ? {} : { pageWarmUp: false });
  for (const k of [0, 1]) {
    got[k].start.push(r[k].msWithStartup);
    got[k].cold.push(r[k].ms);
    got[k].warm.push(r[k].warmMs);
  }
  pairs.start.push(r[1].msWithStartup / r[0].msWithStartup);
  pairs.cold.push(r[1].ms / r[0].ms);
  pairs.warm.push(r[1].warmMs / r[0].warmMs);
  load.push(loadavg()[0]);
}
for (let i = 0; i < typicalRuns; i++) {
  const r = [];
  for (const k of order(i)) r[k] = measure(builds[k], 'warm', 'bench-typical', {}, { warmup: 200, iterations: 1000 });
  for (const k of [0, 1]) got[k].typical.push(r[k].p50);
  pairs.typical.push(r[1].p50 / r[0].p50);
  load.push(loadavg()[0]);
}
const f = (x, d = 2) => x.toFixed(d);
const lines = [];
lines.push(`A = ${builds[0]}, B = ${builds[1]}; ${runs} alternating fresh processes per build for the tail page, ${typicalRuns} for typical pages; load average (1 min) ${f(Math.min(...load), 1)}-${f(Math.max(...load), 1)} during the run.${pageWarmUp ? '' : ' Stores opened without the page-path warm-up.'}`);
lines.push('');
lines.push('| figure | A median ms | B median ms | B / A (medians) | B / A (median of pairs) |');
lines.push('|---|---|---|---|---|');
for (const [name, key] of [['start to the first 5M tail page (open, warm-up, page), cold', 'start'], ['5M tail page, cold', 'cold'], ['5M tail page, warm (median of builds 6-10)', 'warm'], ['typical page p50 (1M fixture-shaped)', 'typical']]) {
  // A figure asked no runs of (--runs 0, --typical-runs 0) has no row.
  if (pairs[key].length === 0) continue;
  const a = median(got[0][key]);
  const b = median(got[1][key]);
  lines.push(`| ${name} | ${f(a)} | ${f(b)} | ${f(b / a, 3)} | ${f(median(pairs[key]), 3)} |`);
}
lines.push('');
if (runs > 0) lines.push(`Cold runs (ms): A ${got[0].cold.map((x) => f(x, 1)).join(', ')}; B ${got[1].cold.map((x) => f(x, 1)).join(', ')}.`);
process.stdout.write(lines.join('\n') + '\n');
