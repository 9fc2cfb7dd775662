/**
 * The server's connection limit, kept by the server itself (issue 15: past
 * capacity, no error other than shedding 503s).
 *
 * Node's own `server.maxConnections` closes a connection past it as it is
 * accepted, without a word: the client sees ECONNRESET (or a hang-up) and
 * cannot tell an overloaded server from a broken one; at 1024 attaching
 * clients that was thousands of errors a run. Here the server counts the
 * connections it admitted (on 'connection' and 'close'); one past the limit
 * is not handed to the HTTP parser and not counted as admitted: the server
 * waits a little for its first bytes (so the answer follows the request),
 * writes a prepared `503 overloaded` with `Retry-After` and
 * `Connection: close`, and closes lingering (lingering-close.ts), so the
 * answer is not lost to a reset when the request's bytes are still unread.
 *
 * Each connection being shed holds a file descriptor for a moment; under a
 * flood they are bounded too: past `maxShedding` at once, a connection is
 * closed as it is accepted, by Node (its `maxConnections`, set to the sum of
 * both bounds, which drops before any JavaScript object is made; its 'drop'
 * event counts it). One limiter may serve several listening servers (the
 * `localhost` addresses of early-listen.ts): the limit is theirs together.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { closeLingering, type LingerBounds } from './lingering-close.js';
import { REQUEST_ID_HEADER } from './request-id.js';

export interface ConnectionLimitOptions {
  /** Connections admitted (handed to the HTTP server) at once. */
  maxConnections: number;
  /** Connections past the limit being answered 503 at once (default: maxConnections); more are dropped. */
  maxShedding?: number;
  retryAfterSeconds: number;
  /** How long a shed connection's first bytes are waited for before it is answered anyway, ms (default 1000). */
  firstBytesMs?: number;
  /** The lingering close after the answer (default 64 KiB, 2 s: a request head is far smaller). */
  linger?: LingerBounds;
}

/** What happened past the limit, for the metrics (metrics.ts). */
export interface ConnectionLimitCounts {
  /** Connections admitted and still open. */
  readonly open: number;
  /** Connections answered 503 for the limit, since start. */
  readonly shed: number;
  /** Connections closed unanswered past the hard bound, since start. */
  readonly dropped: number;
}

const limiters = new WeakMap<Server, ConnectionLimiter>();

/** The limiter a server's connections go through (installed by whoever made the server), if any. */
export function connectionLimiterOf(server: Server): ConnectionLimiter | undefined {
  return limiters.get(server);
}

export class ConnectionLimiter implements ConnectionLimitCounts {
  open = 0;
  shed = 0;
  dropped = 0;
  private shedding = 0;
  private readonly max: number;
  private readonly maxShedding: number;
  private readonly firstBytesMs: number;
  private readonly linger: LingerBounds;
  private readonly head: string;
  private readonly body: Buffer;
  /** Called on each shed and each drop (the metrics' counters), besides the counts above. */
  onShed: (() => void) | null = null;
  onDrop: (() => void) | null = null;

  constructor(o: ConnectionLimitOptions) {
    this.max = o.maxConnections;
    this.maxShedding = o.maxShedding ?? o.maxConnections;
    this.firstBytesMs = o.firstBytesMs ?? 1000;
    this.linger = o.linger ?? { bytes: 64 * 1024, ms: 2000 };
    this.body = Buffer.from(JSON.stringify({ error: { code: 'overloaded', message: `server is overloaded (${o.maxConnections} connections open); retry shortly` } }));
    this.head =
      'HTTP/1.1 503 Service Unavailable\r\n' +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${this.body.length}\r\n` +
      `retry-after: ${o.retryAfterSeconds}\r\n` +
      'connection: close\r\n' +
      `${REQUEST_ID_HEADER}: `;
  }

  /** Route `server`'s connections through this limiter (before the HTTP server's own listener). */
  install(server: Server): void {
    limiters.set(server, this);
    // The hard bound: the HTTP server holds at most `max` of them, the limiter `maxShedding` more.
    server.maxConnections = this.max + this.maxShedding;
    server.on('drop', () => {
      this.dropped++;
      this.onDrop?.();
    });
    // Every 'connection' listener (node's HTTP one, and any added later) sees only the admitted.
    const limiter = this;
    const emit = server.emit;
    server.emit = function (this: Server, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'connection' && limiter.refuse(args[0] as Socket)) return true;
      return (emit as (event: string | symbol, ...args: unknown[]) => boolean).call(this, event, ...args);
    } as Server['emit'];
  }

  /** Count an admitted connection, or take one past the limit over (and say so). */
  private refuse(socket: Socket): boolean {
    if (this.open < this.max) {
      this.open++;
      socket.once('close', () => this.open--);
      return false;
    }
    if (this.shedding >= this.maxShedding) {
      // Only when several servers share the limiter (Node's own bound is per server).
      socket.destroy();
      this.dropped++;
      this.onDrop?.();
      return true;
    }
    this.shedding++;
    this.shed++;
    this.onShed?.();
    socket.on('error', () => undefined);
    socket.once('close', () => this.shedding--);
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      socket.off('data', answer);
      if (socket.destroyed) return;
      socket.cork();
      socket.write(`${this.head}${randomUUID()}\r\n\r\n`);
      socket.write(this.body);
      // closeLingering ends the socket, which uncorks: head and body leave in one segment.
      closeLingering(socket, this.linger);
    };
    // The first bytes (the request, or its start): answer after them, so the answer follows it.
    const timer = setTimeout(answer, this.firstBytesMs);
    socket.on('data', answer);
    return true;
  }
}
