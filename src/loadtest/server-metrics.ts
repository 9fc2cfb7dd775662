/**
 * The server's resident memory, read from its Prometheus `/metrics`
 * (`process_resident_memory_bytes`, prom-client's default metrics), so
 * the harness reports the server's RSS whatever process or host it is.
 */
export function parseRss(text: string): number | undefined {
  const m = /^process_resident_memory_bytes(?:\{[^}]*\})?\s+([0-9.eE+]+)\s*$/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

export class RssSampler {
  samples: { t: number; bytes: number }[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;
  failures = 0;

  constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
  ) {}

  async sample(): Promise<number | undefined> {
    try {
      const res = await fetch(`${this.url}/metrics`, { headers: this.headers, signal: AbortSignal.timeout(5000) });
      const rss = res.ok ? parseRss(await res.text()) : undefined;
      if (rss === undefined) this.failures++;
      else this.samples.push({ t: Date.now(), bytes: rss });
      return rss;
    } catch {
      this.failures++;
      return undefined;
    }
  }

  start(everyMs = 1000): void {
    this.timer = setInterval(() => void this.sample(), everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  get last(): number | undefined {
    return this.samples.at(-1)?.bytes;
  }

  get peak(): number | undefined {
    return this.samples.length === 0 ? undefined : Math.max(...this.samples.map((s) => s.bytes));
  }
}
