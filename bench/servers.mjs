// The two servers the benches drive over HTTP, each a fresh process of its
// own: session-pager's `serve` (2 page workers) and the SQLite peer's
// (bench/peer-server.mjs, 2 worker threads). Used by bench/peer-bench.mjs
// and bench/capacity.mjs.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Peak RSS (VmHWM) of a live process, MB; NaN once it is gone. */
export function peakRssOf(pid) {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** CPU seconds (utime + stime) of each live thread of a process, by thread id (the main thread's is the pid). */
export function threadCpuSecondsOf(pid) {
  const out = {};
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const f = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8').split(') ')[1].split(' ');
      out[t] = (Number(f[11]) + Number(f[12])) / 100; // clock ticks, USER_HZ = 100 on Linux
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** CPU seconds (user + system) a live process has used so far, from /proc. */
export function cpuSecondsOf(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100 on Linux)
  } catch {
    return NaN;
  }
}

/** Resolves once GET /readyz answers 200: warm-ups done, serving at full speed. */
async function ready(url, ms = 120_000) {
  const until = Date.now() + ms;
  for (;;) {
    // On a connection closed at once: fetch would keep it open (idle, ~4 s), and the server counts
    // it as a second client, which turns off its lone-client path (small slices decoded on its main
    // thread) for the first seconds of a 1-connection measurement (proof, eleventh session).
    const ok = await fetch(`${url}/readyz`, { headers: { connection: 'close' } }).then((r) => r.ok, () => false);
    if (ok) return;
    if (Date.now() > until) throw new Error(`${url} not ready after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts node with `args`; with `cpus` (a taskset list, e.g. '1') every thread of it runs on those CPUs only (taskset execs node: the pid is node's).
 * With `command`, args[0] is run as a command (its shebang: bin/session-pager.js's sh lines, which exec node: the pid is node's too).
 */
function start(name, args, env, cpus, command = false) {
  const [exe, rest] = command ? [args[0], args.slice(1)] : [process.execPath, args];
  const [cmd, argv] = cpus === undefined ? [exe, rest] : ['taskset', ['-c', cpus, exe, ...rest]];
  const child = spawn(cmd, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let banner = '';
  const keep = (d) => (banner += d);
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((r) => child.once('exit', r));
  return new Promise((res, rej) => {
    const resolveReady = (srv) => ready(srv.url).then(() => res(srv), (err) => srv.stop().then(() => rej(err)));
    const t = setInterval(() => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(banner);
      if (m) {
        clearInterval(t);
        clearTimeout(timeout);
        // Its log lines from here on (a line a request at info) are read and dropped, not kept.
        child.stdout.off('data', keep);
        child.stdout.resume();
        resolveReady({
          name,
          url: m[1],
          pid: child.pid,
          peakRssMB: () => peakRssOf(child.pid),
          cpuSeconds: () => cpuSecondsOf(child.pid),
          stop: async () => {
            child.kill('SIGTERM');
            await exited;
          },
        });
      }
    }, 50);
    const timeout = setTimeout(() => {
      clearInterval(t);
      child.kill('SIGKILL');
      rej(new Error(`${name} did not start: ${banner}`));
    }, 120_000);
    child.once('exit', (code) => {
      clearInterval(t);
      clearTimeout(timeout);
      rej(new Error(`${name} exited (${code}) before listening: ${banner}`));
    });
  });
}

/**
 * session-pager serve over `dataDir` (2 workers) from checkout `checkout` (this one by default); resolves once it is ready (warm-ups done).
 * `launcher` (the default): started as a command, as a user's `session-pager serve` is, so with the
 * launcher's settings (bin/session-pager.js: V8's helper threads no more than the CPUs, glibc's mmap
 * threshold); `nodeArgs` then go in NODE_OPTIONS (only flags node allows there; one naming
 * --v8-pool-size replaces the launcher's). `launcher: false`: `node [nodeArgs] bin/session-pager.js`,
 * without them (how the benches started it until the twelfth session).
 * `logLevel`: serve's --log-level (warn by default, as the benches ran before; info is serve's own
 * default, a JSON line on stdout a request, which is read here and dropped, as a log shipper would).
 */
export function startService(dataDir, token, { args = [], env = {}, nodeArgs = [], checkout = root, cpus, launcher = true, logLevel = 'warn' } = {}) {
  const serve = [join(checkout, 'bin/session-pager.js'), 'serve', '--data', dataDir, '--port', '0', '--workers', '2', '--log-level', logLevel, ...args];
  if (!launcher) return start('session-pager', [...nodeArgs, ...serve], { ...env, SESSION_PAGER_TOKEN: token }, cpus);
  const nodeOptions = [process.env.NODE_OPTIONS, env.NODE_OPTIONS, ...nodeArgs].filter(Boolean).join(' ');
  return start('session-pager', serve, { ...env, SESSION_PAGER_TOKEN: token, ...(nodeOptions === '' ? {} : { NODE_OPTIONS: nodeOptions }) }, cpus, true);
}

/** The SQLite peer's HTTP server over database `db` (2 worker threads). */
export function startPeer(db, token, { env = {}, nodeArgs = [], cpus } = {}) {
  return start('SQLite peer', [...nodeArgs, join(root, 'bench/peer-server.mjs'), '--db', db, '--port', '0', '--workers', '2', '--token', token], env, cpus);
}

/**
 * A data directory holding only `ids` (hard links to their files in
 * `dataDir`: no copy), so a server over it lists just that workload and
 * the load harness's random pages stay within it.
 */
export function linkedDataDir(dataDir, ids, dest) {
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(join(dest, 'sessions', 'index'), { recursive: true });
  const link = (rel) => {
    const from = join(dataDir, rel);
    if (existsSync(from)) linkSync(from, join(dest, rel));
  };
  for (const id of ids) {
    link(join('sessions', `${id}.events`));
    link(join('sessions', 'index', `${id}.index.json`));
    link(join('sessions', 'index', `${id}.entries.jsonl`));
    const proj = join(dataDir, 'sessions', 'index', id);
    if (existsSync(proj)) {
      mkdirSync(join(dest, 'sessions', 'index', id));
      for (const f of readdirSync(proj)) link(join('sessions', 'index', id, f));
    }
  }
  return dest;
}

/** One GET on a fresh connection: status, bytes, ms from the request's start to the last byte. */
/**
 * A fresh `session-pager serve` of the checkout `checkout` on `port`, started as a command (its
 * shebang), as a user's `session-pager` is: the launcher's own work is measured too.
 * `waitFor(path, everyMs)` polls until `path` answers 200 and resolves to the milliseconds since
 * launch; after 60 s it kills the server and throws with what it printed on stderr.
 */
export function launchServe(checkout, dataDir, port, env = {}) {
  const t0 = performance.now();
  const child = spawn(`${checkout}/bin/session-pager.js`, ['serve', '--data', dataDir, '--port', String(port), '--workers', '2', '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const deadline = t0 + 60_000;
  const waitFor = async (path, every) => {
    for (;;) {
      if (performance.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`no 200 from ${path} within 60 s: ${err}`);
      }
      if ((await getOnce(port, path)).status === 200) return Math.round(performance.now() - t0);
      await new Promise((r) => setTimeout(r, every));
    }
  };
  return { child, waitFor };
}

export function getOnce(port, path, headers = {}) {
  return new Promise((res) => {
    const t0 = performance.now();
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, headers }, (r) => {
      let bytes = 0;
      r.on('data', (c) => (bytes += c.length));
      r.on('end', () => res({ status: r.statusCode, bytes, ms: performance.now() - t0 }));
    });
    req.on('error', () => res({ status: 0, bytes: 0, ms: performance.now() - t0 }));
  });
}

/** A free loopback port (the services script's: a server listens on 0, is closed, its port handed out). */
export { freePort } from '../scripts/services.mjs';
