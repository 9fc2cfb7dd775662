/**
 * `serve --store s3://bucket/prefix` over a real S3 endpoint: two server
 * processes over one bucket prefix: pages from the reader equal the
 * writer's after every append, the reader cannot write while the writer
 * holds the session (session_busy), `session-pager page --store` prints the
 * same page, and once the writer shuts down cleanly (sealed, lease given
 * back) the other may write.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expandRecords } from '../../src/core/chunk-codec.js';
import type { SessionEvent } from '../../src/core/types.js';
import { testS3Endpoint, testS3Store } from '../helpers/backends.js';
import { chat } from '../helpers/chat-events.js';
import { runBin, startServerProcess, type ServerProcess } from '../helpers/serve-process.js';

const cli = runBin;


describe('serve --store over an S3 endpoint', () => {
  const cfg = testS3Endpoint() as NonNullable<ReturnType<typeof testS3Endpoint>>;
  const prefix = `proc-${randomUUID()}`;
  const url = `s3://${cfg.bucket}/${prefix}`;
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
    const objects = await testS3Store();
    await objects.remove((await objects.list(`${prefix}/`)).names);
  });

  it('a writer and a reader process over one bucket: equal pages after every append, one writer, a clean shutdown hands over', async () => {
    await testS3Store();
    // Admission off: on a loaded machine a correctness test must not be shed (503) for event-loop lag.
    const env = { SESSION_PAGER_ADMISSION: 'off' };
    const w = await startServerProcess({ args: ['--store', url], env });
    servers.push(w);
    // The reader looks at the store on every request (by default it may answer from what it read up to 100 ms ago).
    const r = await startServerProcess({ args: ['--store', url], env: { ...env, SESSION_PAGER_S3_FRESH_MS: '0' } });
    servers.push(r);
    const h = (s: ServerProcess) => ({ authorization: `Bearer ${s.token}`, 'content-type': 'application/json' });
    const put = await fetch(`${w.url}/v1/sessions/x`, { method: 'PUT', headers: h(w), body: JSON.stringify({ title: 's3' }) });
    expect(put.status, await put.text()).toBeLessThan(300);
    let all: SessionEvent[] = [];
    for (const size of [1, 7, 30, 3]) {
      const batch = chat(all.length, size);
      const a = await fetch(`${w.url}/v1/sessions/x/events`, { method: 'POST', headers: h(w), body: JSON.stringify({ events: batch }) });
      expect(a.status, await a.text()).toBe(200);
      all = [...all, ...batch];
      const [pw, pr] = await Promise.all([w, r].map(async (s) => (await fetch(`${s.url}/v1/sessions/x/page?maxMessages=1000`, { headers: h(s) })).json()));
      expect(pr).toEqual(pw);
      expect(expandRecords((pr as { records: never[] }).records)).toEqual(all);
    }
    // The reader process may not write while the writer holds the session.
    const busy = await fetch(`${r.url}/v1/sessions/x/events`, { method: 'POST', headers: h(r), body: JSON.stringify({ events: chat(all.length, 1) }) });
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as { error: { code: string } }).error.code).toBe('session_busy');
    // One page from a fresh process.
    const dir = mkdtempSync(join(tmpdir(), 'sp-s3page-'));
    try {
      const p = cli(['page', 'x', '--max-messages', '3', '--store', url, '--data', dir]);
      expect(p.status, p.stderr).toBe(0);
      expect(p.stderr).toBe('');
      const viaHttp = await (await fetch(`${r.url}/v1/sessions/x/page?maxMessages=3`, { headers: h(r) })).json();
      expect(JSON.parse(p.stdout)).toEqual(viaHttp);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The writer stops cleanly: sealed, lease given back; the other process writes on.
    await w.stop();
    const next = await fetch(`${r.url}/v1/sessions/x/events`, { method: 'POST', headers: h(r), body: JSON.stringify({ events: chat(all.length, 2) }) });
    expect(next.status, await next.text()).toBe(200);
    all = [...all, ...chat(all.length, 2)];
    const page = (await (await fetch(`${r.url}/v1/sessions/x/page?maxMessages=1000`, { headers: h(r) })).json()) as { records: never[] };
    expect(expandRecords(page.records)).toEqual(all);
  }, 300_000);
});
