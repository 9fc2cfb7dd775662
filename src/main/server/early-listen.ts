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
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KEEP_ALIVE_DRAIN_BYTES, settleUnreadBody, type EarlyAnswerOptions } from './early-answer.js';
import { ConnectionLimiter } from './connection-limit.js';
import { nodeTimeouts } from './options.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** Every address a name resolves to (`dns.lookup` with `all`; tests pass their own). */
export type LookupAll = (host: string) => Promise<LookupAddress[]>;

const lookupAll: LookupAll = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

export interface EarlyListenOptions {
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** Requests held until the app is ready, at most (default 1024); more get `overloaded`. */
  maxHeld?: number;
  retryAfterSeconds?: number;
  /** How `localhost` is resolved (default `dns.lookup`, every address). */
  lookup?: LookupAll;
}

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/** The app's bounds for a body an answer leaves unread (server/index.ts), at the default body limit. */
const EARLY_ANSWERS: EarlyAnswerOptions = { keepAliveDrain: KEEP_ALIVE_DRAIN_BYTES, linger: { bytes: 64 * 1024 * 1024, ms: 10_000 } };

/** A refusal before the app exists: a body it leaves unread is settled as the app's answers settle it (early-answer.ts). */
function refuse(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  settleUnreadBody(req, EARLY_ANSWERS, (close) => {
    if (!res.destroyed && !res.writableEnded) answer(res, status, body, close ? { ...headers, connection: 'close' } : headers);
  });
}

export class EarlyListener {
  /** The server the app is built on (the first address bound). */
  readonly server: Server;
  /** Every server listening: `server`, then one per further address of `localhost`. */
  private readonly servers: Server[];
  private readonly options: EarlyListenOptions;
  private readonly held: [IncomingMessage, ServerResponse][] = [];
  private readonly maxHeld: number;
  private readonly retryAfter: number;
  /** The app's handler, given by fastify when it builds the app (serverFactory)... */
  private appHandler: Handler | null = null;
  /** ...and used once the app is ready (open()). */
  private handler: Handler | null = null;
  private failure: string | null = null;
  /** The connection limit of every server listening, together, from the first connection (connection-limit.ts). */
  readonly limiter: ConnectionLimiter;

  constructor(o: EarlyListenOptions) {
    this.options = o;
    this.limiter = new ConnectionLimiter({ maxConnections: o.maxConnections, retryAfterSeconds: o.retryAfterSeconds ?? 1 });
    this.maxHeld = o.maxHeld ?? 1024;
    this.retryAfter = o.retryAfterSeconds ?? 1;
    this.server = this.makeServer();
    this.servers = [this.server];
  }

  private makeServer(): Server {
    const o = this.options;
    // The settings fastify gives a server it makes (its lib/server.js), with the app's values.
    // With the node settings that make the request timeout hold (options.ts).
    const server = createServer(nodeTimeouts(o.requestTimeoutMs), (req, res) => this.onRequest(req, res));
    server.keepAliveTimeout = o.keepAliveTimeoutMs;
    server.requestTimeout = o.requestTimeoutMs;
    server.setTimeout(0);
    // Past the limit a connection is answered 503 overloaded, not reset, from the start (the app
    // counts the sheds when it is built: index.ts).
    this.limiter.install(server);
    return server;
  }

  /**
   * Bind; resolves to the URL (of the first address), rejects with the listen
   * error (EADDRINUSE, ...). `localhost` is bound on every address it resolves
   * to (127.0.0.1 and ::1, typically), as fastify's own listen does: the first
   * address as asked (its error fails the start), the others on the same port,
   * each by a server of its own feeding the same handler; an address that
   * cannot be bound there (no IPv6, say) is skipped, as fastify skips it.
   */
  async listen(host: string, port: number): Promise<string> {
    let addresses: string[] = [host];
    if (host === 'localhost') {
      const found = await (this.options.lookup ?? lookupAll)(host).catch(() => []);
      const unique = [...new Set(found.map((a) => a.address))];
      if (unique.length > 0) addresses = unique;
    }
    const [first, ...rest] = addresses;
    await bind(this.server, first!, port);
    const bound = (this.server.address() as AddressInfo).port;
    for (const address of rest) {
      const extra = this.makeServer();
      try {
        await bind(extra, address, bound);
        this.servers.push(extra);
      } catch {
        // Not bindable here (EADDRNOTAVAIL, EAFNOSUPPORT, in use): the first address serves.
      }
    }
    const a = this.server.address() as AddressInfo;
    return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  }

  /** Every address listened on, as `host:port` (IPv6 in brackets). */
  get addresses(): string[] {
    return this.servers.map((s) => {
      const a = s.address() as AddressInfo;
      return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
    });
  }

  /** For fastify's `serverFactory`: the app's requests come from this server. */
  readonly factory = (handler: Handler): Server => {
    this.appHandler = handler;
    return this.server;
  };

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    if (this.handler !== null) return this.handler(req, res);
    if (this.failure !== null) return refuse(req, res, 500, { error: { code: 'internal', message: this.failure } });
    // The process is up: that is all /livez says (readiness.ts), and it needs no app.
    if (req.method === 'GET' && (req.url === '/livez' || req.url?.startsWith('/livez?') === true)) return answer(res, 200, { status: 'ok' });
    if (this.held.length >= this.maxHeld) {
      return refuse(req, res, 503, { error: { code: 'overloaded', message: 'the server is starting; retry shortly' } }, { 'retry-after': String(this.retryAfter) });
    }
    this.held.push([req, res]);
  }

  /** The app is ready: it serves what was held, in arrival order, and everything after. */
  open(): void {
    if (this.appHandler === null) throw new Error('the app was not built on this server (ServerOptions.serverFactory)');
    const h = this.appHandler;
    // The app set up the server it was built on (framework-errors.ts, index.ts: client errors,
    // CONNECT, Expect, the Host rule, limits); the further addresses' servers behave the same.
    for (const extra of this.servers.slice(1)) {
      for (const event of FORWARDED_EVENTS) for (const l of this.server.listeners(event)) extra.on(event, l as (...a: unknown[]) => void);
      (extra as { requireHostHeader?: boolean }).requireHostHeader = (this.server as { requireHostHeader?: boolean }).requireHostHeader;
      extra.keepAliveTimeout = this.server.keepAliveTimeout;
      extra.requestTimeout = this.server.requestTimeout;
      extra.headersTimeout = this.server.headersTimeout;
    }
    this.handler = h;
    for (const [req, res] of this.held.splice(0)) if (!res.destroyed && !res.writableEnded) h(req, res);
  }

  /** The app could not be built: what was held, and anything asked before close(), gets `internal`. */
  fail(reason: string): void {
    this.failure = reason;
    for (const [req, res] of this.held.splice(0)) if (!res.destroyed && !res.writableEnded) refuse(req, res, 500, { error: { code: 'internal', message: reason } });
  }

  get heldCount(): number {
    return this.held.length;
  }

  /** Stop accepting, close idle keep-alive connections, resolve when every connection has ended. */
  async close(): Promise<void> {
    await Promise.all(this.servers.map(closeServer));
  }
}

/** Events the app handles on its server (besides requests, which every server feeds to onRequest). */
const FORWARDED_EVENTS = ['clientError', 'connect', 'checkExpectation', 'upgrade'] as const;

/**
 * The listen socket's accept queue (the kernel caps it at net.core.somaxconn). Node's default, 511,
 * overflowed at 1024 followers re-attaching every ~100 ms (issue 15, 4x the attach scenario's
 * capacity): a connection past it has its handshake dropped, and the client's retransmission comes
 * a second later, which was that level's p99 (docs/benchmarks.md, attach, seventeenth session).
 * A longer queue holds such a connection until the loop accepts it; the sheds see it then.
 */
export const LISTEN_BACKLOG = 4096;

function bind(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen({ host, port, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    // Connections that finish their last response later (follow streams just ended) go idle
    // then, not now: close those too as they do, rather than after the keep-alive timeout.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}
