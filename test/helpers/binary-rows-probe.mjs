// Run by test/optimized-code.test.ts in a child process: a page worker's JIT warm-up as the
// worker runs it (warmUpJit guided by V8's answers, page-task.ts), then whether the per-row
// functions of a binary session's page run optimized code, before and after decoding a
// streamed answer in binary frames delivered as a structured clone (as piscina delivers tasks).
process.env.SESSION_PAGER_JIT_WARMUP = '0';
const dist = process.argv[2];
const { decodeInArena, decodeSlice } = await import(`${dist}/workers/page-task.js`);
const { warmUpJit, binaryRowWork } = await import(`${dist}/workers/jit-warmup.js`);
const { tierOf } = await import(`${dist}/workers/optimization-status.js`);
const { continuedBinaryRow, writeRowGaps, writeRowMembers } = await import(`${dist}/streams/msgpack-row.js`);
const { SliceEncoder } = await import(`${dist}/workers/slice-encoder.js`);
const { binaryFrame } = await import(`${dist}/workers/binary-frame.js`);
await warmUpJit(decodeInArena, () => tierOf(decodeSlice), 20_000, tierOf);
const fns = { binaryFrame, continuedBinaryRow, wholeRow: SliceEncoder.prototype.wholeRow, writeRowGaps, writeRowMembers };
const tiers = () => Object.fromEntries(Object.entries(fns).map(([k, f]) => [k, tierOf(f)]));
// The warm-up returns once each is optimized or being compiled; those compiles end without another call.
for (let i = 0; i < 400 && Object.values(tiers()).includes('compiling'); i++) await new Promise((r) => setTimeout(r, 5));
const warmed = tiers();
const w = binaryRowWork(50);
decodeInArena(structuredClone(w.task), w.bytes);
process.stdout.write(JSON.stringify({ warmed, afterTask: tiers() }));
