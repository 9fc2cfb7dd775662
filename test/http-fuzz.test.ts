/**
 * HTTP fuzzing (issue 16), against a real `session-pager serve` process over
 * raw sockets: random methods, paths, ids, query strings, headers, tokens,
 * bodies (events, random JSON, deep nesting, bytes, big bodies), content
 * codings (valid and broken) and framing. Every answer must be 2xx, 304 or
 * a 4xx in the SPEC's error shape (the code's own status), never a 5xx,
 * never silence; afterwards no file outside the data dir has changed (its
 * parent and the server's working directory are compared before and
 * after), the data dir holds only session files named by valid ids, and
 * every page of every session equals the reference reader's.
 *
 * CI runs SP_FUZZ_REQUESTS (default 3,000) requests; the long mode, by hand:
 *
 *   npm run build && SP_FUZZ_LONG=1 npx vitest run test/http-fuzz.test.ts
 *
 * runs 100,000 (SP_FUZZ_REQUESTS=N for any other count, SP_FUZZ_SEED=S to
 * replay a run; the seed is printed when a run fails).
 */
import { decompress as fzstdDecompress } from 'fzstd';
import { promises as fsp } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, constants as zc, deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../src/core/errors.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { openStore } from '../src/main/store.js';
import { rawExchange, rawRequestBytes, startServerProcess, type RawAnswer, type ServerProcess } from './helpers/server-process.js';
import { makeEvents, until } from './server-helpers.js';

const LONG = process.env.SP_FUZZ_LONG === '1';
const REQUESTS = Number(process.env.SP_FUZZ_REQUESTS ?? (LONG ? 100_000 : 3_000));
const SEED = process.env.SP_FUZZ_SEED === undefined ? undefined : Number(process.env.SP_FUZZ_SEED);
/** Requests in flight at once: below the server's page admission limit, so none is shed for load. */
const CONCURRENCY = 4;
const TOKEN = 'fuzz-token-5c1d9e';
const ORIGIN = 'http://ui.example';
const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

let parent: string;
let dataDir: string;
let cwd: string;
let server: ServerProcess;
let before: Map<string, string>;
let topLevelBefore: string[];
const nextSeq = new Map<string, number>();

/** Every file and folder under `root`, but `skip`, with its size and mtime. */
async function tree(root: string, skip: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (dir: string): Promise<void> => {
    for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (p === skip) continue;
      const st = await fsp.lstat(p);
      out.set(relative(root, p), `${e.isDirectory() ? 'dir' : st.size}:${e.isDirectory() ? '' : st.mtimeMs}`);
      if (e.isDirectory()) await walk(p);
    }
  };
  await walk(root);
  return out;
}

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'sp-fuzz-'));
  dataDir = join(parent, 'data');
  cwd = join(parent, 'cwd');
  await fsp.mkdir(cwd);
  await fsp.writeFile(join(parent, 'outside.txt'), 'must not change\n');
  const store = await openStore({ dataDir, workers: 1 });
  await store.create('alpha', { title: 'alpha' });
  for (let at = 0; at < 300; at += 100) await store.append('alpha', makeEvents(at, 100));
  await store.create('bin', { title: 'binary' }, { format: 'binary' });
  await store.append('bin', makeEvents(0, 120));
  await store.create('empty', {});
  await store.close();
  nextSeq.set('alpha', 300).set('bin', 120).set('empty', 0);
  before = await tree(parent, dataDir);
  topLevelBefore = (await fsp.readdir(dataDir)).sort();
  server = await startServerProcess({ dataDir, token: TOKEN, cwd, args: ['--workers', '2', '--cors-origin', ORIGIN] });
  await until('readiness', async () => (await rawExchange(server.port, 'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n')).answer?.status === 200, 60_000, 100);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (parent) await rm(parent, { recursive: true, force: true });
});

// ---------------------------------------------------------------- the requests

const KNOWN_IDS = ['alpha', 'bin', 'empty', 'ghost'];
const NEW_IDS = Array.from({ length: 12 }, (_, i) => `fuzz-${i}`);
const HOSTILE_IDS = ['..', 'a..b', '.x', '-x', '%2e%2e', '..%2F..%2Fetc', '%2Fetc%2Fpasswd', 'x'.repeat(129), 'y'.repeat(300), '%00', '%zz', '%C3%A9', 'a%20b', '~root', '*', 'CON', 'a%2Fb', '%252e%252e', 'nul.events', 'alpha.events'];

const idArb = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...KNOWN_IDS) },
  { weight: 2, arbitrary: fc.constantFrom(...NEW_IDS) },
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_IDS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,30}$/) },
);

const pathArb = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(fc.constantFrom('', '/page', '/page', '/follow', '/events'), idArb).map(([tail, id]) => `/v1/sessions/${id}${tail}`) },
  {
    weight: 4,
    arbitrary: fc.constantFrom('/v1/sessions', '/v1/openapi.json', '/metrics', '/healthz', '/livez', '/readyz', '/', '//', '/v1', '/v1/sessions/', '/v1/sessions//page', '/../../etc/passwd', '/v1/sessions/alpha/page/../../../x', '/v1/sessions/alpha/events/x', '*', '/V1/SESSIONS', '/v1/sessions/alpha/page/'),
  },
  { weight: 1, arbitrary: fc.array(fc.string({ maxLength: 8 }).map(encodeURIComponent), { minLength: 1, maxLength: 5 }).map((s) => `/${s.join('/')}`) },
);

const QUERY_NAMES = ['throughSeq', 'beforeSeq', 'maxMessages', 'maxBytes', 'format', 'lastEventId', 'x', 'maxmessages', ''];
const queryValueArb = fc.oneof(
  fc.nat({ max: 1200 }).map(String),
  fc.constantFrom('-1', '0', '01', '1e3', '1.5', '9007199254740991', '9007199254740992', '99999999999999999999', 'jsonl', 'binary', 'xml', '', ' '),
  fc.string({ maxLength: 8 }),
);
const queryArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 6,
    arbitrary: fc.array(fc.tuple(fc.constantFrom(...QUERY_NAMES), queryValueArb), { minLength: 1, maxLength: 4 }).map((ps) => `?${ps.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('?', '?%', '?%zz', '?&&', '?=', '?a=b=c', '?%00', '?+', '?%FF', '?maxMessages=%31') },
);

const METHODS = fc.oneof(
  { weight: 10, arbitrary: fc.constant('GET') },
  { weight: 2, arbitrary: fc.constant('HEAD') },
  { weight: 4, arbitrary: fc.constant('PUT') },
  { weight: 6, arbitrary: fc.constant('POST') },
  { weight: 2, arbitrary: fc.constantFrom('DELETE', 'PATCH', 'OPTIONS') },
  { weight: 1, arbitrary: fc.constantFrom('get', 'FOO', 'TRACE', 'PROPFIND', 'M-SEARCH', 'QUERY') },
);

const authArb = fc.oneof(
  { weight: 12, arbitrary: fc.constant(`Bearer ${TOKEN}`) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom(`Bearer ${TOKEN}x`, 'Bearer', `Basic ${TOKEN}`, `bearer  ${TOKEN}`, `Bearer ${'t'.repeat(3000)}`, `Bearer ${TOKEN} ${TOKEN}`, 'Bearer \u00e9') },
);

type BodyPlan =
  | { kind: 'none' }
  | { kind: 'append'; offset: number; count: number }
  | { kind: 'json'; value: unknown }
  | { kind: 'nested'; depth: number; shape: 'array' | 'object'; where: 'event' | 'header' | 'top' }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'big'; size: number }
  | { kind: 'text'; text: string };

const bodyArb: fc.Arbitrary<BodyPlan> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('append' as const), offset: fc.integer({ min: -2, max: 2 }), count: fc.integer({ min: 1, max: 40 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('json' as const), value: fc.jsonValue({ maxDepth: 4 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('nested' as const),
      depth: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1000, max: 60_000 })),
      shape: fc.constantFrom('array' as const, 'object' as const),
      where: fc.constantFrom('event' as const, 'header' as const, 'top' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bytes' as const), bytes: fc.uint8Array({ maxLength: 3000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('big' as const), size: fc.integer({ min: 100_000, max: 3_000_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('text' as const), text: fc.constantFrom('{', '{"events":', 'nul', '\u0000', '[]', '""', '{"events":null}', '{"__proto__":{"x":1}}', '{"events":[{"type":"x","seq":0,"time":0,"constructor":{"prototype":{}}}]}') }) },
);

const headerValueArb = fc.oneof(
  fc.string({ maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, '')),
  fc.constantFrom('', ' ', '\t', 'a'.repeat(2000), '"quoted"', 'x\u0001y', '\u00ff\u00fe'),
);

interface Plan {
  method: string;
  path: string;
  query: string;
  auth: string | undefined;
  contentType: string | undefined;
  contentEncoding: string | undefined;
  /** Encode the body as the header says (else the header lies). */
  encodeHonestly: boolean;
  acceptEncoding: string | undefined;
  extra: [string, string][];
  framing: 'length' | 'chunked' | 'short';
  body: BodyPlan;
}

const anyPlanArb: fc.Arbitrary<Plan> = fc.record({
  method: METHODS,
  path: pathArb,
  query: queryArb,
  auth: authArb,
  contentType: fc.option(fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'text/plain', 'application/x-www-form-urlencoded', 'application/json;;;', '', 'multipart/form-data', 'application/octet-stream'), { nil: undefined, freq: 4 }),
  contentEncoding: fc.option(fc.constantFrom('gzip', 'br', 'deflate', 'identity', 'gzip, br', 'x-gzip', 'GZIP', 'foo', 'zstd', 'gzip,'), { nil: undefined, freq: 1 }),
  encodeHonestly: fc.boolean(),
  acceptEncoding: fc.option(fc.constantFrom('br', 'gzip', 'deflate', 'zstd', '*', 'br;q=0, gzip', 'identity;q=0', 'garbage;;', 'gzip;q=abc'), { nil: undefined }),
  extra: fc.array(
    fc.oneof(
      fc.tuple(fc.constantFrom('X-Request-Id', 'Last-Event-ID', 'If-None-Match', 'Expect', 'Origin', 'Range', 'Accept', 'Cookie', 'Access-Control-Request-Method', 'Access-Control-Request-Headers', 'X-Forwarded-For', 'Connection'), headerValueArb),
      fc.tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/), headerValueArb),
    ),
    { maxLength: 4 },
  ),
  framing: fc.oneof({ weight: 10, arbitrary: fc.constant('length' as const) }, { weight: 2, arbitrary: fc.constant('chunked' as const) }, { weight: 1, arbitrary: fc.constant('short' as const) }),
  body: bodyArb,
});

/** Requests a client would send (right method, token and type), varied where the contract allows. */
const wellFormedArb: fc.Arbitrary<Plan> = fc
  .record({
    route: fc.constantFrom('page', 'page', 'page', 'head', 'info', 'catalog', 'follow', 'create', 'append', 'append', 'append', 'openapi'),
    id: fc.constantFrom('alpha', 'bin', 'empty', ...NEW_IDS),
    maxMessages: fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }),
    beforeSeq: fc.option(fc.nat({ max: 500 }), { nil: undefined }),
    maxBytes: fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined }),
    coding: fc.constantFrom(undefined, undefined, 'gzip', 'br', 'deflate', 'gzip, br'),
    honest: fc.boolean(),
    acceptEncoding: fc.option(fc.constantFrom('br', 'gzip', 'gzip, deflate, br', 'zstd', '*'), { nil: undefined }),
    format: fc.constantFrom(undefined, 'jsonl', 'binary'),
    body: fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('append' as const), offset: fc.constantFrom(0, 0, 0, -1, 1), count: fc.integer({ min: 1, max: 40 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('nested' as const), depth: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1000, max: 60_000 })), shape: fc.constantFrom('array' as const, 'object' as const), where: fc.constant('event' as const) }) },
    ),
    header: fc.oneof(
      fc.record({ kind: fc.constant('json' as const), value: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }) }),
      fc.record({ kind: fc.constant('nested' as const), depth: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1000, max: 60_000 })), shape: fc.constantFrom('array' as const, 'object' as const), where: fc.constant('header' as const) }),
    ),
    requestId: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
  })
  .map((w): Plan => {
    const q = (pairs: [string, number | string | undefined][]) => {
      const kept = pairs.filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`);
      return kept.length === 0 ? '' : `?${kept.join('&')}`;
    };
    const base: Plan = {
      method: 'GET',
      path: '/v1/sessions',
      query: '',
      auth: `Bearer ${TOKEN}`,
      contentType: undefined,
      contentEncoding: undefined,
      encodeHonestly: true,
      acceptEncoding: w.acceptEncoding,
      extra: w.requestId === undefined ? [] : [['X-Request-Id', w.requestId.replace(/[\r\n]/g, '')]],
      framing: 'length',
      body: { kind: 'none' },
    };
    const page = q([['maxMessages', w.maxMessages], ['beforeSeq', w.beforeSeq], ['maxBytes', w.maxBytes]]);
    switch (w.route) {
      case 'page':
        return { ...base, path: `/v1/sessions/${w.id}/page`, query: page };
      case 'head':
        return { ...base, method: 'HEAD', path: `/v1/sessions/${w.id}/page`, query: page };
      case 'info':
        return { ...base, path: `/v1/sessions/${w.id}` };
      case 'catalog':
        return base;
      case 'openapi':
        return { ...base, path: '/v1/openapi.json', auth: undefined };
      case 'follow':
        return { ...base, path: `/v1/sessions/${w.id}/follow`, query: q([['maxMessages', w.maxMessages]]) };
      case 'create':
        return { ...base, method: 'PUT', path: `/v1/sessions/${w.id}`, query: q([['format', w.format]]), contentType: 'application/json', contentEncoding: w.coding, encodeHonestly: w.honest || w.coding === undefined, body: w.header };
      case 'append':
        return { ...base, method: 'POST', path: `/v1/sessions/${w.id}/events`, contentType: 'application/json', contentEncoding: w.coding, encodeHonestly: w.honest || w.coding === undefined, body: w.body };
    }
  });

const planArb: fc.Arbitrary<Plan> = fc.oneof({ weight: 1, arbitrary: anyPlanArb }, { weight: 1, arbitrary: wellFormedArb });

function sessionOf(path: string): string | undefined {
  const m = /^\/v1\/sessions\/([^/?]+)/.exec(path);
  return m?.[1];
}

function nested(depth: number, shape: 'array' | 'object'): string {
  return shape === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

function bodyBytes(plan: Plan): Buffer | undefined {
  const b = plan.body;
  const id = sessionOf(plan.path) ?? 'alpha';
  switch (b.kind) {
    case 'none':
      return undefined;
    case 'append': {
      const from = Math.max(0, (nextSeq.get(id) ?? 0) + b.offset);
      return Buffer.from(JSON.stringify({ events: makeEvents(from, b.count) }));
    }
    case 'json':
      return Buffer.from(JSON.stringify(b.value) ?? 'null');
    case 'nested': {
      const deep = nested(b.depth, b.shape);
      const from = nextSeq.get(id) ?? 0;
      if (b.where === 'event') return Buffer.from(`{"events":[{"type":"x/deep","seq":${from},"time":1,"data":${deep}}]}`);
      if (b.where === 'header') return Buffer.from(`{"title":"deep","deep":${deep}}`);
      return Buffer.from(deep);
    }
    case 'bytes':
      return Buffer.from(b.bytes);
    case 'big':
      return Buffer.from(`{"events":[{"type":"x/big","seq":0,"time":1,"data":"${'z'.repeat(b.size)}"}]}`);
    case 'text':
      return Buffer.from(b.text);
  }
}

function encode(coding: string, body: Buffer): Buffer {
  const codings = coding
    .toLowerCase()
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '' && c !== 'identity');
  let out = body;
  for (const c of codings) {
    if (c === 'gzip' || c === 'x-gzip') out = gzipSync(out);
    else if (c === 'br') out = brotliCompressSync(out, { params: { [zc.BROTLI_PARAM_QUALITY]: 4 } });
    else if (c === 'deflate') out = deflateSync(out);
    else return body; // unknown coding: sent as it is
  }
  return out;
}

function requestBytes(plan: Plan): Buffer {
  let body = bodyBytes(plan);
  if (body !== undefined && plan.contentEncoding !== undefined && plan.encodeHonestly) body = encode(plan.contentEncoding, body);
  const lines: (string | Buffer)[] = [`${plan.method} ${plan.path}${plan.query} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (plan.auth !== undefined) lines.push(Buffer.from(`Authorization: ${plan.auth}`, 'latin1'));
  if (plan.contentType !== undefined) lines.push(`Content-Type: ${plan.contentType}`);
  if (plan.contentEncoding !== undefined) lines.push(`Content-Encoding: ${plan.contentEncoding}`);
  if (plan.acceptEncoding !== undefined) lines.push(`Accept-Encoding: ${plan.acceptEncoding}`);
  for (const [k, v] of plan.extra) {
    if (k.toLowerCase() === 'connection' || k.toLowerCase() === 'content-length' || k.toLowerCase() === 'transfer-encoding' || k.toLowerCase() === 'host') continue;
    lines.push(Buffer.from(`${k}: ${v}`, 'latin1'));
  }
  if (body === undefined) return rawRequestBytes(lines);
  if (plan.framing === 'chunked') {
    lines.push('Transfer-Encoding: chunked');
    const parts: Buffer[] = [];
    for (let at = 0; at < body.length; at += 65_536) {
      const c = body.subarray(at, at + 65_536);
      parts.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'));
    }
    parts.push(Buffer.from('0\r\n\r\n'));
    return rawRequestBytes(lines, Buffer.concat(parts));
  }
  // 'short': the declared length is less than what follows; the rest is a second (garbage) request.
  lines.push(`Content-Length: ${plan.framing === 'short' ? Math.floor(body.length / 2) : body.length}`);
  return rawRequestBytes(lines, body);
}

function decoded(a: RawAnswer): Buffer {
  const ce = (a.headers['content-encoding'] ?? '').toLowerCase();
  if (ce === 'zstd') return Buffer.from(fzstdDecompress(a.body));
  if (ce === 'gzip') return gunzipSync(a.body);
  if (ce === 'br') return brotliDecompressSync(a.body);
  if (ce === 'deflate') return inflateSync(a.body);
  return a.body;
}

/** Why an answer breaks the contract, or undefined when it keeps it. */
function violation(plan: Plan, a: RawAnswer | undefined): string | undefined {
  if (a === undefined) return 'no answer';
  if (a.status >= 500) return `status ${a.status}: ${a.body.toString('utf8').slice(0, 300)}`;
  if (a.status < 200 || (a.status >= 300 && a.status < 400 && a.status !== 304)) return `unexpected status ${a.status}`;
  if (!a.headers['x-request-id']) return 'no x-request-id';
  const isHead = plan.method === 'HEAD';
  if (a.status >= 400 && !isHead) {
    if (!/^application\/json/.test(a.headers['content-type'] ?? '')) return `error without a JSON body (${a.headers['content-type']})`;
    let j: any;
    try {
      j = JSON.parse(decoded(a).toString('utf8'));
    } catch (e) {
      return `error body is not JSON: ${(e as Error).message}`;
    }
    if (Object.keys(j).join() !== 'error' || typeof j.error?.code !== 'string' || typeof j.error?.message !== 'string') return `not the SPEC's error shape: ${JSON.stringify(j).slice(0, 200)}`;
    if ((ERROR_STATUS as Record<string, number>)[j.error.code] !== a.status) return `code ${j.error.code} answered with status ${a.status}`;
    if (a.status === 405 && !a.headers.allow) return '405 without Allow';
  }
  if (a.status >= 200 && a.status < 300 && !isHead && /^application\/json/.test(a.headers['content-type'] ?? '')) {
    try {
      JSON.parse(decoded(a).toString('utf8'));
    } catch (e) {
      return `2xx body is not JSON: ${(e as Error).message}`;
    }
  }
  return undefined;
}

const tally = new Map<number, number>();

async function send(plan: Plan): Promise<void> {
  const r = await rawExchange(server.port, requestBytes(plan), {
    timeoutMs: 40_000,
    head: plan.method === 'HEAD',
    headIsEnough: (status, headers) => status === 200 && /^text\/event-stream/.test(headers['content-type'] ?? ''),
  });
  const bad = violation(plan, r.answer);
  if (bad !== undefined) {
    const shown = { ...plan, body: plan.body.kind === 'bytes' || plan.body.kind === 'big' ? { kind: plan.body.kind } : plan.body };
    throw new Error(`${bad}\nrequest: ${JSON.stringify(shown).slice(0, 1500)}\nended: ${r.ended} ${r.error ?? ''}\nserver output (end): ${server.output().slice(-1500)}`);
  }
  const status = r.answer?.status ?? 0;
  tally.set(status, (tally.get(status) ?? 0) + 1);
  // Keep the seqs of successful appends, so later appends can continue them.
  const id = sessionOf(plan.path);
  if (status === 200 && plan.method === 'POST' && id !== undefined && r.answer !== undefined) {
    const next = JSON.parse(decoded(r.answer).toString('utf8')).nextSeq;
    if (typeof next === 'number') nextSeq.set(id, Math.max(nextSeq.get(id) ?? 0, next));
  }
  if (status === 201 && id !== undefined) nextSeq.set(id, 0);
}

// ---------------------------------------------------------------- the suite

describe('HTTP fuzzing', () => {
  it(
    `answers ${REQUESTS} random requests with 2xx or a SPEC-shaped 4xx, never a 5xx or silence`,
    async () => {
      const runs = Math.ceil(REQUESTS / CONCURRENCY);
      const started = Date.now();
      await fc.assert(
        fc.asyncProperty(fc.array(planArb, { minLength: CONCURRENCY, maxLength: CONCURRENCY }), async (plans) => {
          await Promise.all(plans.map(send));
        }),
        { numRuns: runs, endOnFailure: true, ...(SEED === undefined ? {} : { seed: SEED }) },
      );
      const took = ((Date.now() - started) / 1000).toFixed(1);
      process.stderr.write(`http-fuzz: ${runs * CONCURRENCY} requests in ${took} s; statuses ${JSON.stringify(Object.fromEntries([...tally].sort((a, b) => a[0] - b[0])))}\n`);
      // The mix reached past the error paths: pages served, appends and creates accepted.
      expect(tally.get(200) ?? 0).toBeGreaterThan(REQUESTS / 10);
      expect(tally.get(201) ?? 0).toBeGreaterThan(0);
      expect(tally.get(400) ?? 0).toBeGreaterThan(REQUESTS / 20);
    },
    REQUESTS * 200 + 120_000,
  );

  it('touched no file outside the data dir; the data dir holds only session files with valid ids', async () => {
    expect(await tree(parent, dataDir)).toEqual(before);
    expect((await fsp.readdir(dataDir)).sort()).toEqual(topLevelBefore);
    const files = await tree(dataDir, '');
    for (const rel of files.keys()) {
      const parts = rel.split('/');
      expect(parts[0], rel).toBe('sessions');
      if (parts.length === 1) continue;
      if (parts[1] === 'index') {
        if (parts.length === 2) continue;
        const id = parts[2]!.replace(/\.(index\.json|entries\.jsonl)$/, '');
        expect(ID_RE.test(id) && !id.includes('..'), rel).toBe(true);
      } else {
        const name = parts[1]!;
        const id = name.replace(/\.(events|lock)$/, '').replace(/^\.|\.tmp.*$|\.create-.*$/g, '');
        expect(parts.length, rel).toBe(2);
        expect(ID_RE.test(id) || /^\./.test(name), rel).toBe(true);
      }
    }
  });

  it('is still up, and every page of every session equals the reference reader\'s', async () => {
    const auth = `Authorization: Bearer ${TOKEN}`;
    const get = async (path: string) => {
      const r = await rawExchange(server.port, rawRequestBytes([`GET ${path} HTTP/1.1`, 'Host: x', auth, 'Connection: close']));
      expect(r.answer, path).toBeDefined();
      return { status: r.answer!.status, json: JSON.parse(r.answer!.body.toString('utf8')) };
    };
    expect((await get('/healthz')).status).toBe(200);
    const catalog = await get('/v1/sessions');
    expect(catalog.status).toBe(200);
    // Requests, however odd, never damage a session.
    expect(catalog.json.sessions.filter((s: { status: string }) => s.status !== 'ok')).toEqual([]);
    const ids: string[] = catalog.json.sessions.map((s: { id: string }) => s.id);
    expect(ids).toEqual(expect.arrayContaining(['alpha', 'bin', 'empty']));
    let pages = 0;
    for (const id of ids) {
      const log = await readWholeLog(join(dataDir, 'sessions', `${id}.events`));
      for (const maxMessages of [1, 7, 50]) {
        const first = await get(`/v1/sessions/${id}/page?maxMessages=${maxMessages}`);
        expect(first.status, id).toBe(200);
        expect(first.json, `${id} newest page`).toEqual(referencePage(log, id, { maxMessages }));
        const throughSeq: number = first.json.throughSeq;
        let page = first.json;
        pages++;
        while (page.hasMore) {
          const beforeSeq: number = page.fromSeq;
          const url = `/v1/sessions/${id}/page?maxMessages=${maxMessages}&throughSeq=${throughSeq}&beforeSeq=${beforeSeq}`;
          const next = await get(url);
          expect(next.status, url).toBe(200);
          page = next.json;
          expect(page, url).toEqual(referencePage(log, id, { maxMessages, throughSeq, beforeSeq }));
          pages++;
        }
      }
    }
    expect(pages).toBeGreaterThan(10);
  }, LONG ? 1_800_000 : 300_000);
});
