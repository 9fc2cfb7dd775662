/**
 * An answer given before its request's body was read (401, 404, 405, 415,
 * a router error, a 413...) and what becomes of that body.
 *
 * Node's server reads and discards an unread body after the answer so that
 * the connection can carry the next request (`req._dump()`): for a body
 * declared at 1 GiB, or chunked without end, that is the whole body, bounded
 * only by the request timeout (30 s), and an unauthenticated client could
 * make the server read gigabytes for one 401.
 *
 * So, like Go's net/http (which reads at most 256 KiB of what a handler left,
 * `maxPostHandlerReadBytes`, and otherwise closes): a body that is small
 * (declared, or ended within the bound) is read and discarded before the
 * answer and the connection stays usable, as before; any other is answered
 * at once with `Connection: close`, and the connection is closed lingering
 * (lingering-close.ts): the answer is not lost to a client still writing,
 * and what it still sends is read within the lingering bounds (10 s, 64 MiB
 * by default), then the connection is cut.
 */
import type { IncomingMessage } from 'node:http';
import { lingerOnClose, type LingerBounds } from './lingering-close.js';

/** The most of an unread body read and discarded to keep its connection (Go's maxPostHandlerReadBytes). */
export const KEEP_ALIVE_DRAIN_BYTES = 256 * 1024;

export interface EarlyAnswerOptions {
  /** An unread body up to this many bytes is read and discarded before the answer, and the connection kept. */
  keepAliveDrain: number;
  /** Bounds of the lingering close that follows an answer given with the body unread. */
  linger: LingerBounds;
}

/** Whether the request declares a body (a length other than 0, or a transfer coding). */
export function hasBody(raw: IncomingMessage): boolean {
  const cl = raw.headers['content-length'];
  return raw.headers['transfer-encoding'] !== undefined || (cl !== undefined && cl !== '0');
}

/**
 * The request has a body not yet read to its end (node's parser has not seen it; a request that
 * is no socket's, fastify's inject, says so by its stream having ended).
 */
export function bodyUnread(raw: IncomingMessage): boolean {
  return !raw.complete && !raw.readableEnded && !raw.destroyed && hasBody(raw);
}

/**
 * Read and discard `raw`'s body if it is at most `limit` bytes: resolves true once it has ended
 * within them; false at once for a body declared larger, or as soon as more than `limit` came
 * (chunked). On false the request is left paused (node then does not dump the rest after the
 * answer: the lingering close reads it, within its bounds).
 */
export function drainSmallBody(raw: IncomingMessage, limit: number): Promise<boolean> {
  const declared = raw.headers['content-length'];
  if (raw.headers['transfer-encoding'] === undefined && declared !== undefined && !(Number(declared) <= limit)) return Promise.resolve(false);
  if (raw.readableEnded) return Promise.resolve(true);
  return new Promise((resolve) => {
    let seen = 0;
    const settle = (kept: boolean) => {
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('close', onClose);
      if (!kept) raw.pause();
      resolve(kept);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limit) settle(false);
    };
    const onEnd = () => settle(true);
    // Closed before its end (the client went away): nothing to keep.
    const onClose = () => settle(raw.complete);
    raw.on('data', onData);
    raw.once('end', onEnd);
    raw.once('close', onClose);
    raw.resume();
  });
}

/**
 * Before answering `raw` early: `answer(close)` is called once the body is settled. `close` true:
 * the answer must carry `Connection: close` (the body is large, unknown, or `tooLarge` says the
 * answer is a 413); the connection is then closed lingering. A request with no unread body is
 * answered at once, keep-alive (every GET: no promise).
 */
export function settleUnreadBody(raw: IncomingMessage, o: EarlyAnswerOptions, answer: (close: boolean) => void, tooLarge = false): void {
  if (!bodyUnread(raw)) return answer(false);
  // Whatever follows, if node closes this connection after the answer it does so lingering.
  lingerOnClose(raw.socket, raw, o.linger);
  // A body past the limit is not read to refuse it: answered now.
  if (tooLarge) return answer(true);
  drainSmallBody(raw, o.keepAliveDrain).then(
    (kept) => answer(!kept),
    () => answer(true),
  );
}
