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
const { encodeEntry } = await import(`${dist}/streams/entry-codec.js`);
const { INDEX_RECORD_BYTES, indexBackward, indexRecords } = await import(`${dist}/streams/frame-index-file.js`);
const { BackwardEntries } = await import(`${dist}/streams/entries-file.js`);
const { resolvePageParams } = await import(`${dist}/core/page-rule.js`);

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

// A log of 4,000 frames past 2^31 bytes, as the warm-up's: a message every 40th frame, text chunks between.
const head = { v: 1, seq: 0, count: 0, offset: 0, length: 2 ** 31 + 4096, kind: 'session', schema: 1 };
const entries = [head];
for (let i = 0, seq = 0, offset = head.length; i < 4000; i++) {
  const counted = i % 40 === 0;
  const count = counted ? 1 : 1 + (i % 37);
  const e = { v: 1, seq, count, offset, length: 60 + count * 11, kind: counted ? 'assistant/message' : 'text-chunks', schema: 1 };
  if (counted) e.group = Math.max(0, seq - 30);
  entries.push(e);
  seq += count;
  offset += e.length;
}
const last = entries[entries.length - 1];
// A small integer, as a real log's is (read from a field that once held a double, it came boxed, and
// the walk, compiled for small integers, deoptimized on it: not what is probed here).
const lastSeq = (last.seq + last.count - 1) | 0;
const bytes = Buffer.from(entries.map((e) => encodeEntry(e)).join(''));
const index = indexRecords(entries);
const p = resolvePageParams({ maxMessages: 50 }, lastSeq);
const lines = await planPage(p, new BackwardEntries(async (pos, len) => bytes.subarray(pos, Math.min(bytes.length, pos + len)), bytes.length, () => {
  throw new Error('the probe sidecar lines are canonical');
}));
const records = await planPage(p, indexBackward((first, n) => index.subarray(first * INDEX_RECORD_BYTES, (first + n) * INDEX_RECORD_BYTES), entries.length - 1));
// The same page either way (the index's lines name no kind), and not the whole log: a tail page.
const bounds = (plan) => JSON.stringify([plan.fromSeq, plan.toSeq, plan.hasMore, plan.span.count, plan.span.bytes]);
if (bounds(lines) !== bounds(records) || !lines.hasMore) throw new Error(`not one tail page: ${bounds(lines)} ${bounds(records)}`);
process.stdout.write(`\n${JSON.stringify({ warmed, afterDetach, afterPage: tierOf(walkPage) })}\n`);
