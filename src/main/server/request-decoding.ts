/**
 * Request bodies sent with a `Content-Encoding` (gzip, x-gzip, deflate, br,
 * identity, or several in order) are decoded here. @fastify/compress (which
 * the server used until issue 12's start-up work) destroyed the request (and
 * with it the socket) on a decode error: a bad body larger than one packet
 * got no answer at all, only a reset connection.
 *
 * Here a decode error never touches the request stream: the decoders are
 * unpiped, the rest of the body is read and discarded (up to `drainLimit`
 * bytes, then `413`), and then the route answers `400 invalid_request` in
 * the SPEC's shape, at any body size. An unknown
 * coding is `415 unsupported_media_type` with `Accept-Encoding` naming the
 * codings accepted (RFC 9110 section 15.5.16). Decoded bytes past the body
 * limit stop the decoding at once (`413 payload_too_large`), so a small
 * compressed body cannot make the server inflate gigabytes.
 */
import { PassThrough, type Readable, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PagerError } from '../../core/errors.js';
import { bodyUnread, hasBody, settleUnreadBody, type EarlyAnswerOptions } from './early-answer.js';

const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

export const ACCEPTED_REQUEST_ENCODINGS = 'gzip, deflate, br';

/** The codings of a Content-Encoding value, in the order they were applied, identity left out. */
export function parseContentEncoding(header: string): string[] {
  return header
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

/**
 * Read and discard the rest of a request body, then call `done`: the answer
 * leaves only once the client has sent everything, so a client that writes
 * its whole body before reading still reads it (fastify closes the
 * connection after a body error; closing with unread bytes would reset it
 * and lose the answer). Past `limit` bytes `done` gets `payload_too_large`.
 */
function drainThen(body: Readable, limit: number, done: (tooLarge: boolean) => void): void {
  if (body.readableEnded || body.destroyed) {
    done(false);
    return;
  }
  let seen = 0;
  let called = false;
  const finish = (tooLarge: boolean) => {
    if (called) return;
    called = true;
    done(tooLarge);
  };
  body.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > limit) finish(true);
  });
  body.once('end', () => finish(false));
  body.once('close', () => finish(false));
  body.resume();
}

export interface RequestDecodingOptions extends EarlyAnswerOptions {
  /** Largest decoded body (the server's body limit). */
  bodyLimit: number;
  /** Encoded bytes read and discarded after a decode error before the connection is closed. */
  drainLimit: number;
}

function decodedBody(body: Readable, codings: string[], o: RequestDecodingOptions): Readable {
  // Applied in the order listed, so undone last to first.
  const decoders = codings.map((c) => (DECODERS[c] as () => Transform)()).reverse();
  const out = new PassThrough() as PassThrough & { receivedEncodedLength: number };
  out.receivedEncodedLength = 0;
  // fastify's body reader may stop listening (e.g. after its own 413); a late error must not crash.
  out.on('error', () => undefined);
  body.on('data', (chunk: Buffer) => {
    out.receivedEncodedLength += chunk.length;
  });
  let decoded = 0;
  let stopped = false;
  const stop = (err: PagerError) => {
    if (stopped) return;
    stopped = true;
    body.unpipe(decoders[0]);
    for (const d of decoders) {
      d.unpipe();
      d.destroy();
    }
    drainThen(body, o.drainLimit, (tooLarge) => out.destroy(tooLarge ? new PagerError('payload_too_large', 'request body is larger than the limit') : err));
  };
  let src: Readable = body;
  for (const d of decoders) {
    d.on('error', (err: Error) => stop(new PagerError('invalid_request', `the request body is not valid ${codings.join(', ')} (Content-Encoding): ${err.message}`)));
    src.pipe(d);
    src = d;
  }
  src.on('data', (chunk: Buffer) => {
    decoded += chunk.length;
    if (decoded > o.bodyLimit) stop(new PagerError('payload_too_large', 'request body is larger than the limit'));
  });
  src.pipe(out);
  return out;
}

/**
 * Install the decoding on `app` (the root).
 *
 * Also: an answer given before the body was read (401, 404, 405, 415...)
 * reads and discards a small body first and keeps the connection; a larger
 * or unknown one, and a body past the limit (413), is answered at once with
 * `Connection: close`, and the connection closed lingering after it
 * (early-answer.ts).
 */
export function addRequestDecoding(app: FastifyInstance, o: RequestDecodingOptions): void {
  // Callback-style hooks: a request with no body to drain or decode (every GET) costs no promise.
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void) => {
    // Nothing unread (every GET, every body a route read): no closure either.
    if (!bodyUnread(request.raw)) return done(null, payload);
    settleUnreadBody(
      request.raw,
      o,
      (close) => {
        if (close) reply.header('connection', 'close');
        done(null, payload);
      },
      reply.statusCode === 413,
    );
  });
  app.addHook('preParsing', (request: FastifyRequest, reply: FastifyReply, payload: Readable, done: (err: Error | null, payload?: Readable) => void) => {
    const header = request.headers['content-encoding'];
    if (header === undefined || !hasBody(request.raw)) return done(null, payload);
    const codings = parseContentEncoding(Array.isArray(header) ? header.join(',') : header);
    if (codings.length === 0) return done(null, payload);
    const unknown = codings.find((c) => !(c in DECODERS));
    if (unknown !== undefined) {
      reply.header('accept-encoding', ACCEPTED_REQUEST_ENCODINGS);
      return done(new PagerError('unsupported_media_type', `Content-Encoding ${JSON.stringify(unknown.slice(0, 40))} is not supported; use ${ACCEPTED_REQUEST_ENCODINGS} or none`));
    }
    done(null, decodedBody(payload, codings, o));
  });
}
