// Run by test/optimized-code.test.ts with --allow-natives-syntax --expose-gc: optimizes the
// planner on its warm-up's synthetic sidecar (both walks: JSONL lines and index records),
// collects garbage once no plan is running, and reports whether the walk (walkPage, under planPage) is still optimized.
const dist = process.argv[2];
const { walkPage } = await import(`${dist}/core/page-planner.js`);
const { warmUpPlanner } = await import(`${dist}/main/warmup/planner-warmup.js`);
const optimized = () => (%GetOptimizationStatus(walkPage) & 16) !== 0;
// Compiled now, while --allow-natives-syntax is on: the warm-up asks V8 the same question through
// workers/optimization-status.ts, which cleared the flag after making its own function even in a
// process started with it, before 12-02's sixth session.
optimized();
// A warm-up round may still meet a first shape (a deopt), so optimize again, up
// to eight rounds, before judging; what the test asserts is that a garbage
// collection between pages does not throw the optimized code away. The test runs
// this without concurrent recompilation: a background job begun in the warm-up and
// installed late (with a busy machine's timing) made `warmed` false now and then.
let warmed = false;
for (let round = 0; round < 8 && !warmed; round++) {
  %PrepareFunctionForOptimization(walkPage);
  await warmUpPlanner(4);
  %OptimizeFunctionOnNextCall(walkPage);
  await warmUpPlanner(1);
  warmed = optimized();
}
gc();
process.stdout.write(JSON.stringify({ warmed, afterGc: optimized() }));
