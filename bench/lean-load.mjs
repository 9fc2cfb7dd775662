#!/usr/bin/env node
// The capacity lane's load generator (issue 15, proof, eleventh session): the
// same random pages as bench/http-load.mjs (same seed, same draw, same
// sequence), from a process of its own, but as little client work a request
// as a measurement of the server needs, so that on a shared machine the
// generator takes as little of the cores as it can from the server under test.
// Every request is a Buffer built before the lane starts; each connection is a
// raw keep-alive socket (node:net) whose answers are framed from their head
// (status, Content-Length or chunked) and whose body bytes are counted, never
// decoded, parsed or copied. autocannon (http-load.mjs) turns every body into a
// string as it arrives and parses it with a JavaScript HTTP parser: ~0.6 ms of
// CPU a 300 KB page (docs/benchmarks.md, proof second round).
//
// Wrong fast answers cannot pass unseen: one 200 body in --sample-every is
// kept (a copy), and after the timed lane (outside it) --check-db compares
// each kept body with the page the SQLite peer's reader builds in process
// (bench/sqlite-peer.mjs, the oracle peer-bench checks both servers against):
// any difference fails the run.
//
//   node bench/lean-load.mjs --url URL --token T --pages FILE [--random] [--seed N]
//        --connections N --seconds S [--accept-encoding identity] [--check-db FILE] [--sample-every 50]
//
// Prints one JSON line, http-load.mjs's fields plus generatorCpuMsPerRequest
// (this process's CPU over the lane, a request) and checked (bodies compared).
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { parseScriptArgs } from './args.mjs';
import { LOAD_OPTIONS } from './load-options.mjs';
import { pageDraw, pagePath } from './page-draw.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    ...LOAD_OPTIONS,
    'check-db': { type: 'string' },
    'sample-every': { type: 'string', default: '50' },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const sampleEvery = Number(values['sample-every']);
if (values['check-db'] !== undefined && values['accept-encoding'] !== 'identity') throw new Error('--check-db compares identity bodies: use --accept-encoding identity');
const { hostname, port } = new URL(values.url);

// --- the requests, built before the lane ------------------------------------
const pages = JSON.parse(readFileSync(values.pages, 'utf8')); // [{ id, params }]
/** The pages asked, in order, drawn as http-load.mjs draws them (page-draw.mjs). */
const nextPage = pageDraw(pages, { seed: values.seed, random: values.random });
const head = `Host: ${hostname}:${port}\r\nAuthorization: Bearer ${values.token}\r\nAccept-Encoding: ${values['accept-encoding']}\r\n\r\n`;
// Enough distinct requests that a lane never cycles back to its first pages (a cache could hold them):
// 5,000 a second is over three times the fastest lane seen on this machine.
const count = values.random ? Math.min(1 << 18, Math.max(4096, seconds * 5000)) : pages.length;
const asks = Array.from({ length: count }, () => nextPage());
const wire = asks.map((page) => Buffer.from(`GET ${pagePath(page)} HTTP/1.1\r\n${head}`, 'latin1'));

// --- the lane ------------------------------------------------------------------
const CRLF2 = Buffer.from('\r\n\r\n');
let next = 0; // the next request of the list, shared by the connections (the list's order, as autocannon's)
let requests = 0;
let bytes = 0;
let errors = 0;
const byStatus = {};
let lat = new Float64Array(1 << 16);
const samples = []; // { ask, body }
let running = true;

/** One keep-alive connection: write a request, frame its answer, count it, write the next. */
function connection() {
  // onread: the socket reads into one buffer shared by every connection (each read is handled before the
  // next one starts), so no Buffer is made and no stream event emitted per read; sampled bodies are copied.
  const sock = net.connect({ host: hostname, port: Number(port), noDelay: true, onread: { buffer: readBuffer, callback: (n, buf) => onData(buf.subarray(0, n)) } });
  let headPart = null; // a head split over reads (rare)
  let status = 0;
  let left = -1; // body bytes still to come (Content-Length), -1: in the head
  let chunked = false;
  let chunkLine = ''; // chunked: the size line being read; left counts the chunk's data plus its CRLF
  let t0 = 0;
  let ask = -1;
  let keep = null; // the kept body's parts when this answer is sampled
  let closeAfter = false;
  let inFlight = false;
  let ours = false; // closed here (the server asked to close, or the lane ended)
  const send = () => {
    if (!running) return;
    inFlight = true;
    ask = next++ % count;
    t0 = performance.now();
    left = -1;
    sock.write(wire[ask]);
  };
  const done = () => {
    const ms = performance.now() - t0;
    if (requests === lat.length) {
      const grown = new Float64Array(lat.length * 2);
      grown.set(lat);
      lat = grown;
    }
    lat[requests++] = ms;
    inFlight = false;
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    if (keep !== null) samples.push({ ask: asks[ask], body: Buffer.concat(keep) });
    keep = null;
    left = -1;
    if (closeAfter) {
      ours = true;
      sock.destroy();
      if (running) connection();
      return;
    }
    send();
  };
  /** Counts the body bytes data[from, to) (and keeps them if this answer is sampled). */
  const body = (data, from, to) => {
    if (keep !== null && to > from) keep.push(Buffer.from(data.subarray(from, to)));
    bytes += to - from;
  };
  sock.on('connect', send);
  const onData = (data) => {
    if (!running) return;
    let at = 0;
    while (at < data.length) {
      if (left === -1) {
        // The head: status line and headers up to the blank line.
        let buf = data;
        let from = at;
        if (headPart !== null) {
          buf = Buffer.concat([headPart, data.subarray(at)]);
          from = 0;
        }
        const end = buf.indexOf(CRLF2, from);
        if (end === -1) {
          headPart = Buffer.from(buf.subarray(from)); // a copy: the read buffer is reused
          return;
        }
        const h = buf.latin1Slice(from, end);
        headPart = null;
        status = Number(h.slice(9, 12));
        const cl = /\r\ncontent-length:[ \t]*(\d+)/i.exec(h);
        chunked = cl === null && /\r\ntransfer-encoding:[ \t]*chunked/i.test(h);
        closeAfter = /\r\nconnection:[ \t]*close/i.test(h);
        if (cl === null && !chunked) throw new Error(`an answer with neither Content-Length nor chunked framing: ${h.split('\r\n')[0]}`);
        left = chunked ? 0 : Number(cl[1]);
        chunkLine = '';
        keep = status === 200 && values['check-db'] !== undefined && samples.length < 200 && (byStatus[200] ?? 0) % sampleEvery === 0 ? [] : null;
        // Where the body starts in `data` (the head may have begun in an earlier read).
        at = data.length - (buf.length - end - 4);
        if (!chunked && left === 0) {
          done();
          continue;
        }
        continue;
      }
      if (!chunked) {
        const n = Math.min(left, data.length - at);
        body(data, at, at + n);
        left -= n;
        at += n;
        if (left === 0) done();
        continue;
      }
      // Chunked: a size line, its data and CRLF; a zero size ends the answer (no trailers expected).
      if (left > 0) {
        const n = Math.min(left, data.length - at);
        // The chunk's data, then its CRLF (two bytes counted in `left`, not in the body).
        const dataLeft = Math.max(0, left - 2);
        body(data, at, at + Math.min(n, dataLeft));
        left -= n;
        at += n;
        continue;
      }
      const nl = data.indexOf(10, at);
      if (nl === -1) {
        chunkLine += data.latin1Slice(at, data.length);
        return;
      }
      chunkLine += data.latin1Slice(at, nl);
      at = nl + 1;
      const size = parseInt(chunkLine, 16);
      chunkLine = '';
      if (size === 0) {
        at += 2; // the final CRLF
        done();
        continue;
      }
      left = size + 2;
    }
  };
  sock.on('error', () => {
    errors++;
  });
  sock.on('close', () => {
    sockets.delete(sock);
    if (!running || ours) return;
    // The server closed with an answer unfinished (or the connect failed): counted, and a new connection.
    if (inFlight) errors++;
    setTimeout(connection, 5);
  });
  sockets.add(sock);
}
const sockets = new Set();
const readBuffer = Buffer.allocUnsafe(256 * 1024);

const cpu0 = process.cpuUsage();
const lane0 = process.hrtime.bigint(); // CLOCK_MONOTONIC, the clock of a --cpu-prof profile's timestamps
const started = performance.now();
for (let c = 0; c < connections; c++) connection();
await new Promise((r) => setTimeout(r, seconds * 1000));
running = false;
const elapsed = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpu0);
const lane1 = process.hrtime.bigint();
for (const s of sockets) s.destroy();

// --- after the lane: the figures, then the sampled bodies against the oracle -------
const sorted = lat.subarray(0, requests).sort();
const pct = (q) => (requests === 0 ? NaN : Math.round(sorted[Math.min(requests - 1, Math.ceil(q * requests) - 1)] * 100) / 100);
let checked = 0;
if (values['check-db'] !== undefined) {
  const { PeerReader } = await import(new URL('./sqlite-peer.mjs', import.meta.url).href);
  const peer = new PeerReader(values['check-db']);
  try {
    for (const { ask, body } of samples) {
      const want = peer.page(ask.id, ask.params);
      if (!want.equals(body)) throw new Error(`a page answered during the lane differs from the peer reader's: ${ask.id} ${JSON.stringify(ask.params)} (${body.length} vs ${want.length} bytes)`);
      checked++;
    }
  } finally {
    peer.close();
  }
  if ((byStatus[200] ?? 0) > 0 && checked === 0) throw new Error('no 200 answer was sampled: nothing checked');
}
const ok = byStatus[200] ?? 0;
process.stdout.write(
  `${JSON.stringify({
    generator: 'lean',
    connections,
    seconds,
    elapsed: Math.round(elapsed * 1000) / 1000,
    requests,
    rps: requests / seconds,
    okPerSec: ok / seconds,
    p50: pct(0.5),
    p99: pct(0.99),
    max: pct(1),
    byStatus,
    errors,
    timeouts: 0,
    bytes,
    generatorCpuMsPerRequest: requests === 0 ? NaN : Math.round(((cpu.user + cpu.system) / 1000 / requests) * 1000) / 1000,
    // Of which in the kernel (the loopback socket's receive copies, mostly).
    generatorSysMsPerRequest: requests === 0 ? NaN : Math.round((cpu.system / 1000 / requests) * 1000) / 1000,
    checked,
    // The lane's window in µs of CLOCK_MONOTONIC: a CPU profile of this process (--cpu-prof) cut to it.
    laneMonotonicUs: [Number(lane0 / 1000n), Number(lane1 / 1000n)],
  })}\n`,
);
process.exit(0);
