/**
 * `session-pager loadtest` in its own process against a real server
 * process: each scenario briefly, with the report read as JSON. What must
 * hold: requests answered, no error but shedding, pages and joins checked
 * by the client library without complaint, follow events delivered with a
 * measured delay, the server's RSS read from /metrics, the server answering
 * once the load stops; and bad flags refused with a usage error.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, startServerProcess, type ServerProcess } from './helpers/serve-process.js';
import type { LoadReport } from '../src/loadtest/run.js';

let server: ServerProcess;

beforeAll(async () => {
  server = await startServerProcess({ workers: 1 });
  const gen = spawnSync(process.execPath, [BIN, 'gen', '--data', server.dir, '--events', '20000', '--sessions', '4', '--seed', '9'], { encoding: 'utf8' });
  expect(gen.status, gen.stderr).toBe(0);
});

afterAll(async () => {
  await server?.stop();
});

function loadtest(args: string[], url = server.url): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'loadtest', '--url', url, ...args], { env: { ...process.env, SESSION_PAGER_TOKEN: server.token } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

function onlyShedding(r: LoadReport): void {
  const codes = Object.keys(r.errorsByCode).filter((k) => k !== 'overloaded');
  expect(codes, JSON.stringify(r.errorsByCode)).toEqual([]);
  for (const s of Object.keys(r.byStatus)) expect(['200', '201', '503']).toContain(s);
}

describe('session-pager loadtest', () => {
  for (const scenario of ['random', 'scroll', 'attach', 'writer', 'mix'] as const) {
    it(`runs ${scenario} against a real server and reports it`, async () => {
      const r = await loadtest(['--scenario', scenario, '--duration', '3', '--connections', '4', '--hold', '300', '--json']);
      expect(r.code, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout) as LoadReport;
      expect(report.scenario).toBe(scenario);
      expect(report.durationS).toBeGreaterThanOrEqual(3);
      expect(report.ok).toBeGreaterThan(0);
      expect(report.requestsPerSec).toBeGreaterThan(0);
      expect(report.latencyMs.p50).toBeGreaterThan(0);
      expect(report.latencyMs.p99).toBeGreaterThanOrEqual(report.latencyMs.p50);
      expect(report.latencyMs.p999).toBeGreaterThanOrEqual(report.latencyMs.p99);
      onlyShedding(report);
      expect(report.serverRssMb.peak).toBeGreaterThan(20);
      expect(report.afterLoad.statuses).toEqual([200, 200, 200, 200, 200]);
      // A progress line each second on stderr (not a terminal here: one line per tick). Its label is
      // the elapsed time rounded: on a starved machine the first tick can come at 1.6 s ("2/3 s").
      expect(r.stderr).toMatch(/^\[ {2}[1-3]\/3 s\] \d+ req \(\d+\/s\) {2}2xx \d+ {2}p99 \S+ ms {2}503 \d+ {2}errors \d+/m);
      if (scenario === 'attach' || scenario === 'writer' || scenario === 'mix') expect(report.follow.snapshots).toBeGreaterThan(0);
      if (scenario === 'writer' || scenario === 'mix') {
        expect(report.append.latencyMs.count).toBeGreaterThan(5);
        expect(report.follow.events).toBeGreaterThan(50);
        expect(report.follow.delayMs.p99).toBeGreaterThanOrEqual(0);
        expect(report.follow.delayMs.p99).toBeLessThan(5000);
        expect(report.writerSession).toMatch(/^loadtest-/);
      }
    });
  }

  it('drives a server whose catalog names only each session\'s id (the SPEC fixes no other field): ends read from tail pages', async () => {
    // A SPEC server but for the catalog's extra fields: this one, behind a proxy that keeps only `id`.
    const upstream = new URL(server.url);
    let catalogs = 0;
    const proxy: Server = createServer((req, res) => {
      const bare = req.method === 'GET' && new URL(req.url ?? '/', 'http://x').pathname === '/v1/sessions';
      const headers = { ...req.headers, host: upstream.host, ...(bare ? { 'accept-encoding': 'identity' } : {}) };
      const up = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (ur) => {
        if (!bare || ur.statusCode !== 200) {
          res.writeHead(ur.statusCode ?? 502, ur.headers);
          ur.pipe(res);
          return;
        }
        const parts: Buffer[] = [];
        ur.on('data', (c: Buffer) => parts.push(c));
        ur.on('end', () => {
          catalogs++;
          const { sessions } = JSON.parse(Buffer.concat(parts).toString()) as { sessions: { id: string }[] };
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ sessions: sessions.map((s) => ({ id: s.id })) }));
        });
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    try {
      for (const scenario of ['random', 'scroll'] as const) {
        const r = await loadtest(['--scenario', scenario, '--duration', '2', '--connections', '2', '--json'], url);
        expect(r.code, r.stderr).toBe(0);
        const report = JSON.parse(r.stdout) as LoadReport;
        expect(report.ok).toBeGreaterThan(0);
        onlyShedding(report);
      }
      expect(catalogs).toBe(2);
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });

  it('prints a readable report without --json', async () => {
    const r = await loadtest(['--scenario', 'random', '--duration', '1', '--connections', '2']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^scenario random, 2 connections/);
    expect(r.stdout).toMatch(/latency +p50 [\d.]+ +p99 [\d.]+ +p99\.9 [\d.]+/);
    expect(r.stdout).toMatch(/server RSS \d+ MB at start, peak \d+ MB/);
  });

  it('refuses bad flags with a usage error, and an unreachable server with one line', async () => {
    const noUrl = spawnSync(process.execPath, [BIN, 'loadtest', '--scenario', 'random'], { encoding: 'utf8' });
    expect(noUrl.status).toBe(2);
    expect(noUrl.stderr).toMatch(/--url is required/);
    const bad = spawnSync(process.execPath, [BIN, 'loadtest', '--url', server.url, '--scenario', 'nope'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    const long = spawnSync(process.execPath, [BIN, 'loadtest', '--url', server.url, '--duration', '601'], { encoding: 'utf8' });
    expect(long.status).toBe(2);
    expect(long.stderr).toMatch(/at most 600/);
    const dead = spawnSync(process.execPath, [BIN, 'loadtest', '--url', 'http://127.0.0.1:9', '--duration', '1'], { encoding: 'utf8' });
    expect(dead.status).toBe(1);
    expect(dead.stderr.trim().split('\n')).toHaveLength(1);
    expect(dead.stderr).toMatch(/session-pager loadtest: .*(fetch failed|ECONNREFUSED)/);
  });
});
