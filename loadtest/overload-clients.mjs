/**
 * The overload suite's node:http clients (loadtest/overload.mjs): a closed loop per connection,
 * clients that ignore Retry-After (`ignore`: ask again at once after a 503) or honour it
 * (`honour`: wait Retry-After seconds), for page requests on keep-alive connections or attaches
 * (`attach`: GET /follow, the time to the whole snapshot, the stream held `holdMs`, one
 * connection each).
 *
 * Run in this thread or spread over worker threads (`threads`), each with its own event loop and
 * its share of the connections: 256 users are 256 machines, and one loop for all of them adds its
 * own queueing to what it measures (at 256 attach connections it noticed loopback connects 3-17 ms
 * late at p99). On a machine whose cores the server shares, more client threads also take more of
 * them (docs/benchmarks.md has both), so one thread is the default.
 */
import { Agent, request } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { SnapshotEnd } from './snapshot-end.mjs';

/** The request path of each scenario: `targets` ({ id, last } per session) or the long session's `last`. */
export function pathMaker({ scenario, targets, last, maxMessages }) {
  const pick = () => targets[Math.floor(Math.random() * targets.length)];
  const paths = {
    tail: () => `/v1/sessions/ov-long/page?maxMessages=${maxMessages}`,
    older: () => `/v1/sessions/ov-long/page?throughSeq=${last}&beforeSeq=${1 + Math.floor(Math.random() * last)}&maxMessages=${maxMessages}`,
    random: () => {
      const s = pick();
      return `/v1/sessions/${s.id}/page?throughSeq=${s.last}&beforeSeq=${1 + Math.floor(Math.random() * s.last)}&maxMessages=${maxMessages}`;
    },
    attach: () => `/v1/sessions/${pick().id}/follow?maxMessages=${maxMessages}`,
  };
  return paths[scenario];
}

/**
 * One attach: GET /follow, the time to the whole snapshot event is its latency; the stream
 * is then held `holdMs` (or to the end of the run) and closed. Resolves when the attach is
 * over (the status, the latency, Retry-After).
 */
/**
 * An attach has its snapshot decoded whole and checked (snapshot-end.mjs) when this many ms have
 * passed since the last one so checked (per client thread; the first attach included): ~10 a second.
 * Checking one in 16 (~125 a second at 256 followers: a zstd decode and a JSON.parse of 236 KiB,
 * ~2 ms each) was a quarter of the load generator's own CPU.
 */
const VALIDATE_GAP_MS = 100;
let lastValidated = -Infinity;

/** The machine's monotonic clock in ms (CLOCK_MONOTONIC: the same in every process, so the server's probe can be matched). */
const mono = () => Number(process.hrtime.bigint()) / 1e6;

/** Whether a 503's body is the SPEC's JSON error with code `overloaded`. */
function overloadedBody(buf) {
  try {
    return JSON.parse(buf.toString('utf8'))?.error?.code === 'overloaded';
  } catch {
    return false;
  }
}

function attachOnce(base, headers, path, end, holdMs, trace) {
  return new Promise((resolve) => {
    const start = performance.now();
    const t = trace === undefined ? null : { port: null, start: mono(), connect: null, head: null, snapshot: null };
    if (t !== null) trace.push(t);
    let settled = false;
    const done = (r) => {
      if (!settled) {
        settled = true;
        resolve(r);
      }
    };
    // Where an attach's time goes: to the connection (accept), to the answer's head, to the snapshot's end.
    let connectMs = null;
    let headMs = null;
    const req = request(`${base}${path}`, { headers, timeout: 30_000 }, (res) => {
      headMs = performance.now() - start;
      if (t !== null) t.head = mono();
      if (res.statusCode !== 200) {
        // A shed answer's body must be the SPEC's JSON error (`overloaded`): kept (it is small) and checked.
        const body = [];
        res.on('data', (d) => body.length < 64 && body.push(d));
        res.on('end', () => done({ status: res.statusCode, ms: performance.now() - start, retryAfter: Number(res.headers['retry-after'] ?? 1), bare: res.headers['retry-after'] === undefined, notJson: res.statusCode === 503 && !overloadedBody(Buffer.concat(body)) }));
        res.on('error', () => done({ status: 0 }));
        return;
      }
      // The snapshot's end found in the bytes as they arrive, identity or coded (snapshot-end.mjs:
      // a zstd stream's frames walked, not decoded, but the small ones around the page); the time
      // is the arrival of the chunk that completed it, taken before that chunk is searched. An
      // attach every VALIDATE_GAP_MS (and the first) has its whole snapshot decoded and checked after
      // its time is taken: one that fails is counted `other`, not as an answer.
      const validate = headMs + start - lastValidated >= VALIDATE_GAP_MS;
      if (validate) lastValidated = headMs + start;
      const found = new SnapshotEnd(res.headers['content-encoding'], validate);
      let result = null;
      found.onEnd = (at) => {
        const ms = at - start;
        if (t !== null) t.snapshot = mono() - (performance.now() - at);
        found.close();
        result = found.valid === false ? { status: -1, badSnapshot: true } : { status: 200, ms, connectMs, headMs, checked: found.valid === true };
        const wait = Math.max(0, Math.min(holdMs, end - performance.now()));
        setTimeout(() => {
          req.destroy();
          done(result);
        }, wait);
      };
      res.on('data', (d) => {
        try {
          found.push(d, performance.now());
        } catch {
          // not the coding it names (a zstd stream that is not zstd frames): a wrong answer
          result = { status: -1, badSnapshot: true };
          req.destroy();
        }
      });
      res.on('error', () => done(result ?? { status: 0 }));
      res.on('close', () => done(result ?? { status: 0 }));
    });
    req.on('socket', (s) =>
      s.once('connect', () => {
        connectMs = performance.now() - start;
        if (t !== null) [t.connect, t.port] = [mono(), s.localPort];
      }),
    );
    // The error's code rides along (a client out of ports, EADDRNOTAVAIL, is not the server's error).
    req.on('error', (e) => done({ status: 0, code: e.code }));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/**
 * `conns` closed loops for `seconds` from `startAt` (epoch ms; threads start together):
 * admitted latencies, the attach phases, and the answers counted by kind.
 */
export async function runClients({ base, headers, path, conns, mode, seconds, settle = 0, holdMs, holdJitter = 0, burst, startAt = Date.now(), traceAttach = false }) {
  const pathFor = pathMaker(path);
  const attach = path.scenario === 'attach';
  if (startAt > Date.now()) await new Promise((res) => setTimeout(res, startAt - Date.now()));
  const agent = new Agent({ keepAlive: true, maxSockets: conns });
  // This loop's own delays: every answer it times waited for the loop as well (a latency it
  // reports is the server's plus, at worst, this). At 256 attach connections its p99 is what
  // the load generator adds to the snapshot's p99, measured rather than inferred.
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  const lat = [];
  // Each admitted answer's wait counted in pages: the 2xx answers this thread received while it was
  // outstanding. A latency in ms scales with the CPU the machine gives the processes, which on a
  // starved machine changes several-fold between runs seconds apart (test/overload.test.ts); the
  // pages served meanwhile do not: behind a gate of N slots and a bounded queue an admitted request
  // waits behind tens of pages at any speed, in an unbounded queue behind nearly every connection.
  // One client thread sees every answer; with --client-threads each counts its own only.
  let served = 0;
  const waitPages = [];
  const phases = { connect: [], head: [] };
  const counts = { ok: 0, shed: 0, other: 0, errors: 0, checked: 0 };
  // The first `settle` seconds are load, not measurement: 2xx and 503 answers arriving in them are
  // counted apart (`settled`), their latencies not at all (overload.mjs, --settle).
  const settled = { ok: 0, shed: 0 };
  // 2xx and 503 answers by the second of the measured run they arrived in: how a run's goodput moves
  // from its first seconds (fresh connections, every excluded one shed at the pacer's shortest holds) on.
  const okBySecond = new Array(Math.ceil(seconds)).fill(0);
  const shedBySecond = new Array(Math.ceil(seconds)).fill(0);
  const second = () => Math.min(okBySecond.length - 1, Math.floor((performance.now() - from) / 1000));
  const trace = traceAttach ? [] : undefined;
  const t0 = performance.now();
  const from = t0 + settle * 1000;
  const end = from + seconds * 1000;
  const one = () =>
    attach
      ? attachOnce(base, headers, pathFor(), end, holdFor(), trace)
      : new Promise((resolve) => {
          const start = performance.now();
          const servedAtStart = served;
          const req = request(`${base}${pathFor()}`, { agent, headers, timeout: 30_000 }, (res) => {
            res.on('data', () => undefined);
            res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - start, pages: served - servedAtStart, retryAfter: Number(res.headers['retry-after'] ?? 1) }));
            res.on('error', () => resolve({ status: 0 }));
          });
          req.on('error', () => resolve({ status: 0 }));
          req.on('timeout', () => req.destroy());
          req.end();
        });
  // Attach clients start at a random moment within the first hold. All at once, a run's first
  // attaches were one burst of `conns` snapshots that the server's one event loop answers in turn
  // (~0.5 ms each): at 256 connections the last waited ~130 ms in the kernel before the server read
  // it, and that one burst was the run's p99 (the 2,500 attaches after it waited ~1-20 ms).
  const stagger = attach && !burst ? holdMs : 0;
  // Each attach holds its stream a duration of its own, uniform within holdMs x (1 +- holdJitter)
  // (the mean, so the offered rate, unchanged). With one hold for all, the attaches that one stall
  // of the server held up together came back together a hold later, and again after that: the
  // closed loop kept them in step for the rest of the run, every such batch queued at once behind
  // the one connection the server accepts per loop iteration (libuv 1.45+), which users who each
  // leave when they will do not do (docs/benchmarks.md, 12-02 evening).
  const holdFor = () => holdMs * (1 + holdJitter * (2 * Math.random() - 1));
  // Page requests still out when the run ends are cut then, not waited for: at 256 connections
  // ignoring Retry-After most of them are 503s the server holds up to its pacer's longest hold (4 s),
  // so waiting made a 4 s run last up to 8 s, the rest idle (the server's figures were already taken
  // over the run's own seconds). Attaches end by their holds.
  let over = false;
  const cut = attach ? null : setTimeout(() => {
    over = true;
    agent.destroy();
  }, Math.max(0, end - performance.now()));
  const loop = async () => {
    if (stagger > 0) await new Promise((res) => setTimeout(res, Math.random() * Math.min(stagger, end - performance.now())));
    while (performance.now() < end) {
      const r = await one();
      if (over || performance.now() > end + 50) break; // answers after the end do not count
      const measured = performance.now() >= from;
      if (r.status >= 200 && r.status < 300 && !measured) {
        settled.ok++;
        served++;
      } else if (r.status >= 200 && r.status < 300) {
        counts.ok++;
        okBySecond[second()]++;
        served++;
        lat.push(r.ms);
        if (typeof r.pages === 'number') waitPages.push(r.pages);
        if (typeof r.connectMs === 'number') phases.connect.push(r.connectMs);
        if (typeof r.headMs === 'number') phases.head.push(r.headMs);
        if (r.checked === true) counts.checked++;
      } else if (r.status === 503) {
        if (measured) {
          counts.shed++;
          shedBySecond[second()]++;
        } else settled.shed++;
        const wait = mode === 'ignore' ? 0 : Math.min(Math.max(0, r.retryAfter) * 1000, end - performance.now());
        if (wait > 0) await new Promise((res) => setTimeout(res, wait));
      } else if (r.status === 0) counts.errors++;
      else counts.other++;
    }
  };
  await Promise.all(Array.from({ length: conns }, loop));
  if (cut !== null) clearTimeout(cut);
  loopDelay.disable();
  agent.destroy();
  // A sample is the timer's interval (1 ms) plus the delay: the interval is taken off.
  const ms = (ns) => Math.max(0, Math.round(ns / 1e4 - 100) / 100);
  return { lat, waitPages, phases, counts, settled, okBySecond, shedBySecond, trace, seconds: Math.min(seconds, (performance.now() - from) / 1000), loopDelay: { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) } };
}

/**
 * Interleaved windows (overload.mjs --interleave): closed loops that follow `schedule`
 * ([{ conns, mode, seconds, settle, quiet?, level? }], back to back from `startAt`; a window's
 * clients start `quiet` seconds into it). Each level (`level`,
 * by default `conns`) has loops and a keep-alive agent of its own, busy in that level's windows
 * and idle in the others': 16 / 256 / 16 / 256 ... windows of a second or two then measure
 * capacity and overload a second apart, each on connections already open (no settle second of
 * fresh connections in each). Apart, because the clients of a 256 window end it shed, many of
 * them waiting for an answer the server holds (up to 4 s) and then, honouring, for Retry-After:
 * with one set of loops for both levels, the 16 that go on in the next 16 window were idle for
 * much of it (a first version's 16-connection windows after a 256 one served 0.3-0.9 of the
 * others at a third of a core). Answers are counted in the window they arrive in, only when
 * they are that window's level's, and only in its measured part (after its `settle` seconds).
 * A wait for Retry-After ends with its window. Per window: 2xx, 503 (and 503s without
 * Retry-After), other, errors, and the admitted latencies.
 * Attach (`path.scenario` 'attach'): each loop attaches (a connection of its own, the time to the
 * whole snapshot is the latency), holds the stream `holdMs` x (1 +- `holdJitter`) and attaches
 * again, as runClients' do; a hold ends with its window at the latest (no stream of one level stays
 * open into the next level's window), and a level's loops start at random moments within the first
 * hold of each of its windows, not all at once (runClients: one burst of N snapshots was a run's p99).
 */
export async function runSchedule({ base, headers, path, schedule, startAt = Date.now(), holdMs = 0, holdJitter = 0 }) {
  const pathFor = pathMaker(path);
  const attach = path.scenario === 'attach';
  if (startAt > Date.now()) await new Promise((res) => setTimeout(res, startAt - Date.now()));
  const t0 = performance.now();
  let at = t0;
  const windows = schedule.map((w) => {
    const win = { ...w, level: w.level ?? w.conns, start: at, from: at + w.settle * 1000, end: at + w.seconds * 1000, ok: 0, shed: 0, shedBare: 0, shedNotJson: 0, other: 0, errors: 0, errorCodes: {}, checked: 0, lat: [] };
    at = win.end;
    return win;
  });
  const end = at;
  // Each level's loops: as many as its windows' connections (the most, should they differ).
  const levels = new Map();
  for (const w of windows) levels.set(w.level, Math.max(levels.get(w.level) ?? 0, w.conns));
  const agents = new Map([...levels].map(([level, conns]) => [level, new Agent({ keepAlive: true, maxSockets: Math.max(1, conns) })]));
  const windowAt = (t) => {
    for (const w of windows) if (t < w.end) return w;
    return null;
  };
  let over = false;
  const cut = setTimeout(() => {
    over = true;
    for (const a of agents.values()) a.destroy();
  }, Math.max(0, end - performance.now()));
  const holdFor = () => holdMs * (1 + holdJitter * (2 * Math.random() - 1));
  const one = (agent, w) =>
    // A hold cut by its window's end ends just after it (as a Retry-After wait below): cut at the
    // end itself, a timer firing a fraction of a ms early had the loop attach once more, at once.
    attach ? attachOnce(base, headers, pathFor(), w.end + 2, holdFor(), undefined) : new Promise((resolve) => {
      const start = performance.now();
      const req = request(`${base}${pathFor()}`, { agent, headers, timeout: 30_000 }, (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - start, retryAfter: res.headers['retry-after'] }));
        res.on('error', () => resolve({ status: 0 }));
      });
      req.on('error', () => resolve({ status: 0 }));
      req.on('timeout', () => req.destroy());
      req.end();
    });
  const loop = async (level, j) => {
    const agent = agents.get(level);
    let staggered = null; // attach: the window this loop has waited its random start in
    for (;;) {
      const now = performance.now();
      const w = windowAt(now);
      if (w === null || over) return;
      if (w.level !== level || j >= w.conns) {
        // Not this loop's window: wait for the next (windows are seconds long).
        await new Promise((res) => setTimeout(res, Math.max(1, w.end + 2 - now)));
        continue;
      }
      // A window's clients start `quiet` seconds into it: the previous level's last requests (sent
      // up to its end, queued or in flight) are done by then, and do not have the first requests
      // of the next level's clients shed (a shed 503 is held 0.5 s or more, then a client that
      // honours it waits Retry-After: one low client lost for most of its window).
      if (now < w.start + (w.quiet ?? 0) * 1000) {
        await new Promise((res) => setTimeout(res, w.start + (w.quiet ?? 0) * 1000 + 1 - now));
        continue;
      }
      if (attach && staggered !== w) {
        staggered = w;
        await new Promise((res) => setTimeout(res, Math.random() * Math.max(0, Math.min(holdMs, w.end - now))));
        continue;
      }
      const sent = performance.now();
      const r = await one(agent, w);
      // An attach returns after its hold: its answer arrived at its snapshot (or its 503), r.ms after it was sent.
      const t = attach && typeof r.ms === 'number' ? sent + r.ms : performance.now();
      const got = windowAt(t);
      // Page requests out at the end are cut (errors, not answers); an attach's snapshot came before
      // its hold, which the last window's end may outlast.
      if ((over && !attach) || got === null) return;
      // An answer after its window (a held 503 of a 256 window arriving in the next 16 one) is
      // not the next window's: counted nowhere.
      const measured = t >= got.from && got.level === level;
      if (r.status >= 200 && r.status < 300) {
        if (measured) {
          got.ok++;
          got.lat.push(r.ms);
          if (r.checked === true) got.checked++;
        }
      } else if (r.status === 503) {
        if (measured) {
          got.shed++;
          if (r.retryAfter === undefined || r.bare === true) got.shedBare++;
          if (r.notJson === true) got.shedNotJson++;
        }
        // Honouring: a wait cut by its window's end ends just after it (a timer may fire a fraction
        // of a ms early: a whole window's honouring clients then sent one more request each, all at
        // once, into the next window's first moment, where they had the low clients shed).
        const wait = got.mode === 'ignore' ? 0 : Math.min(Math.max(0, Number(r.retryAfter ?? 1)) * 1000, got.end + 2 - performance.now());
        if (wait > 0) await new Promise((res) => setTimeout(res, wait));
      } else if (r.status === 0) {
        if (measured) {
          got.errors++;
          const code = r.code ?? 'closed';
          got.errorCodes[code] = (got.errorCodes[code] ?? 0) + 1;
        }
      } else if (measured) got.other++;
    }
  };
  await Promise.all([...levels].flatMap(([level, conns]) => Array.from({ length: conns }, (_, j) => loop(level, j))));
  clearTimeout(cut);
  for (const a of agents.values()) a.destroy();
  return windows.map(({ conns, mode, seconds, settle, ok, shed, shedBare, shedNotJson, other, errors, errorCodes, checked, lat }) => ({ conns, mode, seconds, settle, ok, shed, shedBare, shedNotJson, other, errors, errorCodes, checked, lat }));
}

/** runSchedule over `threads` worker threads (each window's connections split among them), merged per window. */
export async function runScheduleThreaded(opts, threads) {
  const most = Math.max(...opts.schedule.map((w) => w.conns));
  const n = Math.max(1, Math.min(threads, most));
  if (n === 1) return runSchedule(opts);
  const startAt = opts.startAt ?? Date.now() + 150;
  const parts = await Promise.all(
    Array.from({ length: n }, (_, i) => {
      const schedule = opts.schedule.map((w) => ({ ...w, level: w.level ?? w.conns, conns: Math.floor(w.conns / n) + (i < w.conns % n ? 1 : 0) }));
      return new Promise((resolve, reject) => {
        const w = new Worker(new URL(import.meta.url), { workerData: { overloadSchedule: { ...opts, schedule, startAt } } });
        w.once('message', resolve);
        w.once('error', reject);
        w.once('exit', (code) => code !== 0 && reject(new Error(`client thread exited ${code}`)));
      });
    }),
  );
  return parts[0].map((w0, k) => {
    const out = { ...w0, conns: opts.schedule[k].conns, lat: [] };
    for (const key of ['ok', 'shed', 'shedBare', 'shedNotJson', 'other', 'errors', 'checked']) out[key] = parts.reduce((a, p) => a + p[k][key], 0);
    for (const p of parts) out.lat = out.lat.concat(p[k].lat);
    out.errorCodes = {};
    for (const p of parts) for (const [c, n] of Object.entries(p[k].errorCodes ?? {})) out.errorCodes[c] = (out.errorCodes[c] ?? 0) + n;
    return out;
  });
}

/** runClients over `threads` worker threads (the connections split among them), merged. */
export async function runClientsThreaded(opts, threads) {
  const n = Math.max(1, Math.min(threads, opts.conns));
  if (n === 1) return runClients(opts);
  // Booting a thread takes tens of ms: all start at one moment after that.
  const startAt = Date.now() + 150;
  const parts = await Promise.all(
    Array.from({ length: n }, (_, i) => {
      const conns = Math.floor(opts.conns / n) + (i < opts.conns % n ? 1 : 0);
      return new Promise((resolve, reject) => {
        const w = new Worker(new URL(import.meta.url), { workerData: { overloadClients: { ...opts, conns, startAt } } });
        w.once('message', resolve);
        w.once('error', reject);
        w.once('exit', (code) => code !== 0 && reject(new Error(`client thread exited ${code}`)));
      });
    }),
  );
  const out = { lat: [], waitPages: [], phases: { connect: [], head: [] }, counts: { ok: 0, shed: 0, other: 0, errors: 0, checked: 0 }, settled: { ok: 0, shed: 0 }, okBySecond: [], shedBySecond: [], trace: opts.traceAttach ? [] : undefined, seconds: 0, loopDelay: { p50: 0, p99: 0, max: 0 } };
  for (const p of parts) {
    out.lat = out.lat.concat(p.lat);
    out.waitPages = out.waitPages.concat(p.waitPages);
    if (out.trace !== undefined) out.trace = out.trace.concat(p.trace);
    for (const k of Object.keys(out.phases)) out.phases[k] = out.phases[k].concat(p.phases[k]);
    for (const k of Object.keys(out.counts)) out.counts[k] += p.counts[k];
    for (const k of Object.keys(out.settled)) out.settled[k] += p.settled[k];
    for (const k of ['okBySecond', 'shedBySecond']) p[k].forEach((v, i) => (out[k][i] = (out[k][i] ?? 0) + v));
    out.seconds = Math.max(out.seconds, p.seconds);
    // The worst thread's: a client's answer waits for its own thread's loop.
    for (const k of Object.keys(out.loopDelay)) out.loopDelay[k] = Math.max(out.loopDelay[k], p.loopDelay[k]);
  }
  return out;
}

if (!isMainThread && workerData?.overloadClients !== undefined) {
  parentPort.postMessage(await runClients(workerData.overloadClients));
}
if (!isMainThread && workerData?.overloadSchedule !== undefined) {
  parentPort.postMessage(await runSchedule(workerData.overloadSchedule));
}
