/**
 * The benchmark's SQLite peer over HTTP (bench/peer-server.mjs) must answer
 * the SPEC's page route with the service's page bytes, or the HTTP bench
 * compares different work; and it must speak enough of the SPEC for the
 * load harness (catalog, /metrics, errors in the SPEC's shape). The bench
 * checks its own workloads again before timing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type PagerStore } from '../src/main/store.js';
import { randomLog, type RandomLog } from './helpers/random-log.js';

const ROOT = resolve(import.meta.dirname, '..');
const TOKEN = 'peer-token-0123456789';

describe('SQLite peer over HTTP (bench)', () => {
  let log: RandomLog;
  let store: PagerStore;
  let server: ChildProcess;
  let url = '';
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${TOKEN}`, ...headers } });

  beforeAll(async () => {
    log = await randomLog(31, { maxPieces: 120 });
    const { openPeer, loadSession } = await import('../bench/sqlite-peer.mjs');
    const db = openPeer(join(log.dataDir, 'peer.db'));
    loadSession(db, log.dataDir, log.id);
    db.close();
    store = await openStore({ dataDir: log.dataDir, workers: 1, pageCacheBytes: 0 });
    server = spawn(process.execPath, [join(ROOT, 'bench/peer-server.mjs'), '--db', join(log.dataDir, 'peer.db'), '--port', '0', '--token', TOKEN], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    server.stdout?.on('data', (d) => (out += d));
    server.stderr?.on('data', (d) => (out += d));
    for (let i = 0; i < 600 && url === ''; i++) {
      url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1] ?? '';
      if (url === '') await new Promise((r) => setTimeout(r, 50));
    }
    if (url === '') throw new Error(`peer server did not start: ${out}`);
  }, 60_000);

  afterAll(async () => {
    if (server !== undefined && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    }
    await store?.close();
    log?.cleanup();
  });

  it('answers random pages with the service\'s bytes, identity and gzip', async () => {
    const last = log.events.length - 1;
    let s = 31;
    const rand = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296);
    for (let i = 0; i < 60; i++) {
      const maxMessages = [1, 2, 5, 50][Math.floor(rand() * 4)] as number;
      const params: Record<string, number> = i === 0 ? { maxMessages } : { throughSeq: last, beforeSeq: Math.floor(rand() * (last + 2)), maxMessages };
      const q = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]));
      const mine = (await store.pageBuffer(log.id, params)).body;
      const gzip = i % 3 === 0;
      const res = await get(`/v1/sessions/${log.id}/page?${q}`, { 'accept-encoding': gzip ? 'gzip' : 'identity' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-encoding')).toBe(gzip ? 'gzip' : null);
      // fetch decodes gzip itself; the header says it was coded.
      expect(Buffer.from(await res.arrayBuffer()).toString()).toBe(mine.toString());
    }
    // And the coded bytes themselves are a gzip stream of the page.
    const { request } = await import('node:http');
    const raw = await new Promise<Buffer>((res, rej) => {
      const req = request(`${url}/v1/sessions/${log.id}/page?maxMessages=50`, { headers: { authorization: `Bearer ${TOKEN}`, 'accept-encoding': 'gzip' } }, (r) => {
        const parts: Buffer[] = [];
        r.on('data', (c: Buffer) => parts.push(c));
        r.on('end', () => res(Buffer.concat(parts)));
      });
      req.on('error', rej);
      req.end();
    });
    expect(gunzipSync(raw).toString()).toBe((await store.pageBuffer(log.id, { maxMessages: 50 })).body.toString());
  });

  it('lists its sessions and reports its RSS, as the load harness reads them', async () => {
    const cat = (await (await get('/v1/sessions')).json()) as { sessions: { id: string; status: string; lastSeq: number }[] };
    expect(cat.sessions).toEqual([{ id: log.id, status: 'ok', lastSeq: log.events.length - 1, nextSeq: log.events.length }]);
    const { parseRss } = await import('../src/loadtest/server-metrics.js');
    expect(parseRss(await (await get('/metrics')).text())).toBeGreaterThan(10 * 1024 * 1024);
  });

  it('answers errors in the SPEC\'s shape', async () => {
    const code = async (res: Response) => ({ status: res.status, code: ((await res.json()) as { error: { code: string } }).error.code });
    expect(await code(await fetch(`${url}/v1/sessions`))).toEqual({ status: 401, code: 'unauthorized' });
    expect(await code(await get('/v1/sessions/nope/page'))).toEqual({ status: 404, code: 'session_not_found' });
    expect(await code(await get(`/v1/sessions/${log.id}/page?maxMessages=0`))).toEqual({ status: 400, code: 'invalid_request' });
    expect(await code(await get(`/v1/sessions/${log.id}/page?throughSeq=${log.events.length}`))).toEqual({ status: 400, code: 'invalid_request' });
    expect(await code(await get(`/v1/sessions/${log.id}/page?beforeSeq=-1`))).toEqual({ status: 400, code: 'invalid_request' });
    expect(await code(await get('/v1/nothing'))).toEqual({ status: 404, code: 'not_found' });
  });
});
