/**
 * The parts of prom-client the server uses (its registry, counter, gauge and
 * histogram, and its default process_* and nodejs_* metrics), loaded file by
 * file instead of through its index. The index also loads its Pushgateway,
 * Summary (with tdigest), cluster aggregator and, through the default CPU
 * metric, @opentelemetry/api (51 CommonJS files, used only for exemplars,
 * which the server does not enable): ~65 files a fresh `serve` loaded on its
 * main thread before it could be ready (issue 12). The three CPU counters are
 * made here with prom-client's names, help and values (the CPU used since
 * they were made, by the process's own figures), so /metrics is unchanged.
 *
 * prom-client is pinned (package.json); its files are required by path, and
 * test/metrics-promtool.test.ts and test/server-cjs.test.ts check the names
 * and the text.
 */
import { requireCjs } from './cjs.js';

type Prom = typeof import('prom-client');

// By require(), not import (cjs.ts says why).
const Registry = requireCjs('prom-client/lib/registry') as Prom['Registry'];
const Counter = requireCjs('prom-client/lib/counter') as Prom['Counter'];
const Gauge = requireCjs('prom-client/lib/gauge') as Prom['Gauge'];
const Histogram = requireCjs('prom-client/lib/histogram') as Prom['Histogram'];

export const prom = { Registry, Counter, Gauge, Histogram };

type DefaultMetric = (registry: import('prom-client').Registry, config: Record<string, unknown>) => void;

/** prom-client's default metrics but the CPU counters, in its order (lib/defaultMetrics.js). */
const DEFAULT_METRICS = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  ...(typeof (process as { getActiveResourcesInfo?: unknown }).getActiveResourcesInfo === 'function' ? ['processResources'] : []),
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
];

/** What `collectDefaultMetrics({ register: registry })` registers, without loading @opentelemetry/api. */
export function collectDefaultMetrics(registry: import('prom-client').Registry): void {
  const config = { eventLoopMonitoringPrecision: 10, register: registry };
  cpuCounters(registry);
  for (const name of DEFAULT_METRICS) (requireCjs(`prom-client/lib/metrics/${name}`) as DefaultMetric)(registry, config);
}

/** prom-client's process_cpu_* counters (lib/metrics/processCpuTotal.js without exemplars). */
function cpuCounters(registry: import('prom-client').Registry): void {
  const registers = [registry];
  let last = process.cpuUsage();
  const user = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers,
    // This one metric's `collect` sets all three.
    collect() {
      const now = process.cpuUsage();
      const userMicros = now.user - last.user;
      const systemMicros = now.system - last.system;
      last = now;
      user.inc(userMicros / 1e6);
      system.inc(systemMicros / 1e6);
      total.inc((userMicros + systemMicros) / 1e6);
    },
  });
  const system = new Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers });
  const total = new Counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers });
}
