/**
 * Closing a connection whose request the server did not read to its end,
 * without losing the answer: a lingering close, as Apache's
 * `lingering_close` and nginx's `lingering_close` do (Go's server the
 * same in spirit: it reads on a little, then half-closes and waits before
 * closing).
 *
 * Closing a socket whose receive buffer still holds unread bytes makes the
 * kernel send a reset, not a FIN, and a reset makes the peer's kernel drop
 * what it had received and not yet handed to the client: a client that
 * writes its whole body before reading (node's fetch with a Buffer, a
 * client on a slow upload) then loses the answer the server already sent
 * (`413 payload_too_large` for a body past the limit: the server does not
 * read 40 MiB to refuse it) and sees ECONNRESET instead.
 *
 * So: the answer is written, the write side half-closed (FIN after it),
 * and what the client still sends is read and discarded until it closes
 * its side (it has read the answer), or a bound is reached, in bytes or in
 * time: past it the connection is cut (a reset), so a client cannot make
 * the server read without end.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface LingerBounds {
  /** Bytes read and discarded before the connection is cut. */
  bytes: number;
  /** Time from the half-close until the connection is cut, ms. */
  ms: number;
}

/** Sockets closing lingering: a second close of one (a parser error on the bytes it discards) must not reset it. */
const lingering = new WeakSet<Duplex>();

/** Whether `socket` is already closing lingering. */
export function isLingering(socket: Duplex): boolean {
  return lingering.has(socket);
}

/**
 * Read and discard what the peer still sends until it closes its side, or
 * `bounds` are reached; then destroy. The caller has written (or ended with)
 * its answer.
 */
export function lingerThenDestroy(socket: Duplex, bounds: LingerBounds): void {
  if (lingering.has(socket)) return;
  lingering.add(socket);
  let seen = 0;
  const timer = setTimeout(() => socket.destroy(), bounds.ms);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // The peer is done: close once the answer is all written (destroy drops what is not yet; the
  // timer still bounds a write that never finishes).
  const peerDone = () => {
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  if (socket.readableEnded) return peerDone();
  socket.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > bounds.bytes) socket.destroy();
  });
  socket.once('end', peerDone);
  socket.resume();
  restartReading(socket);
}

/**
 * Make sure the socket's handle reads again. Node's HTTP server feeds its parser from the handle
 * directly (the parser "consumes" it) and stops the handle when a request's body is not read
 * (a 413 answered before its body); the 'data' listener above hands the socket back to JS
 * streams (node unconsumes the parser then), but the stream still holds the read it had asked
 * for before the parser took over, so resume() alone never starts the handle again: the body's
 * rest was never read and the client's write was cut by the timer (EPIPE), found by
 * test/http-oversized-body.test.ts with a declared 40 MiB body. What node's own
 * onSocketResume does.
 */
export function restartReading(socket: Duplex): void {
  const handle = (socket as Duplex & { _handle?: { reading?: boolean; readStart?: () => number } })._handle;
  if (handle !== undefined && handle !== null && handle.reading !== true && typeof handle.readStart === 'function') {
    handle.reading = true;
    handle.readStart();
  }
}

/** Per socket, the request whose unread body made its close lingering (the latest one). */
const unreadOn = new WeakMap<Socket, IncomingMessage>();

/**
 * When node closes `socket` after the response now being sent (a
 * `Connection: close` answer, node's `destroySoon` after the response
 * finished) while `request`'s body is not all read, close it lingering
 * instead: half-close, then read and discard up to `bounds` (node's parser
 * goes on reading the unread body, which the request's dump discards). A
 * close once the body is all read (a keep-alive connection closed later) is
 * node's own.
 */
export function lingerOnClose(socket: Socket, request: IncomingMessage, bounds: LingerBounds): void {
  const had = unreadOn.has(socket);
  unreadOn.set(socket, request);
  if (had) return;
  // An own property, for this socket alone: node's server calls `socket.destroySoon()` once a
  // response marked last has finished (resOnFinish), which ends the socket and destroys it once
  // the end is written, with the body's rest unread.
  socket.destroySoon = function lingeringClose(this: Socket): void {
    const unread = unreadOn.get(this);
    if (unread?.complete !== false) return Object.getPrototypeOf(this).destroySoon.call(this);
    if (this.destroyed) return;
    if (this.writable) this.end();
    // A request left paused (early-answer.ts stops reading a body past its bound) is not dumped by
    // node, and its full buffer would pause the socket again as the parser feeds it: it stalled the
    // lingering read until its timer cut the connection (found by test/http-early-answer-body).
    unread.resume();
    lingerThenDestroy(this, bounds);
  };
}

/**
 * Close `socket` lingering now: half-close after what is already written, then read and discard
 * within `bounds`. A close node has begun (its `destroySoon`, which destroys once the end is
 * written) is taken over, so bytes still arriving do not turn it into a reset.
 */
export function closeLingering(socket: Socket, bounds: LingerBounds): void {
  if (socket.destroyed || lingering.has(socket)) return;
  socket.removeListener('finish', socket.destroy);
  if (socket.writable) socket.end();
  lingerThenDestroy(socket, bounds);
}

/**
 * From now on, when node closes `socket` after a response (its `destroySoon`), close it lingering,
 * whatever became of the request's body: for a connection whose peer may still be sending.
 */
export function lingerWhenClosed(socket: Socket, bounds: LingerBounds): void {
  socket.destroySoon = function lingeringClose(this: Socket): void {
    closeLingering(this, bounds);
  };
}
