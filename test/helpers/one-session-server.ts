/**
 * A real server process over a fresh data directory holding one session,
 * `s1`, of `events` events: what the suites that speak raw HTTP to a server
 * (framework errors, timeouts, bodies answered early or too large) start
 * before their cases. Call it from `beforeAll` and `stop` from `afterAll`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/main/store.js';
import { makeEvents } from '../server-helpers.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

export interface OneSessionServer {
  dir: string;
  server: ServerProcess;
  /** Stops the server and removes the data directory. */
  stop(): Promise<void>;
}

export async function oneSessionServer(opts: { prefix: string; token: string; events: number; env?: NodeJS.ProcessEnv; shedding?: boolean }): Promise<OneSessionServer> {
  const dir = await mkdtemp(join(tmpdir(), opts.prefix));
  const store = await openStore({ dataDir: dir, workers: 1 });
  await store.create('s1', { title: 'one' });
  await store.append('s1', makeEvents(0, opts.events));
  await store.close();
  const server = await startServerProcess({ dataDir: dir, token: opts.token, ...(opts.env === undefined ? {} : { env: opts.env }), ...(opts.shedding === undefined ? {} : { shedding: opts.shedding }) });
  return {
    dir,
    server,
    stop: async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
