/**
 * Overload, CI-sized (issue 16 item 8): a real server process under
 * clients that ignore Retry-After (a node:http loop in the script's process) and
 * clients that honour it. For each kind, at 256 connections the admitted
 * pages' p99 must stay within a loose multiple of the 4-connection p99,
 * goodput must hold, and the excess must be shed (503). The targets (3x, 90%) are loadtest/overload.mjs's, by hand
 * (docs/benchmarks.md); here the bounds are looser so a noisy 2-core
 * machine passes, and the measurement is tried up to three times: an
 * unbounded server (p99 tens of times higher, goodput a fraction) fails
 * every attempt. Bounded: 3 s per level, at most three attempts.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SCRIPT = join(ROOT, 'loadtest', 'overload.mjs');

/** Bounds of this test (looser than the targets: 3x and 90%). */
export const MAX_P99_RATIO = 10;
export const MIN_GOODPUT_SHARE = 0.1;

interface Run {
  connections: number;
  mode: string;
  goodput: number;
  p99: number | null;
  shed: number;
  other: number;
  errors: number;
  windowSeconds?: number;
  shedAtOnce?: number;
  shedWaited?: number;
  serverMainCpu?: number;
  metricsScrapes?: number;
}

/** Tiny pages of one long session (the 'older' scenario). */
const OLDER = ['--scenario', 'older', '--max-messages', '3', '--events', '100000', '--tail', '10000'];
/**
 * Issue 15's random 50-message pages over many sessions (~77 KiB each): small enough to be
 * decoded on the main thread when that is allowed, which took the whole load onto the event
 * loop, where admission never saw it queue (no 503, p99 6-7x at 256 connections).
 */
const RANDOM = ['--scenario', 'random', '--max-messages', '50', '--sessions', '20', '--session-events', '5000'];

function measure(workload: string[], extraEnv: Record<string, string> = {}, modes = 'ignore,honour'): Promise<{ runs: Run[] }> {
  return new Promise((resolvePromise, reject) => {
    const serverEnv = Object.entries(extraEnv)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const args = [SCRIPT, '--json', ...workload, '--connections', '4,256', '--modes', modes, '--duration', '3', '--warmup', '2'];
    if (serverEnv) args.push('--server-env', serverEnv);
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`overload.mjs exited ${code}: ${err.trim()}`));
      try {
        resolvePromise(JSON.parse(out.trim().split('\n').at(-1) as string) as { runs: Run[] });
      } catch (e) {
        reject(e as Error);
      }
    });
  });
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
  const why = `${mode}: 4 conns: ${low.goodput}/s p99 ${low.p99} ms; 256 conns: ${high.goodput}/s p99 ${high.p99} ms, ${high.shed} shed, ${high.other} other, ${high.errors} errors (p99 ${ratio.toFixed(1)}x, goodput ${(share * 100).toFixed(0)}%)`;
  const ok = ratio <= MAX_P99_RATIO && share >= MIN_GOODPUT_SHARE && high.shed > 0 && high.other === 0 && low.other === 0;
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
    it(`${name}: keeps admitted p99 at 256 connections within ${MAX_P99_RATIO}x of 4 connections', goodput at ${MIN_GOODPUT_SHARE * 100}% or more, the excess shed`, async () => {
      const seen: string[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        const { runs } = await measure(workload, unbounded);
        const v = verdict(runs);
        seen.push(`attempt ${attempt}: ${v.why}`);
        if (v.ok) return;
      }
      expect.fail(`bounds missed in every attempt:\n${seen.join('\n')}`);
    }, 400_000);
  }

  it("measures the server's CPU and the gate over the run's own seconds, not the held 503s' drain after it", async () => {
    // Shed answers held 2.5 s: the clients return up to ~2.5 s after the run's 3 s. Measured to
    // their return (as until 12-02), the server's CPU and the gate's totals took in those idle
    // seconds (a 5 s run at 256 connections read as 9 s: half the CPU, the gate "dry" half the time).
    const { runs } = await measure(RANDOM, { SESSION_PAGER_SHED_DELAY_MS: '2500' }, 'ignore');
    const high = runs.find((r) => r.connections === 256);
    expect(high?.shed).toBeGreaterThan(0);
    for (const r of runs) {
      expect(r.windowSeconds).toBeGreaterThanOrEqual(2.9);
      expect(r.windowSeconds).toBeLessThan(3.6);
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
