// Run by test/optimized-code.test.ts with --trace-opt --trace-deopt: in a fresh process, the walk
// (walkPage) optimized over short walks (~400 lines, within a walker's first arrays, as the
// page-path warm-up's pages walk), then the process's first walk that outgrows them (~2,400
// lines: the walker's arrays replaced, as the planner's last warm-up pass and a long real page
// replace them). V8's trace goes to stdout, then the walk's tier before and after the long walk,
// as JSON on a line of its own.
const dist = process.argv[2];
const { walkPage, planPage } = await import(`${dist}/core/page-planner.js`);
const { tierOf, optimizeOnNextCall } = await import(`${dist}/workers/optimization-status.js`);
const { resolvePageParams } = await import(`${dist}/core/page-rule.js`);
const { syntheticFrameLog } = await import('./synthetic-frame-log.mjs');
const frames = await syntheticFrameLog(dist, 4000);
const plan = (l, maxMessages) => planPage(resolvePageParams({ maxMessages }, l.lastSeq), l.records());
// Short walks (10 messages, ~400 lines), then the walk optimized at the next one, on this thread.
for (let r = 0; r < 40; r++) await plan(frames, 10);
optimizeOnNextCall(walkPage);
await plan(frames, 10);
for (let i = 0; i < 2500 && tierOf(walkPage) === 'compiling'; i++) await new Promise((r) => setTimeout(r, 2));
if (tierOf(walkPage) !== 'optimized') {
  // V8 had marked it itself meanwhile and its helper-thread compile lost to a deopt: asked once more.
  optimizeOnNextCall(walkPage);
  await plan(frames, 10);
}
const warmed = tierOf(walkPage);
// 60 messages, ~2,400 lines: past the 1,024 a walker starts with (core/page-planner.ts FIRST_ROOM).
const long = await plan(frames, 60);
process.stdout.write(`\n${JSON.stringify({ warmed, afterLong: tierOf(walkPage), frames: long.span.count })}\n`);
