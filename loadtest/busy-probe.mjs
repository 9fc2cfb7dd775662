/**
 * A probe loaded into the server (`node loadtest/overload.mjs ... --server-node-args="--import
 * ./loadtest/busy-probe.mjs"`): every 50 ms, the server's event-loop utilization over those 50 ms,
 * the 2xx and 503 answers finished in them (a follow's 200 finishes when its stream ends, so
 * attach counts only its 503s), the requests that came in them, and the process's CPU ms. Written
 * as tab-separated lines to BUSY_PROBE_OUT (default /tmp/busy-probe-<pid>.tsv), flushed every
 * ~2 KB and at exit. What it answers: whether the server is idle part of the time under a load
 * (a loop busy in waves, in step with its 503s, against a steady one), which a run's averages hide.
 */
import dc from 'node:diagnostics_channel';
import { appendFileSync, writeFileSync } from 'node:fs';

const out = process.env.BUSY_PROBE_OUT ?? `/tmp/busy-probe-${process.pid}.tsv`;
writeFileSync(out, 'ms\tutilization\tok\tshed\trequests\tcpu_ms\n');
let ok = 0;
let shed = 0;
let requests = 0;
dc.subscribe('http.server.response.finish', ({ response }) => {
  if (response.statusCode === 503) shed++;
  else if (response.statusCode < 300) ok++;
});
dc.subscribe('http.server.request.start', () => {
  requests++;
});
let lastUse = performance.eventLoopUtilization();
let lastCpu = process.cpuUsage();
const t0 = performance.now();
let lines = '';
setInterval(() => {
  const use = performance.eventLoopUtilization(lastUse);
  lastUse = performance.eventLoopUtilization();
  const cpu = process.cpuUsage(lastCpu);
  lastCpu = process.cpuUsage();
  lines += `${Math.round(performance.now() - t0)}\t${use.utilization.toFixed(3)}\t${ok}\t${shed}\t${requests}\t${((cpu.user + cpu.system) / 1000).toFixed(1)}\n`;
  ok = shed = requests = 0;
  if (lines.length > 2000) {
    appendFileSync(out, lines);
    lines = '';
  }
}, 50).unref();
process.on('exit', () => appendFileSync(out, lines));
