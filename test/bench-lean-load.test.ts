/**
 * bench/lean-load.mjs, the capacity lane's generator: it frames answers from their heads and counts
 * body bytes without decoding them, so these check that the counting is exact (Content-Length and
 * chunked bodies, split over reads), that a server closing after a 503 is followed on a new
 * connection without an error, and that a wrong body passes neither the sampled check: a server
 * that answers fast with one byte off fails the run.
 */
import { execFile } from 'node:child_process';
import { writeFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomLog } from './helpers/random-log.js';

const ROOT = resolve(import.meta.dirname, '..');
const run = promisify(execFile);

type Mode = 'length' | 'chunked' | 'shed' | 'wrong';

describe('bench/lean-load.mjs', () => {
  let log: Awaited<ReturnType<typeof randomLog>>;
  let db: string;
  let pagesFile: string;
  let peer: { page: (id: string, params: Record<string, number>) => Buffer; close: () => void };
  beforeAll(async () => {
    const { openPeer, loadSession, PeerReader } = await import('../bench/sqlite-peer.mjs');
    log = await randomLog(31, { maxPieces: 60 });
    db = join(log.dataDir, 'peer.db');
    const w = openPeer(db);
    loadSession(w, log.dataDir, log.id);
    w.close();
    peer = new PeerReader(db);
    pagesFile = join(log.dataDir, 'pages.json');
    writeFileSync(pagesFile, JSON.stringify([{ id: log.id, params: { throughSeq: log.events.length - 1, beforeSeq: log.events.length, maxMessages: 5 } }]));
  });
  afterAll(() => {
    peer.close();
    log.cleanup();
    rmSync(db, { force: true });
  });

  /** A server answering the peer reader's pages as `mode` says; `sent` lists the body lengths of the 200s in order. */
  async function serve(mode: Mode) {
    const sent: number[] = [];
    let n = 0;
    const server = http.createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      const id = decodeURIComponent(u.pathname.split('/')[3] ?? '');
      const params = Object.fromEntries([...u.searchParams].map(([k, v]) => [k, Number(v)]));
      const body = peer.page(id, params);
      n++;
      if (mode === 'shed' && n % 3 === 0) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', connection: 'close', 'content-length': 2 });
        res.end('{}');
        return;
      }
      if (mode === 'wrong') body[Math.floor(body.length / 2)] ^= 1;
      sent.push(body.length);
      if (mode === 'chunked') {
        // No Content-Length: node frames it chunked; three writes, three chunks.
        res.writeHead(200, { 'content-type': 'application/json' });
        const third = Math.ceil(body.length / 3);
        res.write(body.subarray(0, third));
        res.write(body.subarray(third, 2 * third));
        res.end(body.subarray(2 * third));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { url, sent, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
  }

  /** One lane of the generator (a child process, as http-cpu.mjs runs it) at 1 connection, with the check. */
  async function lane(url: string) {
    const { stdout } = await run(process.execPath, [join(ROOT, 'bench/lean-load.mjs'), '--url', url, '--token', 't', '--pages', pagesFile, '--random', '--connections', '1', '--seconds', '1', '--check-db', db, '--sample-every', '5'], { encoding: 'utf8' });
    return JSON.parse(stdout.trim().split('\n').pop() as string);
  }

  it.each(['length', 'chunked'] as const)('counts every body byte of %s-framed answers, and checks the sampled ones', async (mode) => {
    const s = await serve(mode);
    try {
      const r = await lane(s.url);
      expect(r.requests).toBeGreaterThan(10);
      expect(r.byStatus).toEqual({ 200: r.requests });
      expect(r.errors).toBe(0);
      // One connection: the answers counted are the first ones the server sent, in order.
      expect(r.bytes).toBe(s.sent.slice(0, r.requests).reduce((a, b) => a + b, 0));
      expect(r.checked).toBe(Math.min(200, Math.ceil(r.requests / 5)));
    } finally {
      await s.close();
    }
  });

  it('counts a 503 that closes its connection and goes on with a new one, without an error', async () => {
    const s = await serve('shed');
    try {
      const r = await lane(s.url);
      expect(r.byStatus[503]).toBeGreaterThan(3);
      expect(r.byStatus[200]).toBeGreaterThan(2 * r.byStatus[503] - 2);
      expect(r.errors).toBe(0);
      expect(r.checked).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });

  it('fails the run when a body differs from the peer reader\'s page', async () => {
    const s = await serve('wrong');
    try {
      await expect(lane(s.url)).rejects.toThrow(/differs from the peer reader's/);
    } finally {
      await s.close();
    }
  });
});
