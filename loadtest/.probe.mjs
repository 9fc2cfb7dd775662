// start a server (admission on), run autocannon 16 conns for 4 s, sample metrics each second
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const { generateSession } = await import('/work/wt/http/dist/main/gen/generate.js');
const dir = await mkdtemp(join(tmpdir(), 'sp-probe-'));
await generateSession(dir, { id: 'x', events: Number(process.argv[2] ?? 100000), tailEvents: Number(process.argv[3] ?? 20000), seed: 7 });
const srv = spawn(process.execPath, ['bin/session-pager.js', 'serve', '--data', dir, '--port', '0', '--log-level', 'warn'], { cwd: '/work/wt/http', env: { ...process.env, SESSION_PAGER_PAGE_WARMUP: '0', ...(process.argv[5] ? { SESSION_PAGER_ADMISSION: 'off' } : {}) }, stdio: ['ignore', 'ignore', 'pipe'] });
let err = ''; srv.stderr.on('data', (d) => (err += d));
while (!/listening on (http\S+)/.test(err)) await new Promise((r) => setTimeout(r, 50));
const base = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(err)[1];
while ((await fetch(base + '/readyz')).status !== 200) await new Promise((r) => setTimeout(r, 100));
const path = process.env.PROBE_PATH ?? '/v1/sessions/x/page?maxMessages=50';
const r0 = await fetch(base + path); const body = await r0.arrayBuffer(); console.log('page bytes', body.byteLength);
const lat = [];
const srvAvg = (m) => { const s = /page",status_code="200"\} (\S+)/; const sum = /session_pager_http_request_duration_seconds_sum\{method="GET",route="\/v1\/sessions\/:id\/page",status_code="200"\} (\S+)/.exec(m); const cnt = /session_pager_http_request_duration_seconds_count\{method="GET",route="\/v1\/sessions\/:id\/page",status_code="200"\} (\S+)/.exec(m); return sum && cnt ? (sum[1] / cnt[1] * 1000).toFixed(1) + 'ms avg of ' + cnt[1] : '-'; };
const inst = autocannon({ url: base, connections: Number(process.argv[4] ?? 16), duration: 4, requests: [{ path }] });
inst.on('response', (_c, st, _b, ms) => { if (st === 200) lat.push(ms); });
const timer = setInterval(async () => {
  const m = await (await fetch(base + '/metrics')).text();
  const g = (n) => (new RegExp('^' + n + ' (\\S+)$', 'm').exec(m) ?? [])[1];
  console.log('inflight', g('session_pager_admission_in_flight'), 'queued', g('session_pager_admission_queued'), 'bound', g('session_pager_admission_queue_bound_seconds'), 'shed', g('session_pager_admission_shed_total'), 'lag', g('session_pager_event_loop_lag_seconds'), 'srv', srvAvg(m));
}, 1000);
const res = await inst; clearInterval(timer);
lat.sort((a, b) => a - b);
console.log('2xx', res['2xx'], 'non2xx', res.non2xx, 'p50', lat[Math.floor(lat.length * 0.5)], 'p99', lat[Math.floor(lat.length * 0.99)], 'rps', res.requests.average);
srv.kill('SIGTERM'); await new Promise((r) => srv.on('exit', r)); await rm(dir, { recursive: true, force: true });
