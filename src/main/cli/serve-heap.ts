/**
 * The serving process's heap release (main/heap-release.ts) as `serve` runs it.
 *
 * SESSION_PAGER_HEAP_RELEASE=0 turns it off (the process keeps what glibc
 * keeps, as before the twenty-first session); SESSION_PAGER_HEAP_QUIET_MS
 * sets the quiet spell (tests shorten it). The binding is loaded only once
 * the warm-up is done, off the path to ready; where glibc cannot be reached
 * the server logs why, once, and serves as before.
 */
import { openGlibcHeap, type HeapOpen } from '../glibc-heap.js';
import { HeapRelease, QUIET_MS } from '../heap-release.js';
import { envNumber, envSwitch } from './env-values.js';

/** Set by bin/session-pager.js when it fixed glibc's mmap threshold itself (not the user: theirs is kept). */
export const LAUNCHER_THRESHOLD_ENV = 'SESSION_PAGER_LAUNCHER_MMAP_THRESHOLD';

export interface HeapReleaseConfig {
  on: boolean;
  quietMs: number;
  raiseThresholds: boolean;
}

/** The heap release's settings from the environment; a bad value refuses to start (env-values.ts). */
export function heapReleaseFromEnv(env: NodeJS.ProcessEnv): HeapReleaseConfig {
  return {
    on: envSwitch(env, 'SESSION_PAGER_HEAP_RELEASE') !== false,
    quietMs: envNumber(env, 'SESSION_PAGER_HEAP_QUIET_MS', { integer: true, min: 10, max: 3_600_000 }) ?? QUIET_MS,
    raiseThresholds: (env[LAUNCHER_THRESHOLD_ENV] ?? '') !== '',
  };
}

/** What requests are counted from: the HTTP server's 'request' event (anything that emits one). */
export interface RequestSource {
  on(event: 'request', listener: () => void): unknown;
  off(event: 'request', listener: () => void): unknown;
}

export interface HeapLog {
  warn(obj: object, msg: string): void;
}

/**
 * Requests on `server` counted from now; once `ready` resolves, the heap found (`open`, tests pass
 * another) and released as heap-release.ts says. Returns the stop (the tick's timer never holds the
 * process open).
 */
export function startHeapRelease(cfg: HeapReleaseConfig, server: RequestSource, ready: Promise<unknown>, log: HeapLog, open: () => HeapOpen = openGlibcHeap): () => void {
  if (!cfg.on) return () => undefined;
  const release = new HeapRelease({ raiseThresholds: cfg.raiseThresholds, onRefused: (what) => log.warn({ heapRelease: what }, 'heap release: a glibc setting was refused') });
  const seen = (): void => release.request();
  server.on('request', seen);
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  ready.then(
    () => {
      if (stopped) return;
      const found = open();
      if (!('heap' in found)) {
        log.warn({ heapRelease: found.unavailable }, 'heap release off: glibc cannot be reached');
        server.off('request', seen);
        return;
      }
      release.ready(found.heap);
      timer = setInterval(() => release.tick(), cfg.quietMs);
      timer.unref();
    },
    () => undefined, // a failed warm-up stops the server (serve.ts)
  );
  return () => {
    stopped = true;
    if (timer !== null) clearInterval(timer);
    server.off('request', seen);
  };
}
