/**
 * The heap release in a real `serve` process (src/main/heap-release.ts), read
 * from its /metrics: started as a command, the launcher fixes glibc's mmap
 * threshold for the start and the server raises it once ready and gives its
 * freed memory back after the warm-up and after each quiet spell; started by
 * `node` (no launcher) it trims but sets no threshold; with
 * SESSION_PAGER_HEAP_RELEASE=0 it does neither.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'bin/session-pager.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function withServe(asCommand: boolean, env: NodeJS.ProcessEnv, body: (metric: (name: string) => Promise<number>) => Promise<void>): Promise<void> {
  const data = mkdtempSync(join(tmpdir(), 'sp-heap-'));
  const e: NodeJS.ProcessEnv = { ...process.env, SESSION_PAGER_JIT_WARMUP: '0', SESSION_PAGER_PAGE_WARMUP: '0', SESSION_PAGER_HEAP_QUIET_MS: '50', ...env };
  delete e.GLIBC_TUNABLES;
  delete e.SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD;
  const args = ['serve', '--data', data, '--port', '0', '--workers', '1', '--log-level', 'warn'];
  const child = asCommand ? spawn(bin, args, { env: e, stdio: ['ignore', 'ignore', 'pipe'] }) : spawn(process.execPath, [bin, ...args], { env: e, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  try {
    let url = '';
    for (let i = 0; url === ''; i++) {
      expect(i, err).toBeLessThan(400);
      url = /listening on (http:\/\/\S+)/.exec(err)?.[1] ?? '';
      await sleep(50);
    }
    for (let i = 0; (await fetch(`${url}/readyz`)).status !== 200; i++) {
      expect(i, err).toBeLessThan(400);
      await sleep(50);
    }
    await sleep(20); // the heap is looked for once ready resolves
    const metric = async (name: string): Promise<number> => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name} `));
      expect(line, `${name} in /metrics`).toBeDefined();
      return Number((line as string).split(' ')[1]);
    };
    await body(metric);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(data, { recursive: true, force: true });
  }
  expect(err).not.toMatch(/heap release off|refused/);
}

describe('serve: the heap release, from /metrics', () => {
  it('as a command: the threshold raised once ready; a trim after the warm-up, another after a quiet spell', async () => {
    await withServe(true, {}, async (metric) => {
      expect(await metric('session_pager_heap_mmap_threshold_bytes')).toBe(4 * 1024 * 1024);
      const first = await metric('session_pager_heap_trims_total');
      expect(first).toBeGreaterThanOrEqual(1);
      // That scrape was a request: a quiet spell (50-100 ms) after it gives memory back again.
      await sleep(300);
      expect(await metric('session_pager_heap_trims_total')).toBeGreaterThan(first);
    });
  });

  it('under node without the launcher: trims, glibc’s own threshold kept', async () => {
    await withServe(false, {}, async (metric) => {
      expect(await metric('session_pager_heap_mmap_threshold_bytes')).toBe(0);
      expect(await metric('session_pager_heap_trims_total')).toBeGreaterThanOrEqual(1);
    });
  });

  it('SESSION_PAGER_HEAP_RELEASE=0: neither', async () => {
    await withServe(true, { SESSION_PAGER_HEAP_RELEASE: '0' }, async (metric) => {
      await sleep(200);
      expect(await metric('session_pager_heap_mmap_threshold_bytes')).toBe(0);
      expect(await metric('session_pager_heap_trims_total')).toBe(0);
    });
  });
});
