#!/usr/bin/env node
// HTTP load for bench/peer-bench.mjs, in a process of its own (never the
// server's, nor the bench's): autocannon against one server, one JSON line
// out. Pages are either the workload's fixed list (--pages FILE, cycled:
// the tail page) or fresh random 50-message pages over the sessions in it
// (--random: a random session and beforeSeq per request, pinned at the
// session's last seq, as `session-pager loadtest --scenario random` asks).
//
//   node bench/http-load.mjs --url URL --token T --pages FILE [--random] [--seed N]
//        --connections N --seconds S [--accept-encoding E]
import { readFileSync } from 'node:fs';
import { parseScriptArgs } from './args.mjs';
import { LOAD_OPTIONS } from './load-options.mjs';
import { pageDraw, pagePath } from './page-draw.mjs';
import autocannon from 'autocannon';

const { values } = parseScriptArgs(import.meta.url, {
  options: LOAD_OPTIONS,
});
const pages = JSON.parse(readFileSync(values.pages, 'utf8')); // [{ id, params }]
const nextPage = pageDraw(pages, { seed: values.seed, random: values.random });
const pathOf = () => pagePath(nextPage());
const byStatus = {};
const inst = autocannon({
  url: values.url,
  connections: Number(values.connections),
  duration: Number(values.seconds),
  timeout: 30,
  headers: { authorization: `Bearer ${values.token}`, 'accept-encoding': values['accept-encoding'] },
  requests: [{ setupRequest: (req) => ({ ...req, method: 'GET', path: pathOf() }) }],
});
inst.on('response', (_c, status) => (byStatus[status] = (byStatus[status] ?? 0) + 1));
const cpu0 = process.cpuUsage();
const lane0 = process.hrtime.bigint(); // CLOCK_MONOTONIC, the clock of a --cpu-prof profile's timestamps
const r = await inst;
const cpu = process.cpuUsage(cpu0);
const lane1 = process.hrtime.bigint();
const ok = byStatus[200] ?? 0;
process.stdout.write(
  `${JSON.stringify({
    generator: 'autocannon',
    connections: Number(values.connections),
    seconds: Number(values.seconds),
    requests: r.requests.total,
    rps: r.requests.total / Number(values.seconds),
    okPerSec: ok / Number(values.seconds),
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    byStatus,
    errors: r.errors,
    timeouts: r.timeouts,
    bytes: r.throughput.total,
    // This process's CPU over the lane, a request (autocannon runs in it): what the generator takes from a shared machine.
    generatorCpuMsPerRequest: r.requests.total === 0 ? NaN : Math.round(((cpu.user + cpu.system) / 1000 / r.requests.total) * 1000) / 1000,
    generatorSysMsPerRequest: r.requests.total === 0 ? NaN : Math.round((cpu.system / 1000 / r.requests.total) * 1000) / 1000,
    // The lane's window in µs of CLOCK_MONOTONIC: a CPU profile of this process (--cpu-prof) cut to it.
    laneMonotonicUs: [Number(lane0 / 1000n), Number(lane1 / 1000n)],
  })}\n`,
);
