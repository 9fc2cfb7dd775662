/**
 * /metrics is valid Prometheus exposition that `promtool check metrics`
 * (Debian's `prometheus` package; .ci/run installs it) accepts: counters
 * are counters named `_total`, no `quantile` label outside summaries, and
 * prom-client's default process and Node.js metrics under their standard
 * names so stock dashboards work. promtool runs when present and must be
 * present in CI; the same rules are also checked here without it.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../src/main/server/index.js';
import { FOLLOW_IN_FLIGHT_PER_THREAD, IN_FLIGHT_PER_THREAD } from '../src/main/server/options.js';
import { makeEvents, seedSession, tempStore, type TempStore } from './server-helpers.js';

const TOKEN = 'metrics-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let ts: TempStore;
let app: FastifyInstance;
let text = '';

function promtool(): string | null {
  const r = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  return r.error === undefined && r.status === 0 ? 'promtool' : null;
}

beforeAll(async () => {
  ts = await tempStore(1);
  await seedSession(ts.store, 'm', 500, 250);
  app = buildServer(ts.store, { token: TOKEN, maxEventLoopLagMs: 0 });
  // Traffic that fills every labelled series: pages, a 304, errors, an append.
  const page = await app.inject({ url: '/v1/sessions/m/page?throughSeq=400', headers: AUTH });
  await app.inject({ url: '/v1/sessions/m/page?throughSeq=400', headers: { ...AUTH, 'if-none-match': page.headers.etag as string } });
  await app.inject({ url: '/v1/sessions/m/page?maxMessages=3', headers: { ...AUTH, 'accept-encoding': 'br' } });
  await app.inject({ url: '/v1/sessions/nope/page', headers: AUTH });
  await app.inject({ url: '/v1/sessions' });
  await app.inject({ method: 'POST', url: '/v1/sessions/m/events', headers: AUTH, payload: { events: makeEvents(500, 5) } });
  const r = await app.inject({ url: '/metrics', headers: AUTH });
  expect(r.statusCode).toBe(200);
  text = r.body;
});

afterAll(async () => {
  await app.close();
  await ts.cleanup();
});

/** name -> type, from the # TYPE lines. */
function types(): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1]!, m[2]!);
  return out;
}

describe('/metrics', () => {
  it('passes promtool check metrics (required in CI)', () => {
    const tool = promtool();
    if (process.env.CI) expect(tool, 'promtool must be installed in CI (.ci/run installs prometheus)').not.toBeNull();
    if (tool === null) return;
    const r = spawnSync(tool, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('names counters _total, keeps quantile labels to summaries, and nothing else ends in _total', () => {
    const t = types();
    expect(t.size).toBeGreaterThan(30);
    for (const [name, type] of t) {
      if (type === 'counter') expect(name, name).toMatch(/_total$/);
      else expect(name, `${name} (${type})`).not.toMatch(/_total$/);
    }
    for (const line of text.split('\n')) {
      if (line.startsWith('#') || !line.includes('quantile=')) continue;
      const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0];
      expect(t.get(name), line).toBe('summary');
    }
    // The store's running counts are counters now.
    for (const name of ['pool_tasks_completed', 'cache_hits', 'cache_misses', 'page_cache_hits', 'store_pages_served', 'not_modified', 'errors', 'pages_served']) {
      expect(t.get(`session_pager_${name}_total`), name).toBe('counter');
    }
    expect(text).toMatch(/^session_pager_not_modified_total\{route="\/v1\/sessions\/:id\/page"\} 1$/m);
    expect(text).toMatch(/^session_pager_store_pages_served_total [1-9]\d*$/m);
  });

  it('exposes both admission gates, the page gate and the follow gate, as gauges and counters', () => {
    const t = types();
    for (const gate of ['admission', 'follow_admission']) {
      for (const g of ['in_flight', 'queued', 'max_in_flight', 'queue_bound_seconds']) expect(t.get(`session_pager_${gate}_${g}`), `${gate}_${g}`).toBe('gauge');
    }
    for (const c of ['admission_shed_total', 'admission_shed_waited_total', 'follow_shed_total', 'follow_shed_waited_total']) expect(t.get(`session_pager_${c}`), c).toBe('counter');
    // The default sizing on one worker thread (options.ts).
    expect(text).toMatch(new RegExp(`^session_pager_admission_max_in_flight ${IN_FLIGHT_PER_THREAD}$`, 'm'));
    expect(text).toMatch(new RegExp(`^session_pager_follow_admission_max_in_flight ${FOLLOW_IN_FLIGHT_PER_THREAD}$`, 'm'));
  });

  it("exposes prom-client's default metrics under their standard names", () => {
    const t = types();
    for (const [name, type] of [
      ['process_cpu_user_seconds_total', 'counter'],
      ['process_cpu_seconds_total', 'counter'],
      ['process_start_time_seconds', 'gauge'],
      ['process_resident_memory_bytes', 'gauge'],
      ['process_open_fds', 'gauge'],
      ['nodejs_heap_size_used_bytes', 'gauge'],
      ['nodejs_eventloop_lag_p99_seconds', 'gauge'],
      ['nodejs_gc_duration_seconds', 'histogram'],
      ['nodejs_version_info', 'gauge'],
      ['nodejs_active_handles', 'gauge'],
    ] as const) {
      expect(t.get(name), name).toBe(type);
    }
    expect(text).not.toMatch(/^session_pager_(process|nodejs)_/m);
  });
});
