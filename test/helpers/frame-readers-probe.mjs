// Run by test/optimized-code.test.ts in a child process: a page worker's JIT warm-up as the
// worker runs it (warmUpJit guided by V8's answers, page-task.ts), then whether the per-frame
// readers the decode loop calls without inlining (the trusted layout's scanner, the message type
// check, the message group walk, a tool frame's identity) run optimized code, so a first real page does not compile them.
process.env.SESSION_PAGER_JIT_WARMUP = '0';
const dist = process.argv[2];
const { decodeInArena, decodeSlice } = await import(`${dist}/workers/page-task.js`);
const { warmUpJit } = await import(`${dist}/workers/jit-warmup.js`);
const { tierOf } = await import(`${dist}/workers/optimization-status.js`);
const { scanTrustedFrame, TRUSTED_READERS } = await import(`${dist}/streams/trusted-frame-scanner.js`);
const { GROUP_READERS, isMessageTypeAt } = await import(`${dist}/streams/message-group.js`);
await warmUpJit(decodeInArena, () => tierOf(decodeSlice), 20_000, tierOf, () => false);
// (toolIdentity: a tool frame's identity reader, exported only in that list.)
const fns = { scanTrustedFrame, isMessageTypeAt, keysGroup: GROUP_READERS[0], toolIdentity: TRUSTED_READERS.find((f) => f.name === 'toolIdentity') };
const tiers = () => Object.fromEntries(Object.entries(fns).map(([k, f]) => [k, tierOf(f)]));
// The warm-up returns once each is optimized or being compiled; those compiles end without another call.
for (let i = 0; i < 400 && Object.values(tiers()).includes('compiling'); i++) await new Promise((r) => setTimeout(r, 5));
process.stdout.write(JSON.stringify(tiers()));
