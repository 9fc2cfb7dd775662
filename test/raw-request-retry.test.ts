/**
 * rawRequest (server-helpers.ts) against a server that resets a connection
 * when a request arrives on it: the race where a server closes an idle
 * keep-alive socket just as the client reuses it (it failed a whole CI run
 * once). A GET or HEAD on a reused connection is sent again once, on a new
 * one, and answered; a POST is not (the server may have acted on it): its
 * error surfaces; and a reset on a fresh connection is not retried either
 * (the request reached a server that refused it: no stale socket to blame).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { rawRequest } from './server-helpers.js';

/** A server that answers `ok` and resets the connection of every request `reset` picks (by its number on the connection, from 1). */
interface ResettingServer {
  base: string;
  /** Connections accepted. */
  connections: () => number;
  /** Requests seen: method and number on their connection, reset ones included. */
  seen: string[];
}

const servers: Server[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function resettingServer(reset: (nthOnConnection: number) => boolean): Promise<ResettingServer> {
  let connections = 0;
  const perSocket = new WeakMap<Socket, number>();
  const seen: string[] = [];
  const server = createServer((req, res) => {
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    seen.push(`${req.method} ${n}`);
    if (reset(n)) {
      req.socket.resetAndDestroy();
      return;
    }
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  server.on('connection', () => connections++);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections, seen };
}

describe('rawRequest on a reset connection', () => {
  it.each(['GET', 'HEAD'])('a %s on a reused keep-alive connection the server resets is sent again once, on a new connection, and answered', async (method) => {
    const s = await resettingServer((n) => n === 2);
    expect((await rawRequest(`${s.base}/a`)).status).toBe(200);
    const r = await rawRequest(`${s.base}/b`, { method });
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe(method === 'GET' ? 'ok' : '');
    // The second request reached the first connection (reused) and was reset; its retry came on a second.
    expect(s.seen).toEqual(['GET 1', `${method} 2`, `${method} 1`]);
    expect(s.connections()).toBe(2);
  });

  it('a POST on a reused connection the server resets is not sent again: its error surfaces', async () => {
    const s = await resettingServer((n) => n === 2);
    expect((await rawRequest(`${s.base}/a`)).status).toBe(200);
    await expect(rawRequest(`${s.base}/b`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' })).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(s.seen).toEqual(['GET 1', 'POST 2']);
    expect(s.connections()).toBe(1);
  });

  it('a GET whose fresh connection is reset is not sent again: its error surfaces', async () => {
    const s = await resettingServer((n) => n === 1);
    await expect(rawRequest(`${s.base}/a`)).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(s.seen).toEqual(['GET 1']);
    expect(s.connections()).toBe(1);
  });
});
