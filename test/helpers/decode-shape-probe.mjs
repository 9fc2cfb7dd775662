// Run by test/optimized-code.test.ts with --allow-natives-syntax --expose-gc (V8 intrinsics:
// not valid JavaScript elsewhere, hence a file of its own). Optimizes the worker's decode loop
// on the JIT warm-up's tasks, then decodes the same tasks as structured clones (as piscina
// delivers them), then collects garbage between tasks (as an idle worker's heap does), and
// reports after each whether the loop is still optimized. Then decodes tasks that carry a
// plan's claim digest (uint32, here past the small-integer range, as half of real ones are),
// which the warm-up's tasks never do.
process.env.SESSION_PAGER_JIT_WARMUP = '0';
const dist = process.argv[2];
const { decodeInArena, decodeSlice } = await import(`${dist}/workers/page-task.js`);
const { warmupWork } = await import(`${dist}/workers/jit-warmup.js`);
const work = warmupWork();
const decodeAll = (copy) => {
  for (const w of work) for (const t of w.tasks) decodeInArena(copy(t), w.bytes);
};
// Bit 4 of the status: the function runs optimized code.
const optimized = () => (%GetOptimizationStatus(decodeSlice) & 16) !== 0;
// A claim that these frames do not hold (a small integer): the loop sees the compare and the failing path.
const claiming = (digest) => (t) => ({ ...structuredClone(t), digest });
%PrepareFunctionForOptimization(decodeSlice);
for (let r = 0; r < 3; r++) {
  decodeAll((t) => t);
  decodeAll(claiming(12345));
}
%OptimizeFunctionOnNextCall(decodeSlice);
decodeAll((t) => t);
const warmed = optimized();
decodeAll((t) => structuredClone(t));
const afterClones = optimized();
gc();
const afterGc = optimized();
// The first task whose digest is past the small-integer range.
const first = work[0];
decodeInArena(claiming(0xfedcba98)(first.tasks[0]), first.bytes);
process.stdout.write(JSON.stringify({ warmed, afterClones, afterGc, afterDigests: optimized() }));
