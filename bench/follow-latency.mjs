// Follow delivery delay across processes on one machine (issue 13: "within 50 ms p99").
//
//   node bench/follow-latency.mjs [--appends 500] [--interval-ms 10] [--mode both|library|sse] [--followers N]
//
// A writer in a child process appends one event at a time (`--interval-ms` apart, jittered
// ±50%), each carrying the wall-clock time just before its append() call. This process
// follows the session, with `store.follow` (library) and/or through an HTTP server's SSE
// `/follow` route on 127.0.0.1 (both in this process), and notes when each event arrives.
// Reported per follower: the delay from the writer's append() call (includes its two
// fsyncs) and from its acknowledgement (the append durable; negative when the follower
// saw the event before the writer's metadata write returned), p50 / p99 / max in ms.
// The store's backstop poll is set to 10 minutes: every delivery comes from fs.watch.
// --followers N: N more SSE followers of the same session stay attached throughout (in a
// child process of their own, reading and discarding every event), so each append fans out
// to N + 1 streams; the measured followers are the ones above.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const dist = new URL('../dist/main/index.js', import.meta.url);
const now = () => performance.timeOrigin + performance.now();

if (process.argv[2] === '--writer') {
  const [dataDir, id, appends, intervalMs] = process.argv.slice(3);
  const { SessionWriter } = await import(dist);
  const w = await SessionWriter.open(dataDir, id);
  for (let i = 0; i < Number(appends); i++) {
    await new Promise((r) => setTimeout(r, Number(intervalMs) * (0.5 + Math.random())));
    const seq = w.nextSeq;
    await w.append([{ type: 'custom/tick', seq, time: Date.now(), data: { sentAt: now() } }]);
    process.stdout.write(`${JSON.stringify({ seq, ack: now() })}\n`);
  }
  await w.close();
  process.exit(0);
}

if (process.argv[2] === '--idle-followers') {
  // N SSE followers that read and discard; one line once all are attached; ends with its stdin.
  const [port, id, n] = process.argv.slice(3);
  let attached = 0;
  for (let k = 0; k < Number(n); k++) {
    const req = request({ host: '127.0.0.1', port: Number(port), path: `/v1/sessions/${id}/follow`, headers: { 'last-event-id': '-1' } }, (res) => {
      if (res.statusCode !== 200) {
        console.error(`idle follower ${k}: status ${res.statusCode}`);
        process.exit(1);
      }
      res.on('data', () => undefined);
      if (++attached === Number(n)) process.stdout.write('attached\n');
    });
    req.on('error', () => undefined);
    req.end();
  }
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
} else {
  await main();
}

async function main() {
function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? def : process.argv[i + 1];
}
const appends = Number(arg('appends', '500'));
const intervalMs = Number(arg('interval-ms', '10'));
const mode = arg('mode', 'both');
const extraFollowers = Number(arg('followers', '0'));

const { openStore, buildServer, SessionWriter } = await import(dist);
const dir = mkdtempSync(join(tmpdir(), 'sp-follow-bench-'));
const id = 'bench';
const received = { library: new Map(), sse: new Map() };
try {
  const w = await SessionWriter.create(dir, id, { title: 'follow latency' });
  await w.close();
  const store = await openStore({ dataDir: dir, workers: 1, watchPollMs: 10 * 60_000 });
  await store.warmUp();
  const followers = [];

  if (mode === 'both' || mode === 'library') {
    followers.push(
      (async () => {
        for await (const e of store.follow(id, { fromSeq: 0 })) {
          received.library.set(e.seq, { at: now(), sentAt: e.data.sentAt });
          if (e.seq === appends - 1) break;
        }
      })(),
    );
  }

  let app;
  let idle;
  if (mode === 'both' || mode === 'sse' || extraFollowers > 0) {
    app = buildServer(store, { token: null, maxEventLoopLagMs: 0, follow: { maxStreams: Math.max(512, extraFollowers + 16) } });
    await app.listen({ host: '127.0.0.1', port: 0 });
  }
  if (extraFollowers > 0) {
    const port = app.server.address().port;
    idle = spawn(process.execPath, [new URL(import.meta.url).pathname, '--idle-followers', String(port), id, String(extraFollowers)], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise((resolve, reject) => {
      idle.stdout.on('data', (d) => (String(d).includes('attached') ? resolve() : undefined));
      idle.on('exit', (c) => reject(new Error(`idle followers exited ${c}`)));
    });
    while (app.pagerState.hub.size < extraFollowers) await new Promise((r) => setTimeout(r, 20));
  }
  if (mode === 'both' || mode === 'sse') {
    const port = app.server.address().port;
    followers.push(
      new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: `/v1/sessions/${id}/follow`, headers: { 'last-event-id': '-1' } }, (res) => {
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => {
            const at = now();
            buf += chunk;
            let i;
            while ((i = buf.indexOf('\n\n')) !== -1) {
              const block = buf.slice(0, i);
              buf = buf.slice(i + 2);
              const data = block.split('\n').find((l) => l.startsWith('data: '));
              if (/^event: error$/m.test(block)) console.error('sse error event:', block);
              if (!/^event: event$/m.test(block) || data === undefined) continue;
              const e = JSON.parse(data.slice(6));
              received.sse.set(e.seq, { at, sentAt: e.data.sentAt });
              if (e.seq === appends - 1) {
                req.destroy();
                resolve();
              }
            }
          });
          res.on('error', reject);
        });
        req.on('error', (err) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
        req.end();
      }),
    );
  }

  // Let the followers attach before the first append.
  await new Promise((r) => setTimeout(r, 300));
  const acks = new Map();
  const writer = spawn(process.execPath, [new URL(import.meta.url).pathname, '--writer', dir, id, String(appends), String(intervalMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  writer.stdout.on('data', (d) => {
    out += d;
    let i;
    while ((i = out.indexOf('\n')) !== -1) {
      const { seq, ack } = JSON.parse(out.slice(0, i));
      acks.set(seq, ack);
      out = out.slice(i + 1);
    }
  });
  const exited = new Promise((resolve, reject) => writer.on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`writer exited ${c}`)))));
  const timeout = setTimeout(() => {
    console.error(`timed out: library ${received.library.size}, sse ${received.sse.size}, acks ${acks.size}`);
    writer.kill();
    idle?.kill();
    rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  }, 60_000 + appends * intervalMs * 3);
  await exited;
  await Promise.all(followers);
  clearTimeout(timeout);
  const streams = app?.pagerState.hub.size ?? 0;
  idle?.stdin.end();
  await app?.close();
  await store.close();

  const q = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
  const fmt = (x) => x.toFixed(2);
  console.log(`follow-latency: ${appends} appends of 1 event, ~${intervalMs} ms apart, writer in another process${extraFollowers > 0 ? `, ${extraFollowers} more SSE followers attached (${streams} streams open at the end)` : ''}; ms`);
  for (const [name, got] of Object.entries(received)) {
    if (got.size === 0) continue;
    if (got.size !== appends) throw new Error(`${name}: ${got.size} of ${appends} events`);
    const fromCall = [...got.values()].map((r) => r.at - r.sentAt).sort((a, b) => a - b);
    const fromAck = [...got.entries()].map(([seq, r]) => r.at - acks.get(seq)).sort((a, b) => a - b);
    console.log(
      `${name.padEnd(8)} from append() call: p50 ${fmt(q(fromCall, 0.5))}  p99 ${fmt(q(fromCall, 0.99))}  max ${fmt(fromCall.at(-1))}   from ack: p50 ${fmt(q(fromAck, 0.5))}  p99 ${fmt(q(fromAck, 0.99))}  max ${fmt(fromAck.at(-1))}`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
}
