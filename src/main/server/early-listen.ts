/**
 * Listening before the app exists. Loading fastify, its plugins and the
 * store, compiling the route schemas and building the OpenAPI document take
 * several hundred milliseconds of a fresh `serve` (more on a loaded
 * machine), so `serve` binds its port with a bare node:http server first
 * (a port clash fails in milliseconds), answers `/livez` from it at once,
 * and holds every other request until the app is ready, which then serves
 * it as if it had just arrived: nothing asked early is refused.
 *
 * The app takes this server over through fastify's `serverFactory`
 * (`ServerOptions.serverFactory`); fastify then never "listens" itself, so
 * closing is ours (`close()`): stop accepting, close idle connections, wait
 * for the busy ones.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeTimeouts } from './options.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface EarlyListenOptions {
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** Requests held until the app is ready, at most (default 1024); more get `overloaded`. */
  maxHeld?: number;
  retryAfterSeconds?: number;
}

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

export class EarlyListener {
  readonly server: Server;
  private readonly held: [IncomingMessage, ServerResponse][] = [];
  private readonly maxHeld: number;
  private readonly retryAfter: number;
  /** The app's handler, given by fastify when it builds the app (serverFactory)... */
  private appHandler: Handler | null = null;
  /** ...and used once the app is ready (open()). */
  private handler: Handler | null = null;
  private failure: string | null = null;

  constructor(o: EarlyListenOptions) {
    this.maxHeld = o.maxHeld ?? 1024;
    this.retryAfter = o.retryAfterSeconds ?? 1;
    // The settings fastify gives a server it makes (its lib/server.js), with the app's values.
    // With the node settings that make the request timeout hold (options.ts).
    this.server = createServer(nodeTimeouts(o.requestTimeoutMs), (req, res) => this.onRequest(req, res));
    this.server.keepAliveTimeout = o.keepAliveTimeoutMs;
    this.server.requestTimeout = o.requestTimeoutMs;
    this.server.setTimeout(0);
    this.server.maxConnections = o.maxConnections;
  }

  /** Bind; resolves to the URL, rejects with the listen error (EADDRINUSE, ...). */
  listen(host: string, port: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen({ host, port }, () => {
        this.server.off('error', onError);
        const a = this.server.address() as AddressInfo;
        resolve(`http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
      });
    });
  }

  /** For fastify's `serverFactory`: the app's requests come from this server. */
  readonly factory = (handler: Handler): Server => {
    this.appHandler = handler;
    return this.server;
  };

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    if (this.handler !== null) return this.handler(req, res);
    if (this.failure !== null) return answer(res, 500, { error: { code: 'internal', message: this.failure } });
    // The process is up: that is all /livez says (readiness.ts), and it needs no app.
    if (req.method === 'GET' && (req.url === '/livez' || req.url?.startsWith('/livez?') === true)) return answer(res, 200, { status: 'ok' });
    if (this.held.length >= this.maxHeld) {
      return answer(res, 503, { error: { code: 'overloaded', message: 'the server is starting; retry shortly' } }, { 'retry-after': String(this.retryAfter) });
    }
    this.held.push([req, res]);
  }

  /** The app is ready: it serves what was held, in arrival order, and everything after. */
  open(): void {
    if (this.appHandler === null) throw new Error('the app was not built on this server (ServerOptions.serverFactory)');
    const h = this.appHandler;
    this.handler = h;
    for (const [req, res] of this.held.splice(0)) if (!res.destroyed && !res.writableEnded) h(req, res);
  }

  /** The app could not be built: what was held, and anything asked before close(), gets `internal`. */
  fail(reason: string): void {
    this.failure = reason;
    for (const [, res] of this.held.splice(0)) if (!res.destroyed && !res.writableEnded) answer(res, 500, { error: { code: 'internal', message: reason } });
  }

  get heldCount(): number {
    return this.held.length;
  }

  /** Stop accepting, close idle keep-alive connections, resolve when every connection has ended. */
  close(): Promise<void> {
    if (!this.server.listening) return Promise.resolve();
    return new Promise((resolve) => {
      // Connections that finish their last response later (follow streams just ended) go idle
      // then, not now: close those too as they do, rather than after the keep-alive timeout.
      const sweep = setInterval(() => this.server.closeIdleConnections(), 50);
      this.server.close(() => {
        clearInterval(sweep);
        resolve();
      });
      this.server.closeIdleConnections();
    });
  }
}
