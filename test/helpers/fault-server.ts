/**
 * What the fault suites share: a real `session-pager serve` process
 * (helpers/server-process.ts) with a token and warm-ups off (the suites
 * measure answers, not speed), a JSON GET against it, and a seeded PRNG
 * so that a failing trial is reproduced from its seed.
 */
import { startServerProcess, type ServerProcess } from './server-process.js';

export const TOKEN = 'fault-suite-token-0123456789';
export const AUTH = { authorization: `Bearer ${TOKEN}` };

export function startFaultServer(dataDir: string, workers = 2): Promise<ServerProcess> {
  return startServerProcess({ dataDir, token: TOKEN, args: ['--workers', String(workers)], env: { SESSION_PAGER_PAGE_WARMUP: '0', SESSION_PAGER_JIT_WARMUP: '0' } });
}

export interface Answer {
  status: number;
  body: unknown;
  text: string;
}

export async function get(base: string, path: string): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { headers: AUTH });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: res.status, body, text };
}

export interface Prng {
  int(n: number): number;
  pick<T>(xs: readonly T[]): T;
  chance(p: number): boolean;
}

/** mulberry32. */
export function prng(seed: number): Prng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (n) => Math.floor(next() * n),
    pick: (xs) => xs[Math.floor(next() * xs.length)] as (typeof xs)[number],
    chance: (p) => next() < p,
  };
}
