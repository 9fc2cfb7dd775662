// Run by test/optimized-code.test.ts with --trace-opt --trace-deopt: the planner's warm-ups as the
// store runs them (warmup/warm-up.ts: one keeping its synthetic sidecar, then the last one), until
// V8 has the walk (walkPage) optimized; then this thread's first detached ArrayBuffer, as the first
// page task whose buffers are moved to a worker detaches them (main/worker-pool.ts runSlice), and
// then a page planned over a sidecar of the warm-up's shapes, both walks (JSONL lines, index records).
// V8's trace goes to stdout, then the walk's tier after the warm-up, after the detach and after the page, as JSON on its own last line.
const dist = process.argv[2];
const { walkPage, planPage } = await import(`${dist}/core/page-planner.js`);
const { warmUpPlanner } = await import(`${dist}/main/warmup/planner-warmup.js`);
const { tierOf } = await import(`${dist}/workers/optimization-status.js`);
const { resolvePageParams } = await import(`${dist}/core/page-rule.js`);
const { syntheticFrameLog } = await import('./synthetic-frame-log.mjs');

const settled = async () => {
  for (let i = 0; i < 2500 && tierOf(walkPage) === 'compiling'; i++) await new Promise((r) => setTimeout(r, 2));
  return tierOf(walkPage);
};
await warmUpPlanner(30, true);
await warmUpPlanner();
const warmed = await settled();

const moved = new ArrayBuffer(64);
structuredClone(moved, { transfer: [moved] });
const afterDetach = tierOf(walkPage);

const log = await syntheticFrameLog(dist, 4000);
const p = resolvePageParams({ maxMessages: 50 }, log.lastSeq);
const lines = await planPage(p, log.lines());
const records = await planPage(p, log.records());
// The same page either way (the index's lines name no kind), and not the whole log: a tail page.
const bounds = (plan) => JSON.stringify([plan.fromSeq, plan.toSeq, plan.hasMore, plan.span.count, plan.span.bytes]);
if (bounds(lines) !== bounds(records) || !lines.hasMore) throw new Error(`not one tail page: ${bounds(lines)} ${bounds(records)}`);
process.stdout.write(`\n${JSON.stringify({ warmed, afterDetach, afterPage: tierOf(walkPage) })}\n`);
