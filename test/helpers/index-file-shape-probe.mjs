// Run by test/optimized-code.test.ts with --expose-gc --no-concurrent-recompilation: serves pages of a
// session through a store as the HTTP route asks them (the page's version, then the page built from
// that version), with V8 tracing what it optimizes and what it throws away, and runs full collections
// between pages, when nothing of the last page is left but what the code keeps. The objects a page
// makes and drops (the frame index file, the page version and the view it carries) must not take
// their hidden classes with them: V8 would then discard the page path's optimized code that checks
// for them ("weak objects" in --trace-deopt). The flags are V8's and process-wide: set here, after
// the session is written, so the trace holds the pages alone.
//
//   node --allow-natives-syntax --expose-gc --no-concurrent-recompilation index-file-shape-probe.mjs <dist> <dataDir>
import { once } from 'node:events';
import net from 'node:net';
import { setFlagsFromString } from 'node:v8';

const [dist, dataDir] = process.argv.slice(2);
const { generateSession } = await import(`${dist}/main/gen/generate.js`);
const { openStore } = await import(`${dist}/main/store.js`);
const { buildServer } = await import(`${dist}/main/server/index.js`);

const ID = 'probe';
const EVENTS = 3000;
await generateSession(dataDir, { id: ID, events: EVENTS, seed: 5 });
// No page cache (every page is planned and built), no warm-up (these pages are the warm-up), no page
// workers (decoded on this thread): the planning and the views are the page path's as `serve` runs
// them, and the trace is this one thread's (workers' lines would cut into it).
const store = await openStore({ dataDir, inThread: true, pageCacheBytes: 0 });
// The second part: pages through the HTTP server's direct page route (fast-page.ts), whose
// parameters, answers and headers are made and dropped per request too, from a store with its page
// cache (pages handed out from the cache as well as built), half of them asked in gzip.
const cached = await openStore({ dataDir, inThread: true });
const app = buildServer(cached, {});
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.address();
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
async function rounds(page, warm, perRound) {
  for (let i = 0; i < warm; i++) await page();
  for (let round = 0; round < ROUNDS; round++) {
    // Between pages: a macrotask later, nothing of the last page is on the stack.
    await new Promise((r) => setTimeout(r, 0));
    gc();
    for (let i = 0; i < perRound; i++) await page();
  }
}
await rounds(servePage, WARM_PAGES, ROUND_PAGES);
process.stdout.write('\nprobe: store pages done\n');

// More pages than the store's part: the route's functions are optimized after more calls than the planner's.
const HTTP_WARM_PAGES = 2000;
const HTTP_ROUND_PAGES = 400;
/**
 * One GET over the one keep-alive connection, a raw socket (node's HTTP client would make and drop
 * objects of its own in this process, and its functions' lines would cut into the trace): its
 * status and ETag, the body counted and dropped.
 */
const socket = net.connect(port, '127.0.0.1');
socket.setNoDelay(true);
await once(socket, 'connect');
let pending = null;
let got = Buffer.alloc(0);
socket.on('data', (chunk) => {
  got = got.length === 0 ? chunk : Buffer.concat([got, chunk]);
  const end = got.indexOf('\r\n\r\n');
  if (end < 0 || pending === null) return;
  const head = got.subarray(0, end).toString('latin1');
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
  if (got.length < end + 4 + length) return;
  got = got.subarray(end + 4 + length);
  const done = pending;
  pending = null;
  done({ status: Number(head.slice(9, 12)), etag: /\r\netag: *([^\r]*)/i.exec(head)?.[1] });
});
function get(path, gzip, ifNoneMatch) {
  return new Promise((resolve) => {
    pending = resolve;
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${gzip ? 'Accept-Encoding: gzip\r\n' : ''}${ifNoneMatch === undefined ? '' : `If-None-Match: ${ifNoneMatch}\r\n`}\r\n`);
  });
}
/** One random page over HTTP as a client asks it, every other in gzip, every third asked again with its ETag (a 304). */
let asked = 0;
async function httpPage() {
  const path = `/v1/sessions/${ID}/page?throughSeq=${EVENTS - 1}&beforeSeq=${1 + Math.floor(rand() * EVENTS)}&maxMessages=20`;
  const gzip = ++asked % 2 === 0;
  const first = await get(path, gzip);
  if (first.status !== 200) throw new Error(`page answered ${first.status}`);
  if (asked % 3 === 0) {
    const again = await get(path, gzip, first.etag);
    if (again.status !== 304) throw new Error(`page asked with its ETag answered ${again.status}`);
  }
}
await rounds(httpPage, HTTP_WARM_PAGES, HTTP_ROUND_PAGES);
setFlagsFromString('--no-trace-opt');
setFlagsFromString('--no-trace-deopt');

// What keeps those classes alive, checked directly (V8's own %HaveSameMap): each kind of object is
// one object literal of all its fields, whatever the request, so its hidden class is the literal's,
// held by the code that makes it, not only by the objects.
// The page as the store hands it out: built or from the cache, with or without a coding.
const gzip = { encoding: 'gzip', levels: { threshold: 1024, brotliQuality: 4, gzipLevel: 6, zstdLevel: undefined } };
const ask = { throughSeq: EVENTS - 1, beforeSeq: 1234, maxMessages: 20 };
const handed = [];
for (const coding of [undefined, gzip, undefined, gzip]) {
  const pb = await cached.pageBuffer(ID, { ...ask, beforeSeq: ask.beforeSeq + (coding === undefined ? 0 : 1) }, undefined, coding);
  handed.push(pb);
  pb.release?.();
}
const sameMaps = (xs) => xs.every((x) => %HaveSameMap(x, xs[0]));
// The page parameters of the direct route, whatever the query's order and parameters.
const { plainPageQuery } = await import(`${dist}/main/server/fast-page.js`);
const queries = ['beforeSeq=5&maxMessages=20', 'maxMessages=20&throughSeq=9', 'maxBytes=9&beforeSeq=2&throughSeq=3', ''].map(plainPageQuery);
// The headers the direct route writes (node's writeHead sees them as given): the class an object
// literal of the same fields in the same order has, not the one of an empty object grown field by field.
const heads = [];
const { ServerResponse } = await import('node:http');
const writeHead = ServerResponse.prototype.writeHead;
ServerResponse.prototype.writeHead = function (status, headers) {
  heads.push(headers);
  return writeHead.apply(this, arguments);
};
const path = `/v1/sessions/${ID}/page?throughSeq=${EVENTS - 1}&beforeSeq=77&maxMessages=20`;
const plain = await get(path, false);
await get(path, true);
await get(path, false, plain.etag);
ServerResponse.prototype.writeHead = writeHead;
const [h200, h200gzip, h304] = heads;
const shapes = {
  pages: handed.length === 4 && handed[1].encoded !== undefined && sameMaps(handed),
  params: sameMaps(queries),
  headers: %HaveSameMap(h200, { etag: '', 'cache-control': '', vary: '', 'content-type': '', 'x-request-id': '', 'content-length': '' }),
  gzipHeaders: %HaveSameMap(h200gzip, { etag: '', 'cache-control': '', vary: '', 'content-type': '', 'content-encoding': '', 'x-request-id': '', 'content-length': '' }),
  notModifiedHeaders: %HaveSameMap(h304, { etag: '', 'cache-control': '', vary: '', 'x-request-id': '' }),
};
process.stdout.write(`\nprobe shapes: ${JSON.stringify(shapes)}\n`);
socket.destroy();
await app.close();
await cached.close();
await store.close();
process.stdout.write(`\nprobe done: ${WARM_PAGES + ROUNDS * ROUND_PAGES} pages, ${ROUNDS} full collections\n`);
process.stdout.write(`probe done over HTTP: ${HTTP_WARM_PAGES + ROUNDS * HTTP_ROUND_PAGES} pages, ${ROUNDS} full collections\n`);
