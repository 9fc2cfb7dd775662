/**
 * What a load run measures, kept exactly (every sample, bounded by the
 * run's duration): request latencies, answers by status and error code,
 * follow delivery delays, and 2xx per second (goodput over time).
 */
export interface Percentiles {
  count: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

export function percentiles(samples: readonly number[]): Percentiles {
  const n = samples.length;
  if (n === 0) return { count: 0, p50: NaN, p99: NaN, p999: NaN, max: NaN };
  const s = Float64Array.from(samples).sort();
  const at = (q: number) => s[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))] as number;
  return { count: n, p50: at(0.5), p99: at(0.99), p999: at(0.999), max: s[n - 1] as number };
}

export class Recorder {
  readonly started = Date.now();
  latencies: number[] = [];
  /** Latencies of 2xx answers only (what the server admitted and finished). */
  okLatencies: number[] = [];
  delays: number[] = [];
  appendLatencies: number[] = [];
  byStatus = new Map<string, number>();
  /** Errors by SPEC code (server) or client code (invalid_page, continuity, network, …). */
  byCode = new Map<string, number>();
  /** 2xx answers per whole second since start. */
  okPerSecond: number[] = [];
  requests = 0;
  ok = 0;
  bytes = 0;
  followEvents = 0;
  snapshots = 0;
  reconnects = 0;
  gaps = 0;
  /** Window for the progress line. */
  private windowLat: number[] = [];

  /** One answer; a non-2xx is also counted under `code` unless `countError` is false (counted elsewhere). */
  request(ms: number, status: number | 'error', code?: string, countError = true): void {
    this.requests++;
    this.latencies.push(ms);
    this.windowLat.push(ms);
    const key = String(status);
    this.byStatus.set(key, (this.byStatus.get(key) ?? 0) + 1);
    if (typeof status === 'number' && status >= 200 && status < 300) {
      this.ok++;
      this.okLatencies.push(ms);
      const sec = Math.floor((Date.now() - this.started) / 1000);
      while (this.okPerSecond.length <= sec) this.okPerSecond.push(0);
      this.okPerSecond[sec] = (this.okPerSecond[sec] as number) + 1;
    } else if (countError) {
      this.error(code ?? (status === 'error' ? 'network' : `http_${status}`));
    }
  }

  /** A request that got no answer at all (timeout, reset): no latency sample. */
  failed(code: string): void {
    this.requests++;
    this.byStatus.set('error', (this.byStatus.get('error') ?? 0) + 1);
    this.error(code);
  }

  error(code: string): void {
    this.byCode.set(code, (this.byCode.get(code) ?? 0) + 1);
  }

  delay(ms: number): void {
    this.delays.push(ms);
    this.followEvents++;
  }

  /** p99 of the latencies since the last call (progress line). */
  takeWindow(): Percentiles {
    const p = percentiles(this.windowLat);
    this.windowLat = [];
    return p;
  }
}
