/**
 * A real redis-server for a test file (Debian's `redis-server`, which
 * `.ci/run` installs), started by the project's own scripts/services.mjs on
 * a free loopback port, its state in a temp dir removed by `stop()`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis, stopAll } from '../../scripts/services.mjs';

export interface RedisServer {
  url: string;
  port: number;
  /** Stop the server, keep the dir (a restart on the same port follows). */
  kill(): Promise<void>;
  /** Start it again on the same port. */
  restart(): Promise<void>;
  /** Stop it and remove its dir. */
  stop(): Promise<void>;
}

type Start = (state: string, opts?: { port?: number }) => Promise<{ url: string; port: number }>;
type Stop = (state: string, opts?: { keep?: boolean; only?: string[] }) => Promise<void>;

export async function startRedisServer(): Promise<RedisServer> {
  const state = mkdtempSync(join(tmpdir(), 'sp-redis-'));
  const { url, port } = await (startRedis as Start)(state);
  return {
    url,
    port,
    kill: () => (stopAll as Stop)(state, { keep: true, only: ['redis'] }),
    restart: async () => {
      await (startRedis as Start)(state, { port });
    },
    stop: () => (stopAll as Stop)(state),
  };
}
