// Run by test/optimized-code.test.ts with --expose-gc --no-concurrent-recompilation: serves pages of a
// session through a store as the HTTP route asks them (the page's version, then the page built from
// that version), with V8 tracing what it optimizes and what it throws away, and runs full collections
// between pages, when nothing of the last page is left but what the code keeps. The objects a page
// makes and drops (the frame index file, the page version and the view it carries) must not take
// their hidden classes with them: V8 would then discard the page path's optimized code that checks
// for them ("weak objects" in --trace-deopt). The flags are V8's and process-wide: set here, after
// the session is written, so the trace holds the pages alone.
//
//   node --expose-gc --no-concurrent-recompilation index-file-shape-probe.mjs <dist> <dataDir>
import { setFlagsFromString } from 'node:v8';

const [dist, dataDir] = process.argv.slice(2);
const { generateSession } = await import(`${dist}/main/gen/generate.js`);
const { openStore } = await import(`${dist}/main/store.js`);

const ID = 'probe';
const EVENTS = 3000;
await generateSession(dataDir, { id: ID, events: EVENTS, seed: 5 });
// No page cache (every page is planned and built), no warm-up (these pages are the warm-up), no page
// workers (decoded on this thread): the planning and the views are the page path's as `serve` runs
// them, and the trace is this one thread's (workers' lines would cut into it).
const store = await openStore({ dataDir, inThread: true, pageCacheBytes: 0 });
setFlagsFromString('--trace-opt');
setFlagsFromString('--trace-deopt');

let seed = 11;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
/** One random page as the HTTP route asks it: its version first, then the page built from that version. */
async function servePage() {
  const params = { throughSeq: EVENTS - 1, beforeSeq: 1 + Math.floor(rand() * EVENTS), maxMessages: 20 };
  const version = await store.pageVersion(ID, params.throughSeq);
  const page = await store.pageBuffer(ID, params, undefined, undefined, version);
  page.release?.();
}

// Enough pages for V8 to optimize the page path, then rounds of a full collection and more pages: a
// function discarded at one collection is optimized again by the next round's pages, and discarded
// again at the next (V8 keeps a freed map's transitions for a collection or two, so one is not enough).
const WARM_PAGES = 300;
const ROUNDS = 6;
const ROUND_PAGES = 100;
for (let i = 0; i < WARM_PAGES; i++) await servePage();
for (let round = 0; round < ROUNDS; round++) {
  // Between pages: a macrotask later, nothing of the last page is on the stack.
  await new Promise((r) => setTimeout(r, 0));
  gc();
  for (let i = 0; i < ROUND_PAGES; i++) await servePage();
}
setFlagsFromString('--no-trace-opt');
setFlagsFromString('--no-trace-deopt');
await store.close();
process.stdout.write(`\nprobe done: ${WARM_PAGES + ROUNDS * ROUND_PAGES} pages, ${ROUNDS} full collections\n`);
