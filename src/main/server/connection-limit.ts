/**
 * The server's connection limit, kept by the server itself (issue 15: past
 * capacity, no error other than shedding 503s).
 *
 * Node's own `server.maxConnections` closes a connection past it as it is
 * accepted, without a word: the client sees ECONNRESET (or a hang-up) and
 * cannot tell an overloaded server from a broken one; at 1024 attaching
 * clients that was thousands of errors a run. Here the server counts the
 * connections it admitted (on 'connection' and 'close'). One that comes at
 * the limit waits a moment (20 ms) unread, and takes the place of an
 * admitted one that closes meanwhile (admitWaiting says why); else it is
 * shed: not handed to the HTTP parser, not counted as admitted, the server
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
import { closeLingering, restartReading, type LingerBounds } from './lingering-close.js';
import { REQUEST_ID_HEADER } from './request-id.js';

export interface ConnectionLimitOptions {
  /** Connections admitted (handed to the HTTP server) at once. */
  maxConnections: number;
  /** Connections past the limit being answered 503 at once (default: maxConnections); more are dropped. */
  maxShedding?: number;
  retryAfterSeconds: number;
  /** How long a connection at the limit waits for an admitted one to close before it is shed, ms (default 20). */
  waitMs?: number;
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
  /** Connections past the limit, waiting for a place or being answered 503. */
  private shedding = 0;
  /** Connections at the limit waiting (up to waitMs) for an admitted one to close, oldest first. */
  private readonly waiting: Waiting[] = [];
  private readonly waitMs: number;
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
    this.waitMs = o.waitMs ?? 20;
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
    const emit = server.emit as (event: string | symbol, ...args: unknown[]) => boolean;
    const admit = (socket: Socket): void => void emit.call(server, 'connection', socket);
    const limiter = this;
    server.emit = function (this: Server, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'connection' && limiter.refuse(args[0] as Socket, admit)) return true;
      return emit.call(this, event, ...args);
    } as Server['emit'];
  }

  /** Count `socket` as admitted: the HTTP server gets it. */
  private count(socket: Socket): void {
    this.open++;
    socket.once('close', () => {
      this.open--;
      this.admitWaiting();
    });
  }

  /** Count an admitted connection, or take one at the limit over (and say so). */
  private refuse(socket: Socket, admit: (socket: Socket) => void): boolean {
    if (this.open < this.max) {
      this.count(socket);
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
    socket.on('error', () => undefined);
    const entry: Waiting = { socket, admit, timer: setTimeout(() => this.shedWaiting(entry), this.waitMs), done: false };
    socket.once('close', () => {
      if (entry.done !== 'admitted') this.shedding--;
      entry.done ||= 'closed';
      clearTimeout(entry.timer);
    });
    // Not read until it is admitted or shed: the HTTP parser must see its bytes from the first.
    stopReading(socket);
    this.waiting.push(entry);
    return true;
  }

  /**
   * A connection closed: the first still waiting takes its place. A client that closes a
   * connection and opens its next one at once (every attach of the attach scenario) is often
   * accepted in the same loop iteration in which the server sees the old one end, before the
   * old one's 'close': shed at once, it was answered 503 with the limit not really reached.
   */
  private admitWaiting(): void {
    while (this.open < this.max && this.waiting.length > 0) {
      const entry = this.waiting.shift()!;
      if (entry.done !== false) continue;
      entry.done = 'admitted';
      clearTimeout(entry.timer);
      this.shedding--;
      this.count(entry.socket);
      entry.admit(entry.socket);
      // Its handle stopped reading before the parser took it over (stopReading): start it again.
      restartReading(entry.socket);
    }
  }

  /** No place came free within the wait: answer 503 after the first bytes, and close. */
  private shedWaiting(entry: Waiting): void {
    if (entry.done !== false) return;
    entry.done = 'shed';
    const i = this.waiting.indexOf(entry);
    if (i >= 0) this.waiting.splice(i, 1);
    const socket = entry.socket;
    this.shed++;
    this.onShed?.();
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
    restartReading(socket);
  }
}

interface Waiting {
  socket: Socket;
  admit: (socket: Socket) => void;
  timer: NodeJS.Timeout;
  done: false | 'admitted' | 'shed' | 'closed';
}

/** Stop the handle reading (what net.Server's pauseOnConnect does): the bytes stay in the kernel. */
function stopReading(socket: Socket): void {
  const handle = (socket as Socket & { _handle?: { reading?: boolean; readStop?: () => number } | null })._handle;
  if (handle !== undefined && handle !== null && typeof handle.readStop === 'function') {
    handle.reading = false;
    handle.readStop();
  }
}
