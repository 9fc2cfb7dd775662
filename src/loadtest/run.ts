/**
 * `session-pager loadtest`: drives any server that speaks the SPEC with
 * scenarios of real client behaviour (scenarios.ts), from its own process,
 * and reports requests/s, latency p50/p99/p99.9, answers by status and
 * error code, follow delivery delay, goodput per second, the server's RSS
 * (from its /metrics) and how fast it answers once the load stops.
 */
import { setMaxListeners } from 'node:events';
import { SessionPagerClient } from '../client/index.js';
import { mulberry32 } from '../main/gen/prng.js';
import { percentiles, Recorder, type Percentiles } from './recorder.js';
import { attachLoop, randomPages, scrollLoop, writerLoop, type LoopContext, type Target } from './scenarios.js';
import { RssSampler } from './server-metrics.js';
import { sessionTargets } from './targets.js';

export const SCENARIOS = ['attach', 'scroll', 'random', 'writer', 'mix'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export interface LoadConfig {
  url: string;
  token?: string;
  scenario: ScenarioName;
  durationS: number;
  connections: number;
  maxMessages: number;
  /** Attach: how long each follower watches before it detaches, ms. */
  holdMs: number;
  /** Writer: events per append and ms between appends. */
  batch: number;
  appendIntervalMs: number;
  /** Sessions the writer creates are named `<prefix>-<time>`. */
  sessionPrefix: string;
  seed: number;
  /** Progress lines (the caller decides where they go). */
  progress?: (line: string, final: boolean) => void;
}

export interface LoadReport {
  scenario: ScenarioName;
  url: string;
  connections: number;
  durationS: number;
  requests: number;
  requestsPerSec: number;
  ok: number;
  goodputPerSec: number;
  /** Best and median whole-second 2xx counts. */
  goodputBestSecond: number;
  latencyMs: Percentiles;
  okLatencyMs: Percentiles;
  byStatus: Record<string, number>;
  errorsByCode: Record<string, number>;
  follow: { snapshots: number; events: number; reconnects: number; gaps: number; delayMs: Percentiles };
  append: { latencyMs: Percentiles };
  serverRssMb: { start: number | null; peak: number | null; end: number | null };
  afterLoad: { pagesMs: number[]; statuses: number[] };
  bytes: number;
  writerSession: string | null;
}

const mb = (b: number | undefined) => (b === undefined ? null : Math.round(b / 1048576));
const fmt = (v: number) => (Number.isNaN(v) ? '-' : v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : Math.round(v).toString());

/** How the connections are shared in `mix`: half random pages, a quarter scrolling, a quarter following the writer. */
export function mixShares(n: number): { random: number; scroll: number; follow: number } {
  const follow = Math.max(1, Math.round(n * 0.25));
  const scroll = Math.max(n >= 3 ? 1 : 0, Math.round(n * 0.25));
  return { random: Math.max(0, n - follow - scroll), scroll, follow };
}

export async function runLoad(cfg: LoadConfig): Promise<LoadReport> {
  const headers: Record<string, string> = cfg.token === undefined ? {} : { authorization: `Bearer ${cfg.token}` };
  // 0 retries: every 503 is seen and counted.
  const client = new SessionPagerClient({ baseUrl: cfg.url, ...(cfg.token === undefined ? {} : { token: cfg.token }), overloadRetries: 0 });
  const rand = mulberry32(cfg.seed);
  const catalog = await client.sessions();
  const targets: Target[] = await sessionTargets(client, catalog);
  const needsTargets = cfg.scenario !== 'writer';
  if (needsTargets && targets.length === 0) throw new Error(`${cfg.url} has no servable session with events (the ${cfg.scenario} scenario reads existing sessions)`);

  let writerSession: string | null = null;
  if (cfg.scenario === 'writer' || cfg.scenario === 'mix') {
    writerSession = `${cfg.sessionPrefix}-${Date.now().toString(36)}`;
    await client.create(writerSession, { title: 'session-pager loadtest writer' });
  }

  const rss = new RssSampler(cfg.url, headers);
  const rssStart = await rss.sample();
  rss.start(1000);
  const rec = new Recorder();
  const stopper = new AbortController();
  // Every follower listens on it: hundreds at 256 connections, not a leak.
  setMaxListeners(0, stopper.signal);
  const c: LoopContext = { client, rec, stop: stopper.signal, maxMessages: cfg.maxMessages, rand };
  const loops: Promise<unknown>[] = [];
  const n = cfg.connections;
  const writerTargets = writerSession === null ? [] : [{ id: writerSession, lastSeq: 0 }];
  switch (cfg.scenario) {
    case 'attach':
      for (let i = 0; i < n; i++) loops.push(attachLoop(c, targets, cfg.holdMs));
      break;
    case 'scroll':
      for (let i = 0; i < n; i++) loops.push(scrollLoop(c, targets));
      break;
    case 'random':
      loops.push(randomPages(c, { url: cfg.url, headers, connections: n, durationS: cfg.durationS, targets }));
      break;
    case 'writer':
      loops.push(writerLoop(c, writerSession as string, cfg.batch, cfg.appendIntervalMs));
      for (let i = 0; i < Math.max(1, n - 1); i++) loops.push(attachLoop(c, writerTargets, cfg.durationS * 1000 + 5000));
      break;
    case 'mix': {
      const s = mixShares(n);
      loops.push(writerLoop(c, writerSession as string, cfg.batch, cfg.appendIntervalMs));
      for (let i = 0; i < s.follow; i++) loops.push(attachLoop(c, writerTargets, cfg.durationS * 1000 + 5000));
      for (let i = 0; i < s.scroll; i++) loops.push(scrollLoop(c, targets));
      if (s.random > 0) loops.push(randomPages(c, { url: cfg.url, headers, connections: s.random, durationS: cfg.durationS, targets }));
      break;
    }
  }

  let lastReq = 0;
  const tick = setInterval(() => {
    const t = (Date.now() - rec.started) / 1000;
    const w = rec.takeWindow();
    const sheds = rec.byCode.get('overloaded') ?? 0;
    const other = [...rec.byCode.entries()].filter(([k]) => k !== 'overloaded').reduce((a, [, v]) => a + v, 0);
    const follow = rec.followEvents > 0 || rec.snapshots > 0 ? `  follow ${rec.snapshots} snap ${rec.followEvents} ev` : '';
    cfg.progress?.(
      `[${Math.min(cfg.durationS, Math.round(t)).toString().padStart(3)}/${cfg.durationS} s] ${rec.requests} req (${rec.requests - lastReq}/s)  2xx ${rec.ok}  p99 ${fmt(w.p99)} ms  503 ${sheds}  errors ${other}${follow}  rss ${mb(rss.last) ?? '-'} MB`,
      false,
    );
    lastReq = rec.requests;
  }, 1000);
  await new Promise((r) => setTimeout(r, cfg.durationS * 1000));
  const elapsed = (Date.now() - rec.started) / 1000;
  clearInterval(tick);
  stopper.abort(new Error('the run is over'));
  await Promise.allSettled(loops);
  rss.stop();

  // Recovery: the load has stopped; how does the server answer now?
  const afterLoad = { pagesMs: [] as number[], statuses: [] as number[] };
  const probe = targets[0] ?? writerTargets[0];
  if (probe !== undefined) {
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const res = await fetch(client.sessionUrl(probe.id, `/page?maxMessages=${cfg.maxMessages}`), { headers }).catch(() => undefined);
      if (res !== undefined) await res.arrayBuffer().catch(() => undefined);
      afterLoad.pagesMs.push(Math.round((performance.now() - t0) * 100) / 100);
      afterLoad.statuses.push(res?.status ?? 0);
    }
  }
  const rssEnd = await rss.sample();
  const ok = rec.okPerSecond.slice(0, Math.floor(elapsed));
  const report: LoadReport = {
    scenario: cfg.scenario,
    url: cfg.url,
    connections: n,
    durationS: Math.round(elapsed * 10) / 10,
    requests: rec.requests,
    requestsPerSec: rec.requests / elapsed,
    ok: rec.ok,
    goodputPerSec: rec.ok / elapsed,
    goodputBestSecond: ok.length === 0 ? rec.ok : Math.max(...ok),
    latencyMs: percentiles(rec.latencies),
    okLatencyMs: percentiles(rec.okLatencies),
    byStatus: Object.fromEntries(rec.byStatus),
    errorsByCode: Object.fromEntries(rec.byCode),
    follow: { snapshots: rec.snapshots, events: rec.followEvents, reconnects: rec.reconnects, gaps: rec.gaps, delayMs: percentiles(rec.delays) },
    append: { latencyMs: percentiles(rec.appendLatencies) },
    serverRssMb: { start: mb(rssStart), peak: mb(Math.max(rss.peak ?? 0, rssEnd ?? 0) || undefined), end: mb(rssEnd) },
    afterLoad,
    bytes: rec.bytes,
    writerSession,
  };
  return report;
}

export function formatReport(r: LoadReport): string {
  const p = (x: Percentiles) => `p50 ${fmt(x.p50)}  p99 ${fmt(x.p99)}  p99.9 ${fmt(x.p999)}  max ${fmt(x.max)} ms`;
  const codes = Object.entries(r.errorsByCode).map(([k, v]) => `${k} ${v}`).join(', ') || 'none';
  const statuses = Object.entries(r.byStatus).map(([k, v]) => `${k}: ${v}`).join(', ');
  const lines = [
    `scenario ${r.scenario}, ${r.connections} connections, ${r.durationS} s against ${r.url}`,
    `requests   ${r.requests} (${fmt(r.requestsPerSec)}/s); 2xx ${r.ok} (${fmt(r.goodputPerSec)}/s, best second ${r.goodputBestSecond})`,
    `latency    ${p(r.latencyMs)}`,
    `2xx only   ${p(r.okLatencyMs)}`,
    `answers    ${statuses}`,
    `errors     ${codes}`,
  ];
  if (r.follow.snapshots > 0 || r.follow.events > 0) {
    lines.push(`follow     ${r.follow.snapshots} snapshots, ${r.follow.events} live events, ${r.follow.reconnects} reconnects, ${r.follow.gaps} gaps repaired; delivery delay ${p(r.follow.delayMs)}`);
  }
  if (r.append.latencyMs.count > 0) lines.push(`appends    ${r.append.latencyMs.count}: ${p(r.append.latencyMs)}`);
  lines.push(`server RSS ${r.serverRssMb.start ?? '-'} MB at start, peak ${r.serverRssMb.peak ?? '-'} MB, ${r.serverRssMb.end ?? '-'} MB after (from /metrics, sampled each second)`);
  lines.push(`after load ${r.afterLoad.pagesMs.map((m, i) => `${fmt(m)} ms (${r.afterLoad.statuses[i]})`).join(', ')}`);
  if (r.writerSession !== null) lines.push(`writer session ${r.writerSession} (left in place)`);
  return lines.join('\n') + '\n';
}
