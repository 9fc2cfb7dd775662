#!/usr/bin/env node
// The SQLite peer over HTTP (issue 15): what one would build instead of
// session-pager, served the plain way. node:http on the main thread, the
// pages built by two worker threads with a better-sqlite3 connection each
// (peer-worker.mjs; SQLite calls are synchronous, so this is the peer's
// page pool, as session-pager has two page workers). It speaks the part of
// the SPEC the bench and `session-pager loadtest --scenario random` use:
//
//   GET /v1/sessions                     catalog: {sessions:[{id,status,lastSeq,nextSeq}]}
//   GET /v1/sessions/:id/page?…          a page (SPEC sections 4-5), the service's bytes
//   GET /metrics                         process_resident_memory_bytes (the harness's RSS)
//   GET /healthz, /livez, /readyz
//
// with the bearer token, the SPEC's error bodies, and zstd/gzip/br by
// Accept-Encoding (the service's negotiation and levels; compressed in the
// worker). The database is read-only here: it is loaded by the bench.
//
//   node bench/peer-server.mjs --db FILE [--port 0] [--token T] [--workers 2]
//
// Prints `listening on http://127.0.0.1:PORT` once it accepts requests.
import { createServer } from 'node:http';
import { parseScriptArgs } from './args.mjs';
import { Worker } from 'node:worker_threads';
import { openPeer } from './sqlite-peer.mjs';

const { values } = parseScriptArgs(import.meta.url, {
  options: {
    db: { type: 'string' },
    port: { type: 'string', default: '0' },
    token: { type: 'string', default: process.env.SESSION_PAGER_TOKEN },
    workers: { type: 'string', default: '2' },
  },
});
if (values.db === undefined) {
  process.stderr.write('peer-server: --db FILE is required\n');
  process.exit(2);
}
const { negotiate } = await import(new URL('../dist/main/server/page-encoding.js', import.meta.url).href);

// The catalog: read once (the bench's databases do not change while served).
const sessions = new Map();
{
  const db = openPeer(values.db, { readonly: true });
  for (const { id, next_seq: next } of db.prepare('SELECT id, next_seq FROM sessions ORDER BY id').iterate()) sessions.set(id, next);
  db.close();
}
const catalog = Buffer.from(JSON.stringify({ sessions: [...sessions].map(([id, next]) => ({ id, status: 'ok', lastSeq: next - 1, nextSeq: next })) }));

// The pool: each page goes to the worker with the fewest pages outstanding.
const pool = Array.from({ length: Number(values.workers) }, () => {
  const w = new Worker(new URL('./peer-worker.mjs', import.meta.url), { workerData: { dbPath: values.db } });
  const slot = { w, busy: 0 };
  w.on('message', (m) => {
    slot.busy--;
    const r = waiting.get(m.id);
    waiting.delete(m.id);
    m.error === undefined ? r.resolve(m) : r.reject(new Error(m.error));
  });
  w.on('error', (err) => {
    process.stderr.write(`peer-server: worker failed: ${err.stack ?? err}\n`);
    process.exit(1);
  });
  return slot;
});
const waiting = new Map();
let nextId = 0;
function pageFromPool(page, encoding) {
  let slot = pool[0];
  for (const s of pool) if (s.busy < slot.busy) slot = s;
  slot.busy++;
  return new Promise((resolve, reject) => {
    const id = nextId++;
    waiting.set(id, { resolve, reject });
    slot.w.postMessage({ id, page, body: true, encoding });
  });
}

class HttpError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** A non-negative safe integer from the query, or invalid_request (SPEC section 5). */
function intParam(q, name, min = 0, max = Number.MAX_SAFE_INTEGER) {
  const raw = q.get(name);
  if (raw === null) return undefined;
  if (!/^\d{1,16}$/.test(raw)) throw new HttpError(400, 'invalid_request', `${name} must be an integer in [${min}, ${max}]`);
  const n = Number(raw);
  if (n < min || n > max) throw new HttpError(400, 'invalid_request', `${name} must be an integer in [${min}, ${max}]`);
  return n;
}

function pageParams(q, next) {
  const params = {};
  const through = intParam(q, 'throughSeq');
  const before = intParam(q, 'beforeSeq');
  const max = intParam(q, 'maxMessages', 1, 1000);
  if (through !== undefined) {
    if (through > next - 1) throw new HttpError(400, 'invalid_request', `throughSeq ${through} is past the last committed seq ${next - 1}`);
    params.throughSeq = through;
  }
  if (before !== undefined) params.beforeSeq = before;
  if (max !== undefined) params.maxMessages = max;
  if (q.has('maxBytes')) throw new HttpError(400, 'invalid_request', 'maxBytes is not supported by the peer');
  return params;
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length, ...headers });
  res.end(body);
}
function sendError(res, err) {
  const status = err instanceof HttpError ? err.status : 500;
  const code = err instanceof HttpError ? err.code : 'internal';
  send(res, status, Buffer.from(JSON.stringify({ error: { code, message: String(err.message ?? err) } })));
}

const token = values.token;
async function handle(req, res) {
  const url = new URL(req.url ?? '/', 'http://peer');
  const path = url.pathname;
  if (path === '/healthz' || path === '/livez' || path === '/readyz') return send(res, 200, Buffer.from('{"status":"ok"}'));
  if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) throw new HttpError(401, 'unauthorized', 'a valid bearer token is required');
  if (req.method !== 'GET') throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed here`);
  if (path === '/metrics') {
    const text = `# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes ${process.memoryUsage.rss()}\n`;
    return send(res, 200, Buffer.from(text), { 'content-type': 'text/plain; version=0.0.4' });
  }
  if (path === '/v1/sessions') return send(res, 200, catalog);
  const m = /^\/v1\/sessions\/([^/]+)\/page$/.exec(path);
  if (m === null) throw new HttpError(404, 'not_found', `no route ${path}`);
  const id = decodeURIComponent(m[1]);
  const next = sessions.get(id);
  if (next === undefined) throw new HttpError(404, 'session_not_found', `no session ${id}`);
  const params = pageParams(url.searchParams, next);
  const encoding = negotiate(req.headers['accept-encoding']);
  const r = await pageFromPool({ id, params }, encoding ?? undefined);
  const body = Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength);
  send(res, 200, body, encoding === null ? { vary: 'accept-encoding' } : { vary: 'accept-encoding', 'content-encoding': encoding });
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  handle(req, res).catch((err) => sendError(res, err));
});
server.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`peer-server listening on http://127.0.0.1:${server.address().port} (${pool.length} workers, ${sessions.size} sessions)\n`);
});
const stop = () => {
  server.close();
  server.closeAllConnections?.();
  Promise.all(pool.map((s) => s.w.terminate())).then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
