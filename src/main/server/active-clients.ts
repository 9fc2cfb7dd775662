import type { EventEmitter } from 'node:events';

/**
 * How long an idle connection still counts. Long against the gaps between a loaded client's
 * requests (milliseconds), short against a pooled connection's idle life (seconds).
 */
export const CLIENT_IDLE_MS = 1000;

/**
 * How many clients are active, for the store's lone-page rule (small-slice-pool.ts, store.ts
 * setClientCount): connections with a request in flight, and connections whose last request
 * ended less than `idleMs` ago. A keep-alive connection left idle (an HTTP client's pool, a
 * browser's spare connection, fetch's connection after a one-off request) stops counting once it
 * has been idle that long; counted while open, it kept a lone client's pages off this thread for
 * as long as it stayed open (docs/decisions.md). Under load every connection asks again within
 * milliseconds, so every one still counts: the rule's reason (clients waiting unseen behind the
 * request the server is handling) is kept.
 */
export class ActiveClients {
  /** Requests in flight by connection (a pipelining client can have more than one). */
  private readonly inFlight = new WeakMap<object, number>();
  /** Connections whose close is listened for, and those closed. */
  private readonly watched = new WeakSet<object>();
  private readonly gone = new WeakSet<object>();
  private busy = 0;
  /** The latest request end and the connection it was on; the latest on any other connection. */
  private lastSocket: object | null = null;
  private lastEnd = -Infinity;
  private otherSocket: object | null = null;
  private otherEnd = -Infinity;

  constructor(
    private readonly idleMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  started(socket: EventEmitter): void {
    if (!this.watched.has(socket)) {
      this.watched.add(socket);
      socket.once('close', () => this.closed(socket));
    }
    const n = this.inFlight.get(socket) ?? 0;
    this.inFlight.set(socket, n + 1);
    if (n === 0) this.busy++;
  }

  ended(socket: object): void {
    const n = this.inFlight.get(socket);
    if (n === undefined) return;
    if (n > 1) {
      this.inFlight.set(socket, n - 1);
      return;
    }
    this.inFlight.delete(socket);
    this.busy--;
    // A request that ends with its connection (a reset, a close after the answer) leaves nothing behind.
    if (this.gone.has(socket)) return;
    const t = this.now();
    if (socket !== this.lastSocket) {
      this.otherSocket = this.lastSocket;
      this.otherEnd = this.lastEnd;
      this.lastSocket = socket;
    }
    this.lastEnd = t;
  }

  /** A closed connection stops counting at once, however lately it asked. */
  private closed(socket: object): void {
    this.gone.add(socket);
    if (socket === this.otherSocket) {
      this.otherSocket = null;
      this.otherEnd = -Infinity;
    } else if (socket === this.lastSocket) {
      this.lastSocket = this.otherSocket;
      this.lastEnd = this.otherEnd;
      this.otherSocket = null;
      this.otherEnd = -Infinity;
    }
  }

  /**
   * Connections in flight, plus the idle ones that asked within `idleMs`, counted up to two of
   * them: the store only asks whether there is more than one client.
   */
  count(): number {
    const since = this.now() - this.idleMs;
    let n = this.busy;
    if (this.lastEnd >= since && this.lastSocket !== null && !this.inFlight.has(this.lastSocket)) n++;
    if (this.otherEnd >= since && this.otherSocket !== null && !this.inFlight.has(this.otherSocket)) n++;
    return n;
  }
}
