/**
 * `serve`'s heap release wiring (src/main/cli/serve-heap.ts): its variables
 * (a bad value refuses to start, naming the variable), and what it does with
 * a server's requests and its readiness, against a recording heap.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { CliError } from '../src/main/cli/common.js';
import { checkServeEnv } from '../src/main/cli/serve-start.js';
import { LAUNCHER_THRESHOLD_ENV, heapReleaseFromEnv, startHeapRelease } from '../src/main/cli/serve-heap.js';
import type { GlibcHeap, HeapOpen } from '../src/main/glibc-heap.js';
import { QUIET_MS } from '../src/main/heap-release.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function recording(): { heap: GlibcHeap; calls: string[] } {
  const calls: string[] = [];
  return { calls, heap: { trim: () => (calls.push('trim'), false), mallopt: (p, v) => (calls.push(`mallopt ${p} ${v}`), true) } };
}

function logRecorder(): { warn(obj: object, msg: string): void; lines: string[] } {
  const lines: string[] = [];
  return { lines, warn: (obj, msg) => lines.push(`${msg} ${JSON.stringify(obj)}`) };
}

const request = (server: ReturnType<typeof createServer>) => server.emit('request', {} as IncomingMessage, {} as ServerResponse);

describe('heapReleaseFromEnv', () => {
  it('defaults: on, a quiet spell of QUIET_MS, thresholds raised only when the launcher set the start’s', () => {
    expect(heapReleaseFromEnv({})).toEqual({ on: true, quietMs: QUIET_MS, raiseThresholds: false });
    expect(heapReleaseFromEnv({ [LAUNCHER_THRESHOLD_ENV]: '262144' })).toEqual({ on: true, quietMs: QUIET_MS, raiseThresholds: true });
    expect(heapReleaseFromEnv({ SESSION_PAGER_HEAP_RELEASE: '0', SESSION_PAGER_HEAP_QUIET_MS: '250' })).toEqual({ on: false, quietMs: 250, raiseThresholds: false });
  });

  it('a bad value refuses to start, naming the variable (checkServeEnv, as serve parses)', () => {
    for (const [name, value, rule] of [
      ['SESSION_PAGER_HEAP_RELEASE', 'yes', 'must be 0 or 1'],
      ['SESSION_PAGER_HEAP_QUIET_MS', '5', 'must be an integer >= 10 and <= 3600000'],
      ['SESSION_PAGER_HEAP_QUIET_MS', '1.5', 'must be an integer'],
    ] as const) {
      let err: unknown;
      try {
        checkServeEnv({ [name]: value });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CliError);
      expect((err as Error).message).toContain(`${name} ${rule}`);
    }
  });
});

describe('startHeapRelease', () => {
  it('after ready: trims and raises; after requests and a quiet tick, trims again; stop ends it', async () => {
    const server = createServer();
    const { heap, calls } = recording();
    let ready!: () => void;
    const stop = startHeapRelease({ on: true, quietMs: 20, raiseThresholds: true }, server, new Promise<void>((r) => (ready = r)), logRecorder(), () => ({ heap }));
    request(server);
    await sleep(60);
    expect(calls).toEqual([]); // nothing before ready
    ready();
    await sleep(5);
    expect(calls).toEqual(['trim', 'mallopt -1 4194304', 'mallopt -3 4194304']);
    request(server);
    await sleep(80);
    expect(calls.filter((c) => c === 'trim')).toHaveLength(2);
    stop();
    expect(server.listenerCount('request')).toBe(0);
    request(server);
    await sleep(80);
    expect(calls.filter((c) => c === 'trim')).toHaveLength(2);
  });

  it('glibc out of reach: says why once, stops listening, serves on', async () => {
    const server = createServer();
    const log = logRecorder();
    const open = (): HeapOpen => ({ unavailable: "glibc's malloc is Linux's (this is darwin)" });
    startHeapRelease({ on: true, quietMs: 20, raiseThresholds: true }, server, Promise.resolve(), log, open);
    await sleep(5);
    expect(log.lines).toEqual([`heap release off: glibc cannot be reached {"heapRelease":"glibc's malloc is Linux's (this is darwin)"}`]);
    expect(server.listenerCount('request')).toBe(0);
  });

  it('off (SESSION_PAGER_HEAP_RELEASE=0), or a failed warm-up: the heap is never looked for', async () => {
    let looked = 0;
    const open = (): HeapOpen => (looked++, { unavailable: 'x' });
    const server = createServer();
    startHeapRelease({ on: false, quietMs: 20, raiseThresholds: true }, server, Promise.resolve(), logRecorder(), open);
    expect(server.listenerCount('request')).toBe(0);
    startHeapRelease({ on: true, quietMs: 20, raiseThresholds: true }, server, Promise.reject(new Error('workers did not start')), logRecorder(), open);
    await sleep(10);
    expect(looked).toBe(0);
  });
});
