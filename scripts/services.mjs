#!/usr/bin/env node
/**
 * The services the S3 and cross-process suites run against, started from
 * Debian's packages alone: Ceph's S3 gateway (one monitor, one memstore OSD,
 * radosgw; `ceph-mon`, `ceph-osd`, `radosgw` 16.2) and `redis-server`, each
 * on a free loopback port, all state in one directory, every daemon known by
 * the pid file this script writes for it.
 *
 *   node scripts/services.mjs start [rgw] [redis] [--state DIR]
 *       start them (both by default); prints the environment that points
 *       at them (`export NAME=value` lines) and writes it to DIR/env.sh.
 *   node scripts/services.mjs stop [--state DIR]
 *       stop every daemon of DIR by its pid file, then remove DIR.
 *   node scripts/services.mjs status [--state DIR]
 *       which of DIR's daemons are running, and the environment.
 *   node scripts/services.mjs run [rgw] [redis] -- COMMAND ARGS...
 *       start them in a fresh directory, run COMMAND with the environment,
 *       stop them (also on Ctrl-C), exit with COMMAND's status.
 *
 * DIR defaults to `.services/` in the current directory. The environment:
 *   SESSION_PAGER_TEST_S3_ENDPOINT  http://127.0.0.1:<port> (what makes `npm test` run the S3 suites)
 *   SESSION_PAGER_TEST_S3_BUCKET    a bucket made for the tests
 *   AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION
 *   SESSION_PAGER_TEST_REDIS_URL    redis://127.0.0.1:<port>
 *
 * Why each Ceph setting is there is said beside it in cephConf(). The module
 * also exports startRedis/startRgw/stopAll for tests that start their own.
 */
import { spawn, execFile } from 'node:child_process';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);

export const S3_ACCESS_KEY = 'session-pager-test';
export const S3_SECRET_KEY = 'session-pager-test-secret';
export const S3_REGION = 'us-east-1';
export const S3_BUCKET = 'session-pager-test';

/** A loopback port nobody listens on now (the kernel's pick; taken again by the daemon a moment later). */
export function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pidDir(state) {
  return join(state, 'pids');
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks) and the state letter, or null when there is no such process. */
function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], start: fields[19] };
  } catch {
    return null;
  }
}

/**
 * Whether the daemon of pid file `rec` ({ pid, start }) still runs: a live
 * (not zombie) process with the start time recorded for it, so a recycled
 * pid is never taken for ours (redis rewrites its command line, so that
 * cannot tell).
 */
function alive(rec) {
  const s = procStat(rec.pid);
  return s !== null && s.state !== 'Z' && s.state !== 'X' && s.start === rec.start;
}

/** Start `cmd` in the foreground of its own process group, output to DIR/log/<name>.out, pid in DIR/pids/<name>.pid. */
function daemon(state, name, cmd, args) {
  mkdirSync(pidDir(state), { recursive: true });
  mkdirSync(join(state, 'log'), { recursive: true });
  const out = openSync(join(state, 'log', `${name}.out`), 'a');
  const child = spawn(cmd, args, { detached: true, stdio: ['ignore', out, out] });
  closeSync(out);
  child.on('error', () => undefined);
  child.unref();
  // The pid and its start time (see alive()).
  writeFileSync(join(pidDir(state), `${name}.pid`), `${child.pid} ${procStat(child.pid)?.start ?? ''}\n`);
  return child;
}

function logTail(state, name) {
  const p = join(state, 'log', `${name}.out`);
  return existsSync(p) ? readFileSync(p, 'utf8').split('\n').slice(-15).join('\n') : '';
}

async function until(what, timeoutMs, probe, state, name) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      if (await probe()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) {
      throw new Error(`${what} not up after ${timeoutMs} ms${last ? ` (${last.message ?? last})` : ''}\n${logTail(state, name)}`);
    }
    await sleep(100);
  }
}

/* ----------------------------------------------------------------- redis */

/** redis-server on a free loopback port (or `port`: a restart), nothing persisted. Returns { url, port }. */
export async function startRedis(state, { port: fixed } = {}) {
  const dir = join(state, 'redis');
  mkdirSync(dir, { recursive: true });
  const port = fixed ?? (await freePort());
  daemon(state, 'redis', 'redis-server', [
    '--bind', '127.0.0.1', '--port', String(port), '--dir', dir,
    '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--protected-mode', 'yes',
    '--logfile', join(dir, 'redis.log'),
  ]);
  await until('redis-server', 10_000, () => redisPing(port), state, 'redis');
  return { url: `redis://127.0.0.1:${port}`, port };
}

/** PING over a raw socket: true on +PONG. */
function redisPing(port) {
  return new Promise((res) => {
    import('node:net').then(({ connect }) => {
      const s = connect(port, '127.0.0.1');
      let buf = '';
      s.setTimeout(1000, () => s.destroy());
      s.on('connect', () => s.write('PING\r\n'));
      s.on('data', (d) => {
        buf += d;
        if (buf.includes('\r\n')) {
          s.destroy();
          res(buf.startsWith('+PONG'));
        }
      });
      s.on('error', () => res(false));
      s.on('close', () => res(false));
    });
  });
}

/* ------------------------------------------------------------------ ceph */

function cephConf(state, fsid, monPort, rgwPort) {
  return `[global]
fsid = ${fsid}
mon host = v2:127.0.0.1:${monPort}
mon initial members = a
public addr = 127.0.0.1
# No cephx: a throwaway cluster on loopback.
auth cluster required = none
auth service required = none
auth client required = none
# Without it, with auth off, radosgw loops on an authentication error.
ms mon client mode = crc secure
# One OSD: pools of one replica, placed on it whatever the CRUSH type.
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
# Few placement groups: radosgw makes about eight pools.
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool delete = true
run dir = ${state}/run
admin socket = ${state}/run/$name.asok
log file = ${state}/log/$name.log
mon data = ${state}/mon/$id
osd data = ${state}/osd/$id
[osd]
# In memory: nothing to format, nothing left on disk.
osd objectstore = memstore
memstore device bytes = 2147483648
[client.rgw.a]
# tcp_nodelay: without it every request after the first on a keep-alive connection
# (the SDK's default) waits ~40 ms (Nagle against the client's delayed ACK).
rgw frontends = beast endpoint=127.0.0.1:${rgwPort} tcp_nodelay=1
rgw data = ${state}/rgw
rgw thread pool size = 64
rgw dynamic resharding = false
rgw enable usage log = false
`;
}

/**
 * One monitor, one memstore OSD and radosgw, with a user and a bucket.
 * Returns { endpoint, port, bucket, accessKeyId, secretAccessKey, region }.
 */
export async function startRgw(state) {
  const [monPort, rgwPort] = [await freePort(), await freePort()];
  const fsid = randomUUID();
  for (const d of ['run', 'log', 'mon/a', 'osd/0', 'rgw']) mkdirSync(join(state, d), { recursive: true });
  const conf = join(state, 'ceph.conf');
  writeFileSync(conf, cephConf(state, fsid, monPort, rgwPort));
  const c = ['-c', conf];

  const monmap = join(state, 'monmap');
  await run('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, monmap]);
  await run('ceph-mon', [...c, '--mkfs', '-i', 'a', '--monmap', monmap]);
  daemon(state, 'ceph-mon', 'ceph-mon', [...c, '-f', '-i', 'a']);

  // `osd new` waits for the monitor's quorum (and fails with its reason after the timeout).
  const osdUuid = randomUUID();
  const { stdout: osdId } = await run('ceph', [...c, '--connect-timeout', '20', 'osd', 'new', osdUuid]);
  const id = osdId.trim();
  mkdirSync(join(state, 'osd', id), { recursive: true });
  await run('ceph-osd', [...c, '-i', id, '--mkfs', '--osd-uuid', osdUuid]);
  daemon(state, 'ceph-osd', 'ceph-osd', [...c, '-f', '-i', id]);

  daemon(state, 'radosgw', 'radosgw', [...c, '-f', '-n', 'client.rgw.a']);
  const endpoint = `http://127.0.0.1:${rgwPort}`;
  // radosgw answers once it has made its pools (which needs the OSD up).
  await until('radosgw', 60_000, async () => (await fetch(endpoint + '/')).status === 200, state, 'radosgw');
  await run('radosgw-admin', [...c, '-n', 'client.rgw.a', 'user', 'create', '--uid', 'session-pager', '--display-name', 'session-pager tests',
    '--access-key', S3_ACCESS_KEY, '--secret-key', S3_SECRET_KEY]);
  const creds = { endpoint, accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY, region: S3_REGION };
  // The user's keys reach radosgw's cache within a moment: retry the first signed request.
  await until('the S3 user', 20_000, async () => {
    const r = await s3Request(creds, 'PUT', `/${S3_BUCKET}`);
    if (r.status === 200 || r.status === 409) return true;
    throw new Error(`PUT bucket: ${r.status} ${await r.text()}`);
  }, state, 'radosgw');
  return { ...creds, port: rgwPort, bucket: S3_BUCKET };
}

/* --------------------------------------------------------- S3 (SigV4) */

const sha256 = (data) => createHash('sha256').update(data).digest('hex');
const hmac = (key, data) => createHmac('sha256', key).update(data).digest();

/**
 * One signed S3 request (AWS Signature Version 4, path-style), with no SDK:
 * enough for this script's bucket and the engine checks of test/s3/.
 * `path` is `/bucket[/key]` (already URI-encoded); `query` a plain object.
 */
export async function s3Request(creds, method, path, { headers = {}, body, query = {} } = {}) {
  const url = new URL(creds.endpoint);
  const payload = body === undefined ? Buffer.alloc(0) : Buffer.from(body);
  const now = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const day = now.slice(0, 8);
  const hdrs = { ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v)])), host: url.host, 'x-amz-date': now, 'x-amz-content-sha256': sha256(payload) };
  const names = Object.keys(hdrs).sort();
  const qs = Object.keys(query).sort().map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(query[k])}`).join('&');
  const canonical = [method, path, qs, names.map((n) => `${n}:${hdrs[n].trim()}\n`).join(''), names.join(';'), hdrs['x-amz-content-sha256']].join('\n');
  const scope = `${day}/${creds.region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', now, scope, sha256(canonical)].join('\n');
  let key = hmac(`AWS4${creds.secretAccessKey}`, day);
  for (const part of [creds.region, 's3', 'aws4_request']) key = hmac(key, part);
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  hdrs.authorization = `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
  delete hdrs.host;
  return fetch(`${creds.endpoint}${path}${qs ? `?${qs}` : ''}`, { method, headers: hdrs, body: payload.length > 0 ? payload : undefined });
}

/* ------------------------------------------------------------ start/stop */

export function envFor({ rgw, redis }) {
  const env = {};
  if (rgw) {
    Object.assign(env, {
      SESSION_PAGER_TEST_S3_ENDPOINT: rgw.endpoint,
      SESSION_PAGER_TEST_S3_BUCKET: rgw.bucket,
      AWS_ENDPOINT_URL: rgw.endpoint,
      AWS_ENDPOINT_URL_S3: rgw.endpoint,
      AWS_ACCESS_KEY_ID: rgw.accessKeyId,
      AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey,
      AWS_REGION: rgw.region,
    });
  }
  if (redis) env.SESSION_PAGER_TEST_REDIS_URL = redis.url;
  return env;
}

/** Start what `which` names ({ rgw, redis }) in `state`; on failure stop what did start. Returns the environment. */
export async function startAll(state, which = { rgw: true, redis: true }) {
  mkdirSync(state, { recursive: true });
  try {
    const [rgw, redis] = await Promise.all([which.rgw ? startRgw(state) : null, which.redis ? startRedis(state) : null]);
    const env = envFor({ rgw, redis });
    writeFileSync(join(state, 'env.json'), JSON.stringify(env, null, 2) + '\n');
    writeFileSync(join(state, 'env.sh'), Object.entries(env).map(([k, v]) => `export ${k}=${v}\n`).join(''));
    return env;
  } catch (err) {
    await stopAll(state, { keep: true });
    throw err;
  }
}

/** The daemons of `state` by pid file: [{ name, pid, running }]. */
export function daemons(state) {
  const dir = pidDir(state);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith('.pid')).map((f) => {
    const [pid, start] = readFileSync(join(dir, f), 'utf8').trim().split(' ');
    const rec = { pid: Number(pid), start };
    return { name: f.slice(0, -4), ...rec, running: alive(rec) };
  });
}

/** Stop every daemon of `state` (or those `only` names) (TERM, then KILL after 10 s), gateway first, monitor last; remove `state` unless `keep`. */
export async function stopAll(state, { keep = false, only } = {}) {
  const order = ['radosgw', 'ceph-osd', 'ceph-mon', 'redis'];
  const list = daemons(state).filter((d) => only === undefined || only.includes(d.name)).sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
  for (const d of list) {
    if (!d.running) continue;
    try {
      process.kill(d.pid, 'SIGTERM');
    } catch {
      continue;
    }
    const end = Date.now() + 10_000;
    while (alive(d) && Date.now() < end) await sleep(50);
    if (alive(d)) {
      try {
        process.kill(d.pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
      while (alive(d)) await sleep(50);
    }
  }
  if (!keep) rmSync(state, { recursive: true, force: true });
}

/* ------------------------------------------------------------------- CLI */

async function main(argv) {
  const [cmd, ...rest] = argv;
  const dd = rest.indexOf('--');
  const own = dd === -1 ? rest : rest.slice(0, dd);
  const command = dd === -1 ? [] : rest.slice(dd + 1);
  const si = own.indexOf('--state');
  let state = resolve(si === -1 ? '.services' : own[si + 1]);
  const names = own.filter((a, i) => a !== '--state' && own[i - 1] !== '--state');
  const which = names.length === 0 ? { rgw: true, redis: true } : { rgw: names.includes('rgw'), redis: names.includes('redis') };
  for (const n of names) if (n !== 'rgw' && n !== 'redis') throw new Error(`unknown service ${n} (rgw, redis)`);

  if (cmd === 'start') {
    if (daemons(state).some((d) => d.running)) throw new Error(`services already running in ${state} (stop them first)`);
    rmSync(state, { recursive: true, force: true });
    const t0 = Date.now();
    const env = await startAll(state, which);
    for (const [k, v] of Object.entries(env)) process.stdout.write(`export ${k}=${v}\n`);
    process.stderr.write(`up in ${((Date.now() - t0) / 1000).toFixed(1)} s; state in ${state}; stop with: node scripts/services.mjs stop --state ${state}\n`);
  } else if (cmd === 'stop') {
    await stopAll(state);
  } else if (cmd === 'status') {
    const list = daemons(state);
    if (list.length === 0) process.stdout.write(`nothing started in ${state}\n`);
    for (const d of list) process.stdout.write(`${d.name} pid ${d.pid} ${d.running ? 'running' : 'not running'}\n`);
    const envFile = join(state, 'env.sh');
    if (existsSync(envFile)) process.stdout.write(readFileSync(envFile, 'utf8'));
    process.exitCode = list.length > 0 && list.every((d) => d.running) ? 0 : 1;
  } else if (cmd === 'run') {
    if (command.length === 0) throw new Error('run: give the command after --');
    if (si === -1) state = mkdtempSync(join(tmpdir(), 'session-pager-services-'));
    const t0 = Date.now();
    let child;
    let stopping = false;
    const onSignal = (sig) => {
      if (child) child.kill(sig);
      else if (!stopping) {
        stopping = true;
        stopAll(state).finally(() => process.exit(130));
      }
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    let env;
    try {
      env = await startAll(state, which);
    } catch (err) {
      rmSync(state, { recursive: true, force: true });
      throw err;
    }
    process.stderr.write(`services up in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${Object.entries(env).filter(([k]) => /ENDPOINT|URL/.test(k) && k.startsWith('SESSION')).map(([, v]) => v).join(' ')}\n`);
    const code = await new Promise((res) => {
      child = spawn(command[0], command.slice(1), { stdio: 'inherit', env: { ...process.env, ...env } });
      child.on('error', (err) => {
        process.stderr.write(`${command[0]}: ${err.message}\n`);
        res(127);
      });
      child.on('exit', (c, sig) => res(c ?? (sig ? 128 : 1)));
    });
    child = undefined;
    await stopAll(state);
    process.exitCode = code;
  } else {
    process.stderr.write('usage: services.mjs start|stop|status [rgw] [redis] [--state DIR] | run [rgw] [redis] -- COMMAND...\n');
    process.exitCode = 2;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`services: ${err.message ?? err}\n`);
    process.exitCode = 1;
  });
}
