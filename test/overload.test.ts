/**
 * Overload, CI-sized (issue 16 item 8): a real server process (two page
 * workers) under clients that ignore Retry-After (a node:http loop in the
 * script's process) and clients that honour it. For each kind, at 256
 * connections an admitted page must wait behind no more pages than the
 * admission gate holds (with slack), the server must serve as many pages per
 * CPU-second as at 4 connections (within a loose factor), and the excess must
 * be shed (503), with no other status and no error. The targets in wall-clock
 * time (p99 within 3x, goodput 90% of capacity) are loadtest/overload.mjs's,
 * measured by hand under the bench lock (docs/benchmarks.md).
 *
 * Why not milliseconds here: the suite runs wherever CI puts it, often beside
 * other test files or measurements on two shared cores, where the CPU this
 * test's processes get changes several-fold between runs seconds apart
 * (0.08-0.5 cores measured, 12-02): the 4- and 256-connection runs then
 * measure the machine, and the old bounds (p99 within 10x, goodput 10% of the
 * 4-connection run) failed a bounded server's attempts and passed an
 * unbounded one's. An admitted answer's wait counted in the pages answered
 * meanwhile, and pages per server CPU-second, do not move with the machine's
 * speed: a bounded server's admitted pages waited behind 22-35 pages (median)
 * on an idle and on a starved machine alike, the unbounded server's
 * (OVERLOAD_TEST_UNBOUNDED=1) behind 99-254 for clients ignoring Retry-After.
 * Tried up to three times.
 * Bounded: 3 s per level.
 */
import { describe, expect, it } from 'vitest';
import { IN_FLIGHT_PER_THREAD, QUEUE_FACTOR } from '../src/main/server/options.js';
import { runOverload } from './helpers/overload-run.js';

const WORKERS = 2;

/**
 * What the gate holds in steady state (admission.ts, options.ts): an admitted page
 * waits behind about this many, the ones in flight and the ones queued before it.
 */
export const GATE_HOLDS = WORKERS * IN_FLIGHT_PER_THREAD * (1 + QUEUE_FACTOR / 2);
/**
 * Bound of this test: the median of an admitted page's wait, in pages answered meanwhile. Not a
 * high percentile: the client reads the answers a starved machine lets through in batches, and the
 * last of a batch of a hundred counts the other ninety-nine (a bounded server's 90th percentile
 * reached 116 pages once, starved, against 25-51 otherwise).
 */
export const MAX_MEDIAN_WAIT_PAGES = 2 * GATE_HOLDS;
/** Pages per server CPU-second at 256 connections over those at 4. */
export const MIN_PAGES_PER_CPU_SHARE = 0.5;

interface Run {
  connections: number;
  mode: string;
  ok?: number;
  goodput: number;
  p99: number | null;
  shed: number;
  other: number;
  errors: number;
  windowSeconds?: number;
  shedAtOnce?: number;
  shedWaited?: number;
  serverMainCpu?: number;
  serverRestCpu?: number;
  p50WaitPages?: number;
  p90WaitPages?: number;
  p99WaitPages?: number;
  metricsScrapes?: number;
}

/** What `--interleave` reports (loadtest/interleave.mjs). */
interface Interleaved {
  low: number;
  high: number;
  totals: { ok: number; shed: number; shedBare: number; other: number; errors: number };
  windows: { conns: number; mode: string; ok: number; goodput: number; cpuSeconds: number | null }[];
  summary: Record<'ignore' | 'honour', { pairs: number; goodput: { median: number; worst: number } }> & { lowControl: { pairs: number } };
}

/** Tiny pages of one long session (the 'older' scenario). */
const OLDER = ['--scenario', 'older', '--max-messages', '3', '--events', '100000', '--tail', '10000'];
/**
 * Issue 15's random 50-message pages over many sessions (~77 KiB each): small enough to be
 * decoded on the main thread when that is allowed, which took the whole load onto the event
 * loop, where admission never saw it queue (no 503, p99 6-7x at 256 connections).
 */
const RANDOM = ['--scenario', 'random', '--max-messages', '50', '--sessions', '20', '--session-events', '5000'];

function measure(workload: string[], extraEnv: Record<string, string> = {}, modes = 'ignore,honour', settle = 0, extraArgs: string[] = []): Promise<{ runs: Run[]; interleave?: Interleaved }> {
  const args = [...workload, '--workers', String(WORKERS), '--connections', '4,256', '--modes', modes, '--duration', '3', '--warmup', '2', '--settle', String(settle), ...extraArgs];
  return runOverload(args, extraEnv);
}

export function verdict(all: Run[]): { ok: boolean; why: string } {
  const each = ['ignore', 'honour'].map((mode) => verdictOf(mode, all.filter((r) => r.mode === mode)));
  return { ok: each.every((v) => v.ok), why: each.map((v) => v.why).join('; ') };
}

function verdictOf(mode: string, runs: Run[]): { ok: boolean; why: string } {
  const low = runs.find((r) => r.connections === 4);
  const high = runs.find((r) => r.connections === 256);
  if (low === undefined || high === undefined) return { ok: false, why: `${mode}: no run at 4 and 256 connections` };
  const ratio = high.p99 !== null && low.p99 !== null ? high.p99 / low.p99 : Infinity;
  const share = high.goodput / Math.max(low.goodput, 1e-9);
  const perCpu = (r: Run) => r.goodput / Math.max((r.serverMainCpu ?? 0) + (r.serverRestCpu ?? 0), 1e-9);
  const cpuShare = perCpu(high) / Math.max(perCpu(low), 1e-9);
  const waits = (r: Run) => `${r.p50WaitPages}/${r.p90WaitPages}/${r.p99WaitPages} pages`;
  const why = `${mode}: 4 conns: ${low.goodput}/s p99 ${low.p99} ms, waits p50/p90/p99 ${waits(low)}; 256 conns: ${high.goodput}/s p99 ${high.p99} ms, waits ${waits(high)}, ${high.shed} shed, ${high.other} other, ${high.errors} errors (p99 ${ratio.toFixed(1)}x, goodput ${(share * 100).toFixed(0)}%, per server CPU-second ${(cpuShare * 100).toFixed(0)}%; server CPU ${((high.serverMainCpu ?? 0) + (high.serverRestCpu ?? 0)).toFixed(2)} cores)`;
  const bounded = (high.p50WaitPages ?? Infinity) <= MAX_MEDIAN_WAIT_PAGES;
  // The excess shed: 503s, unless the clients never got more requests to the server than the gate
  // holds (its admitted pages then waited behind fewer than it holds: nothing was in excess).
  const shedExcess = high.shed > 0 || (high.p50WaitPages ?? Infinity) < GATE_HOLDS / 2;
  const ok = bounded && cpuShare >= MIN_PAGES_PER_CPU_SHARE && shedExcess && high.other === 0 && low.other === 0 && high.errors === 0 && low.errors === 0;
  return { ok, why };
}

describe('overload (real server process, clients ignoring or honouring Retry-After)', () => {
  // OVERLOAD_TEST_UNBOUNDED=1 measures the server as it was before issue 16 (no admission,
  // instant 503s): these tests must then fail (docs/benchmarks.md has such a run).
  const unbounded: Record<string, string> = process.env.OVERLOAD_TEST_UNBOUNDED === '1' ? { SESSION_PAGER_ADMISSION: 'off', SESSION_PAGER_SHED_DELAY_MS: '0' } : {};
  for (const [name, workload] of [
    ['tiny pages of one session', OLDER],
    ['random 50-message pages of many sessions', RANDOM],
  ] as const) {
    it(`${name}: at 256 connections an admitted page waits behind about what the gate holds (median <= ${MAX_MEDIAN_WAIT_PAGES} pages), pages per CPU-second hold (>= ${MIN_PAGES_PER_CPU_SHARE * 100}% of 4 connections'), the excess shed`, async () => {
      const seen: string[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        const { runs } = await measure(workload, unbounded);
        const v = verdict(runs);
        seen.push(`attempt ${attempt}: ${v.why}`);
        console.log(`${name}, attempt ${attempt}: ${v.why}`);
        if (v.ok) return;
      }
      expect.fail(`bounds missed in every attempt:\n${seen.join('\n')}`);
    }, 400_000);
  }

  it('--interleave: windows of 4 and 64 connections alternate, each client kind in turn, all served, each 64 window taken against its neighbours', async () => {
    // What it is for is a measurement by hand (benchmarks.md, "rel (twelfth session)"): here, that
    // the mode runs against a real server and reports what it says, not any figure.
    const { runs, interleave } = await measure(RANDOM, {}, 'ignore,honour', 0, ['--connections', '4,64', '--interleave', '2', '--window', '1.5', '--window-settle', '0.5', '--window-quiet', '0.2', '--window-lead', '0']);
    expect(runs).toEqual([]);
    const il = interleave as Interleaved;
    expect([il.low, il.high]).toEqual([4, 64]);
    expect(il.windows.map((w) => `${w.conns}${w.mode[0]}`)).toEqual(['4i', '64i', '4h', '64h', '4h', '64h', '4i', '64i', '4i']);
    for (const w of il.windows) {
      expect(w.ok).toBeGreaterThan(0);
      // The server's CPU read at the window's edges.
      expect(w.cpuSeconds).toBeGreaterThan(0);
    }
    // Only 2xx and 503s with Retry-After.
    expect([il.totals.other, il.totals.errors, il.totals.shedBare]).toEqual([0, 0, 0]);
    for (const mode of ['ignore', 'honour'] as const) {
      // Every 64 window against the 4 window before and after it.
      expect(il.summary[mode].pairs).toBe(4);
      expect(il.summary[mode].goodput.worst).toBeGreaterThan(0);
      expect(il.summary[mode].goodput.median).toBeGreaterThanOrEqual(il.summary[mode].goodput.worst);
    }
    expect(il.summary.lowControl.pairs).toBe(8);
  }, 200_000);

  it("measures the server's CPU and the gate over the run's own seconds, not the held 503s' drain after it", async () => {
    // Shed answers held 2.5 s: the clients return up to ~2.5 s after the run's 3 s. Measured to
    // their return (as until 12-02), the server's CPU and the gate's totals took in those idle
    // seconds (a 5 s run at 256 connections read as 9 s: half the CPU, the gate "dry" half the time).
    // A gate of one page and no queue, so the run sheds however the CPU is shared: with the default
    // gate, a CI run whose load generator got less CPU than the server shed nothing (12-03).
    // Its checks need a run that shed (answers held past its end); on a starved machine a run may
    // shed nothing, so the run is tried up to three times for one that did. Two failures of 12-03
    // (load 15-20) were runs that never shed: reproduced with the test's processes on one CPU beside
    // a measurement, the 256-connection run got 0.04 cores for the server and 0.01 for the load
    // generator, served 20 pages, and no request met another at the gate (the server counted 0
    // sheds, not only the clients). And a settle second before the measured 3 s: with none, a 503
    // held 2.5 s arrived within the run only if its request was shed in the run's first 0.5 s.
    const gateOfOne = { SESSION_PAGER_MAX_IN_FLIGHT: '1', SESSION_PAGER_MAX_QUEUE: '0' };
    let runs: Run[] = [];
    const seen: string[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      ({ runs } = await measure(RANDOM, { SESSION_PAGER_SHED_DELAY_MS: '2500', ...gateOfOne }, 'ignore', 1));
      const h = runs.find((r) => r.connections === 256);
      seen.push(`attempt ${attempt}: ${h?.ok} 2xx, ${h?.shed} 503s received, ${h?.shedAtOnce}+${h?.shedWaited} shed by the server, server ${h?.serverMainCpu}+${h?.serverRestCpu} cores`);
      if ((h?.shed ?? 0) > 0 && (h?.shedAtOnce ?? 0) + (h?.shedWaited ?? 0) > 0) break;
    }
    console.log(`CPU and gate window: ${seen.join('; ')}`);
    const high = runs.find((r) => r.connections === 256);
    expect(high?.shed, seen.join('\n')).toBeGreaterThan(0);
    for (const r of runs) {
      // The run's 3 s; the drain would make it 5.5 s or more. (The end's timer fires late on a
      // starved machine: 3.27 s seen, so not held to 3.6 s as until 12-03.)
      expect(r.windowSeconds).toBeGreaterThanOrEqual(2.9);
      expect(r.windowSeconds).toBeLessThan(5);
      expect(r.serverMainCpu).toBeGreaterThan(0);
    }
    // Every 503 of admission's is counted as shed at once or after waiting out the queue bound.
    expect((high?.shedAtOnce ?? -1) + (high?.shedWaited ?? -1)).toBeGreaterThan(0);
    // The suite's own scrapes of /metrics (each ~3.7 ms of the server's one loop): the readings at
    // the run's edges and one a second, not the ~34 of a 3 s run sampled every 100 ms as until 12-02.
    for (const r of runs) {
      expect(r.metricsScrapes).toBeGreaterThanOrEqual(3);
      expect(r.metricsScrapes).toBeLessThanOrEqual(10);
    }
  }, 200_000);
});
