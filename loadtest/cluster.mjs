#!/usr/bin/env node
/**
 * One writer and two readers, three `session-pager serve` processes on
 * different loopback ports over the same storage (a shared data directory,
 * or an S3 bucket with --store), follow across them by Redis (--redis):
 *
 *   1. appends go through the writer; after every append each reader's
 *      pages (random maxMessages / throughSeq / beforeSeq) must equal the
 *      reference reader's page of the events acknowledged so far, and a
 *      follower (SSE) on each reader must get every event once, in order;
 *      the time from an append's acknowledgment to its last event reaching
 *      reader B's follower is the follow latency;
 *   2. reader A is killed (SIGKILL) and started again; its follower resumes
 *      with Last-Event-ID: nothing lost, nothing twice;
 *   3. an append through reader A while the writer holds the session is
 *      refused with session_busy (a second writer is fenced);
 *   4. the writer is killed (SIGKILL) with an append in flight and started
 *      again: every acknowledged event is readable from both readers (the
 *      one in flight is there whole or not at all), and appends go on;
 *   5. the end: every reader's pages walked from the tail give back every
 *      event exactly once.
 *
 *   npm run build && node loadtest/cluster.mjs [--appends 300] [--batch 12]
 *        [--interval-ms 20] [--store s3://bucket/prefix] [--redis URL] [--json]
 *
 * Without --redis it starts its own redis-server (scripts/services.mjs);
 * without --store the processes share a temp data directory. Everything it
 * starts is stopped and removed at the end. Prints the figures (latency
 * p50/p99/max from acknowledgment and from sending, pages checked) and
 * exits non-zero when any check failed. The same run, smaller, is
 * test/cluster.test.ts; `runCluster` is its entry point.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { parseScriptArgs } from '../bench/args.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'session-pager.js');
const TOKEN = 'cluster-token-0123456789';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* ------------------------------------------------------------ events */

const { mulberry32 } = await import(new URL('../dist/main/gen/prng.js', import.meta.url).href);

/**
 * An endless, realistic event stream (seeded: the run is reproducible by --seed): turns of a user message, a streamed
 * answer (a run of text deltas, sometimes reasoning deltas first) and the
 * assistant message that closes it. Batches cut it anywhere, so runs span
 * appends as they do live.
 */
export function eventStream(seed = 1) {
  const rand = mulberry32(seed);
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const words = ['alpha', 'beta', 'gamma', 'delta', 'tool', 'page', 'seq', 'frame', 'index', 'cluster', 'redis', 'gateway'];
  const text = (n) => Array.from({ length: n }, () => words[int(0, words.length - 1)]).join(' ');
  let seq = 0;
  let time = 1_700_000_000_000;
  let turn = 0;
  const queue = [];
  const ev = (type, data) => ({ type, seq: seq++, time: (time += int(0, 40)), data });
  function refill() {
    turn++;
    queue.push(() => ev('user/message', { text: text(int(3, 20)) }));
    if (rand() < 0.3) for (let i = int(3, 15); i > 0; i--) queue.push(() => ev('assistant/chunk', { turn, step: 0, chunk: { type: 'reasoning-delta', index: 0, text: ` ${text(1)}` } }));
    for (let i = int(1, 60); i > 0; i--) queue.push(() => ev('assistant/chunk', { turn, step: 0, chunk: { type: 'text-delta', index: 1, text: ` ${text(int(1, 2))}` } }));
    queue.push(() => ev('assistant/message', { text: text(int(5, 30)) }));
  }
  const back = [];
  return {
    next(n) {
      const out = back.splice(0, n);
      while (out.length < n) {
        if (queue.length === 0) refill();
        out.push(queue.shift()());
      }
      return out;
    },
    /** Give back events taken but never stored (an append lost with its writer): they are sent again, as a client retries. */
    giveBack(events) {
      back.unshift(...events);
    },
  };
}

/* ------------------------------------------------------------ processes */

/** `session-pager serve` on a free port over `storeArgs`; resolves once /readyz is 200. */
export async function startServer({ name, storeArgs, redisUrl, env = {}, workers = 1 }) {
  const child = spawn(process.execPath, [BIN, 'serve', ...storeArgs, '--port', '0', '--workers', String(workers), '--log-level', 'warn', ...(redisUrl ? ['--redis', redisUrl] : [])], {
    env: { ...process.env, ...env, SESSION_PAGER_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  const url = await new Promise((ok, fail) => {
    const t = setTimeout(() => fail(new Error(`${name}: no banner after 30 s:\n${out}`)), 30_000);
    const look = () => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(t);
        ok(m[1]);
      }
    };
    child.stderr.on('data', look);
    exited.then(({ code, signal }) => {
      clearTimeout(t);
      fail(new Error(`${name} exited (${code ?? signal}) before listening:\n${out}`));
    });
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await fetch(`${url}/readyz`).catch(() => null);
    if (r?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`${name} not ready after 60 s:\n${out}`);
    await sleep(50);
  }
  return {
    name,
    url,
    child,
    output: () => out,
    /** SIGKILL: no shutdown, no flush. */
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    /** SIGTERM (graceful), SIGKILL after 10 s. */
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}

const auth = { authorization: `Bearer ${TOKEN}` };

/**
 * One request, as a well-behaved client makes it: a 503 (the server sheds
 * load, say while a fresh process warms up on a busy machine) is tried
 * again after its Retry-After (at most 1 s here), up to 30 times.
 */
async function api(server, method, path, body) {
  for (let attempt = 1; ; attempt++) {
    const r = await fetch(`${server.url}${path}`, {
      method,
      headers: { ...auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = { raw: text };
    }
    if (r.status === 503 && attempt < 30) {
      shed++;
      await sleep(Math.min(1_000, 1_000 * Number(r.headers.get('retry-after') ?? 1)));
      continue;
    }
    return { status: r.status, json };
  }
}

/** 503s met and retried (reported). */
let shed = 0;

/* ------------------------------------------------------------ follow (SSE) */

/**
 * An SSE follower of one session on one server, from `lastEventId` on:
 * records every event's seq and arrival time, and fails on a gap or a
 * duplicate. `reconnect(server)` resumes on another (or a restarted) server
 * with Last-Event-ID, as a browser's EventSource does.
 */
class Follower {
  constructor(name, id) {
    this.name = name;
    this.id = id;
    this.next = 0;
    this.arrived = new Map(); // seq -> performance.now()
    this.events = [];
    this.errors = [];
    /** Streams that ended without our asking (the server was killed). */
    this.drops = 0;
    this.abort = null;
    /** The server followed now (null when closed). */
    this.server = null;
    this.waiters = [];
  }

  async connect(server) {
    this.abort?.abort();
    this.server = server;
    const ac = new AbortController();
    this.abort = ac;
    const r = await fetch(`${server.url}/v1/sessions/${this.id}/follow`, { headers: { ...auth, 'last-event-id': String(this.next - 1) }, signal: ac.signal });
    if (r.status !== 200) throw new Error(`${this.name}: follow answered ${r.status}: ${await r.text()}`);
    void this.read(r.body.getReader(), ac).then(
      () => {
        if (!ac.signal.aborted) this.drops++;
      },
      () => {
        if (!ac.signal.aborted) this.drops++;
      },
    );
  }

  async read(reader, ac) {
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done || ac.signal.aborted) return;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) !== -1) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let event = 'message';
        let data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data += line.slice(6);
        }
        if (event === 'event') this.onEvent(JSON.parse(data));
        else if (event === 'error') this.errors.push(`${this.name}: error event ${data}`);
      }
    }
  }

  onEvent(e) {
    const now = performance.now();
    if (e.seq !== this.next) {
      this.errors.push(`${this.name}: got seq ${e.seq} where ${this.next} was due (${e.seq < this.next ? 'duplicate' : 'gap'})`);
      return;
    }
    this.next++;
    this.arrived.set(e.seq, now);
    this.events.push(e);
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once every event below `seq` has arrived (or after `timeoutMs`, with an error recorded). */
  async until(seq, timeoutMs = 15_000) {
    const deadline = Date.now() + timeoutMs;
    while (this.next < seq) {
      if (Date.now() > deadline) {
        this.errors.push(`${this.name}: has ${this.next} events after ${timeoutMs} ms, ${seq} were due`);
        return;
      }
      await Promise.race([new Promise((r) => this.waiters.push(r)), sleep(50)]);
    }
  }

  close() {
    this.abort?.abort();
    this.server = null;
  }
}

/* ------------------------------------------------------------ checks */

function pct(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function summary(values) {
  const s = [...values].sort((a, b) => a - b);
  return { n: s.length, p50: pct(s, 50), p99: pct(s, 99), max: s.at(-1) ?? NaN };
}

/* ------------------------------------------------------------ the run */

/**
 * The whole scenario. `storeArgs`: the serve flags naming the shared storage
 * (['--data', dir] or ['--store', 's3://…']); `redisUrl`; `appends` per
 * phase split as 50% / 20% / 30% around the two kills. Returns the figures
 * and `failures` (empty when every check held).
 */
export async function runCluster({ storeArgs, redisUrl, appends = 300, batch = 12, intervalMs = 20, seed = 1, env = {}, log = () => undefined, pageChecks = 2 }) {
  const dist = await import(new URL('../dist/main/index.js', import.meta.url).href);
  shed = 0;
  const { referencePage, expandRecords } = dist;
  const failures = [];
  const fail = (msg) => {
    failures.push(msg);
    log(`FAIL ${msg}`);
  };
  const id = `cluster-${seed}`;
  const stream = eventStream(seed);
  const all = []; // every acknowledged (or found durable) event, in seq order
  const ackLatency = [];
  const sendLatency = [];
  let pages = 0;
  let retried = null;
  const rand = mulberry32(seed ^ 0x5eed);
  const servers = [];
  const followers = [];
  // Over a remote store each process keeps its own local directory (a writer's durable tail lives
  // there until sealed): one per role, the restarted writer's the same as the killed one's.
  const remote = storeArgs.includes('--store');
  const localRoot = remote ? mkdtempSync(join(tmpdir(), 'sp-cluster-local-')) : null;
  const start = async (name, role) => {
    const args = localRoot === null ? storeArgs : [...storeArgs, '--data', join(localRoot, role)];
    const s = await startServer({ name, storeArgs: args, redisUrl, env });
    servers.push(s);
    return s;
  };

  const refLog = () => ({ header: {}, events: all, frames: [], frameOf: new Int32Array(0) });
  async function checkPage(reader, params) {
    const last = all.length - 1;
    const qs = new URLSearchParams(Object.entries(params).map(([a, b]) => [a, String(b)]));
    const r = await api(reader, 'GET', `/v1/sessions/${id}/page?${qs}`);
    pages++;
    if (r.status !== 200) {
      fail(`${reader.name}: page ${qs} answered ${r.status} ${JSON.stringify(r.json)}`);
      return;
    }
    // An unpinned page is cut at the last acknowledged event: the reader sees every acknowledged append.
    const want = referencePage(refLog(), id, { ...params, throughSeq: params.throughSeq ?? last });
    if (!isDeepStrictEqual(r.json, JSON.parse(JSON.stringify(want)))) {
      fail(`${reader.name}: page ${qs} differs from the reference (throughSeq ${r.json.throughSeq} vs ${want.throughSeq}, [${r.json.fromSeq}, ${r.json.toSeq}) vs [${want.fromSeq}, ${want.toSeq}))`);
    }
  }

  /**
   * Pages from `reader` after an append. First one pinned at the last
   * acknowledged seq, asked at once: a client that knows a seq (from the
   * writer's acknowledgment) gets it from any reader (read-your-writes).
   * Then, once the reader's own follower has the append (the reader has
   * heard of it: its unpinned cut may lag by the freshness window until
   * then, docs/s3-layout.md), an unpinned page and random pinned ones.
   */
  async function checkPages(reader) {
    const last = all.length - 1;
    if (last >= 0) await checkPage(reader, { maxMessages: 1 + Math.floor(rand() * 12), throughSeq: last });
    for (const f of followers) if (f.server === reader) await f.until(last + 1);
    for (let k = 0; k < pageChecks; k++) {
      const params = { maxMessages: 1 + Math.floor(rand() * 12) };
      const pinned = k > 0 && last >= 0;
      if (pinned) params.throughSeq = Math.floor(rand() * (last + 1));
      if (pinned && rand() < 0.5) params.beforeSeq = Math.floor(rand() * (params.throughSeq + 2));
      await checkPage(reader, params);
    }
  }

  async function appendOnce(writer, readers, { measure = true, retry = false } = {}) {
    const events = stream.next(batch);
    const t0 = performance.now();
    const r = await api(writer, 'POST', `/v1/sessions/${id}/events`, { events });
    const tAck = performance.now();
    if (retry && r.status === 409 && r.json?.error?.code === 'seq_conflict' && r.json.error.expectedSeq === events[0].seq + events.length) {
      // The retried batch was stored before the writer died (its durable tail, found when the restarted
      // writer opened the session): a client learns so from seq_conflict. The pages checked from here
      // on prove the stored events are these.
      all.push(...events);
      retried = 'stored before the kill (seq_conflict on retry)';
      return true;
    }
    if (retry) retried = r.status === 200 ? 'lost with the writer, appended again' : `answered ${r.status}`;
    if (r.status !== 200) {
      fail(`append at ${events[0].seq} answered ${r.status} ${JSON.stringify(r.json)}`);
      return false;
    }
    all.push(...events);
    const lastSeq = events.at(-1).seq;
    const b = followers[1];
    await b.until(lastSeq + 1);
    if (measure && b.arrived.has(lastSeq)) {
      ackLatency.push(Math.max(0, b.arrived.get(lastSeq) - tAck));
      sendLatency.push(b.arrived.get(lastSeq) - t0);
    }
    for (const reader of readers) await checkPages(reader);
    if (intervalMs > 0) await sleep(intervalMs);
    return true;
  }

  const t0 = Date.now();
  try {
    let writer = await start('writer', 'writer');
    let a = await start('reader-A', 'reader-A');
    const b = await start('reader-B', 'reader-B');
    log(`writer ${writer.url}, reader A ${a.url}, reader B ${b.url}, storage ${storeArgs.join(' ')}, redis ${redisUrl}`);
    const created = await api(writer, 'PUT', `/v1/sessions/${id}`, { type: 'session', version: 1, id, createdAt: 1_700_000_000_000, title: 'cluster run' });
    if (created.status !== 200 && created.status !== 201) throw new Error(`create answered ${created.status} ${JSON.stringify(created.json)}`);
    const fa = new Follower('follower on A', id);
    const fb = new Follower('follower on B', id);
    followers.push(fa, fb);
    await fa.connect(a);
    await fb.connect(b);

    // 1. Appends through the writer; pages from both readers after each.
    const n1 = Math.round(appends * 0.5);
    for (let i = 0; i < n1; i++) await appendOnce(writer, [a, b]);
    log(`phase 1: ${n1} appends, ${all.length} events`);

    // 2. Reader A killed; appends go on; A restarted, its follower resumes.
    await a.kill();
    fa.close();
    const n2 = Math.round(appends * 0.2);
    for (let i = 0; i < n2; i++) await appendOnce(writer, [b]);
    a = await start('reader-A (restarted)', 'reader-A');
    await fa.connect(a);
    await fa.until(all.length);
    await checkPages(a);
    log(`phase 2: reader A killed and restarted, ${n2} appends meanwhile; its follower has ${fa.next} of ${all.length}`);

    // 3. A second writer is fenced.
    const busy = await api(a, 'POST', `/v1/sessions/${id}/events`, { events: stream.next(0).concat([{ type: 'custom/probe', seq: all.length, time: 1, data: {} }]) });
    const fenced = busy.status === 409 && busy.json?.error?.code === 'session_busy';
    if (!fenced) fail(`an append through reader A while the writer holds the session answered ${busy.status} ${JSON.stringify(busy.json)}, not 409 session_busy`);
    log(`phase 3: a second writer got ${busy.status} ${busy.json?.error?.code}`);

    // 4. Writer killed with an append in flight, then restarted.
    const inFlight = stream.next(batch);
    const pending = fetch(`${writer.url}/v1/sessions/${id}/events`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ events: inFlight }) }).then(
      (r) => r.status,
      () => 'killed',
    );
    await sleep(Math.floor(rand() * 4));
    await writer.kill();
    const inFlightStatus = await pending;
    writer = await start('writer (restarted)', 'writer');
    // The writer's own view is the session's end (over S3 its durable tail is local to it until published).
    const info = await api(writer, 'GET', `/v1/sessions/${id}`);
    const nextSeq = info.json?.nextSeq;
    const acked = all.length + (inFlightStatus === 200 ? inFlight.length : 0);
    if (typeof nextSeq !== 'number' || (nextSeq !== all.length && nextSeq !== all.length + inFlight.length)) {
      fail(`after the writer's kill the session's next seq is ${nextSeq} (${JSON.stringify(info.json)}); acknowledged before ${all.length}, in flight ${inFlight.length}`);
    } else if (nextSeq < acked) fail(`an acknowledged append is missing after the writer's restart (next seq ${nextSeq}, acknowledged ${acked})`);
    else if (nextSeq > all.length) all.push(...inFlight); // durable though unacknowledged: whole
    else stream.giveBack(inFlight); // lost with the writer: sent again, as a client retries
    // Every acknowledged event is readable on both readers; the unacknowledged one may show only
    // once the restarted writer publishes (its next append): how long the readers lag is reported.
    const tRestart = performance.now();
    let readersCaughtUpMs = null;
    for (const deadline = Date.now() + 5_000; Date.now() < deadline; await sleep(20)) {
      const ends = await Promise.all([a, b].map(async (r) => (await api(r, 'GET', `/v1/sessions/${id}`)).json?.nextSeq));
      if (ends.some((e) => typeof e !== 'number' || e < acked)) {
        if (Date.now() + 20 >= deadline) fail(`after the writer's restart the readers show next seqs ${ends.join(', ')}; ${acked} were acknowledged`);
        continue;
      }
      if (ends.every((e) => e === all.length)) {
        readersCaughtUpMs = performance.now() - tRestart;
        break;
      }
    }
    await fa.until(acked);
    await fb.until(acked);
    if (readersCaughtUpMs !== null) {
      await fa.until(all.length);
      await fb.until(all.length);
      for (const reader of [a, b]) await checkPages(reader);
    }
    log(`phase 4: writer killed with an append in flight (${inFlightStatus}); after its restart the session's next seq is ${nextSeq}; readers ${readersCaughtUpMs === null ? 'show the unacknowledged batch after the next append' : `caught up in ${readersCaughtUpMs.toFixed(0)} ms`}`);
    const n3 = appends - n1 - n2;
    for (let i = 0; i < n3; i++) await appendOnce(writer, [a, b], { retry: i === 0 && nextSeq === all.length && inFlightStatus !== 200 });
    log(`phase 4: ${n3} more appends through the restarted writer, ${all.length} events`);

    // 5. Every reader's pages, walked from the tail, give back every event once.
    for (const reader of [a, b]) {
      const seen = [];
      let before;
      for (let guard = 0; guard < 100_000; guard++) {
        const qs = new URLSearchParams({ maxMessages: '25', throughSeq: String(all.length - 1), ...(before !== undefined ? { beforeSeq: String(before) } : {}) });
        const r = await api(reader, 'GET', `/v1/sessions/${id}/page?${qs}`);
        pages++;
        if (r.status !== 200) {
          fail(`${reader.name}: walk page ${qs} answered ${r.status}`);
          break;
        }
        seen.unshift(...expandRecords(r.json.records));
        if (!r.json.hasMore) break;
        before = r.json.fromSeq;
      }
      if (!isDeepStrictEqual(seen, JSON.parse(JSON.stringify(all)))) fail(`${reader.name}: the pages walked from the tail do not give back the ${all.length} events (got ${seen.length})`);
    }
    await fa.until(all.length);
    await fb.until(all.length);
    // Only reader A was killed under its follower.
    if (fb.drops !== 0) fail(`the follower on reader B lost its stream ${fb.drops} times (no one killed reader B)`);
    if (fa.drops > 1) fail(`the follower on reader A lost its stream ${fa.drops} times (reader A was killed once)`);
    for (const f of followers) {
      for (const e of f.errors) fail(e);
      if (!isDeepStrictEqual(f.events, JSON.parse(JSON.stringify(all)))) fail(`${f.name}: did not get exactly the ${all.length} events in order (got ${f.events.length})`);
    }
    return {
      ok: failures.length === 0,
      failures,
      events: all.length,
      appends,
      batch,
      pages,
      fenced,
      writerKill: { inFlightStatus: String(inFlightStatus), nextSeqAfter: nextSeq, readersCaughtUpMs, retried },
      followAfterAckMs: summary(ackLatency),
      followAfterSendMs: summary(sendLatency),
      shedRetries: shed,
      seconds: (Date.now() - t0) / 1000,
    };
  } finally {
    for (const f of followers) f.close();
    await Promise.all(servers.map((s) => s.stop()));
    if (localRoot !== null) rmSync(localRoot, { recursive: true, force: true });
  }
}

/* ------------------------------------------------------------ CLI */

async function main() {
  const { values } = parseScriptArgs(import.meta.url, {
    options: {
      appends: { type: 'string', default: '300' },
      batch: { type: 'string', default: '12' },
      'interval-ms': { type: 'string', default: '20' },
      store: { type: 'string' },
      redis: { type: 'string' },
      seed: { type: 'string', default: '1' },
      json: { type: 'boolean', default: false },
    },
  });
  const int = (v, lo, hi, name) => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < lo || n > hi) throw new Error(`--${name} must be an integer in [${lo}, ${hi}]`);
    return n;
  };
  const appends = int(values.appends, 10, 5_000, 'appends');
  const batch = int(values.batch, 1, 1_000, 'batch');
  const intervalMs = int(values['interval-ms'], 0, 10_000, 'interval-ms');
  const cleanup = [];
  try {
    let redisUrl = values.redis;
    if (redisUrl === undefined) {
      const { startRedis, stopAll } = await import(new URL('../scripts/services.mjs', import.meta.url).href);
      const state = mkdtempSync(join(tmpdir(), 'sp-cluster-redis-'));
      cleanup.push(() => stopAll(state));
      redisUrl = (await startRedis(state)).url;
    }
    let storeArgs;
    if (values.store !== undefined) storeArgs = ['--store', values.store];
    else {
      const dir = mkdtempSync(join(tmpdir(), 'sp-cluster-data-'));
      cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
      storeArgs = ['--data', dir];
    }
    const res = await runCluster({ storeArgs, redisUrl, appends, batch, intervalMs, seed: int(values.seed, 0, 2 ** 31, 'seed'), log: values.json ? () => undefined : (m) => process.stderr.write(`${m}\n`) });
    if (values.json) process.stdout.write(JSON.stringify(res, null, 2) + '\n');
    else {
      const f = (s) => `p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms (n=${s.n})`;
      process.stdout.write(
        [
          `${res.ok ? 'OK' : 'FAILED'}: ${res.events} events in ${res.appends} appends of ${res.batch}, ${res.pages} pages checked against the reference, ${res.seconds.toFixed(1)} s (${res.shedRetries} requests shed with 503 and retried)`,
          `follow on reader B, from the append's acknowledgment: ${f(res.followAfterAckMs)}`,
          `follow on reader B, from sending the append:         ${f(res.followAfterSendMs)}`,
          `second writer fenced: ${res.fenced}; writer killed with an append in flight (${res.writerKill.inFlightStatus}), next seq after restart ${res.writerKill.nextSeqAfter}${res.writerKill.retried ? `, the batch in flight ${res.writerKill.retried}` : ''}`,
          ...res.failures.map((m) => `  FAIL ${m}`),
        ].join('\n') + '\n',
      );
    }
    process.exitCode = res.ok ? 0 : 1;
  } finally {
    for (const c of cleanup.reverse()) await c();
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`cluster: ${err.stack ?? err}\n`);
    process.exitCode = 1;
  });
}
