// Run by test/optimized-code.test.ts with --trace-opt: the planner's warm-ups as the store runs
// them (warmup/warm-up.ts: one keeping its synthetic sidecar, then the last one), then a pause
// for V8's background compiles to finish. What V8 compiled goes to stdout.
const dist = process.argv[2];
const { warmUpPlanner } = await import(`${dist}/main/warmup/planner-warmup.js`);
await warmUpPlanner(30, true);
await warmUpPlanner();
await new Promise((r) => setTimeout(r, 300));
