/**
 * Answers that node's HTTP parser or fastify's router give before any route
 * or hook runs, in the SPEC's error shape like every other error:
 *
 * - node's parser (`clientError`): headers over node's limit are
 *   `431 header_too_large`, or `414 uri_too_long` when the request line
 *   alone is over the URL limit (node counts the request line as header
 *   bytes); malformed requests (a raw non-ASCII byte in the path, a bad
 *   method token, bad chunked framing) are `400 invalid_request`; chunk
 *   extensions over node's limit `413 payload_too_large`; a request not
 *   received within `requestTimeout` is `408 request_timeout`.
 * - fastify's router (`frameworkErrors`): a malformed percent-escape in the
 *   path is `400 invalid_request`; a path segment over the router's limit
 *   `414 uri_too_long`.
 * - `CONNECT` (this is not a proxy): `400 invalid_request`; node would
 *   otherwise drop the connection without a word.
 *
 * These answers close the connection: the parser's state is unknown after
 * a parse error.
 */
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_STATUS, PagerError, type ErrorCode } from '../../core/errors.js';
import { closeLingering, isLingering, lingerThenDestroy, lingerWhenClosed } from './lingering-close.js';
import { settleUnreadBody, type EarlyAnswerOptions } from './early-answer.js';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id.js';

/** A complete HTTP/1.1 error response, for writing straight to a socket. */
export function rawErrorResponse(code: ErrorCode, message: string, requestId: string = requestIdOf(undefined)): string {
  const status = ERROR_STATUS[code];
  const body = JSON.stringify({ error: { code, message } });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
    `content-type: application/json; charset=utf-8\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    `${REQUEST_ID_HEADER}: ${requestId}\r\n` +
    `connection: close\r\n\r\n${body}`
  );
}

interface ParserError extends Error {
  code?: string;
  rawPacket?: unknown;
}

/** Length of the request line at the start of `packet`, or its whole length when it holds no line end. */
function requestLineLength(packet: unknown): number {
  if (!Buffer.isBuffer(packet)) return 0;
  const lf = packet.indexOf(0x0a);
  return lf === -1 ? packet.length : lf;
}

/** What a parser error answers. */
export function parserErrorAnswer(err: ParserError, maxUrlLength: number): { code: ErrorCode; message: string } {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      // A request line over the URL limit is what overflowed when its start holds no line end yet.
      if (requestLineLength(err.rawPacket) > maxUrlLength + 16) {
        return { code: 'uri_too_long', message: `request target is longer than ${maxUrlLength} characters` };
      }
      return { code: 'header_too_large', message: 'request headers are larger than the server accepts' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { code: 'payload_too_large', message: 'chunk extensions are larger than the server accepts' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'request_timeout', message: 'the request was not received in time' };
    default: {
      const reason = typeof err.message === 'string' ? err.message.replace(/^Parse Error: /, '') : 'parse error';
      // llhttp's reasons are fixed ASCII phrases; never echo request bytes.
      return { code: 'invalid_request', message: `malformed HTTP request: ${reason.replace(/[^\x20-\x7e]/g, '?').slice(0, 120)}` };
    }
  }
}

/**
 * After an answer that ends the connection: read and discard what the peer
 * still sends (closing with unread bytes would reset the connection, and a
 * client still writing its body would lose the answer), until the peer
 * closes, 5 s pass or 16 MiB came (lingering-close.ts).
 */
const PARSER_ERROR_LINGER = { ms: 5_000, bytes: 16 * 1024 * 1024 };

/**
 * fastify's `clientErrorHandler`: the SPEC shape where node would answer its own, and a close
 * that lingers, so the answer is not lost to a reset while the client is still sending.
 *
 * Bytes after a request that said `Connection: close` (llhttp's HPE_CLOSED_CONNECTION: a body
 * longer than declared, or a pipelined request) are no request: that request's own answer stands
 * (RFC 9112 9.6: the server answers it, then closes, and processes nothing after it). They were
 * answered `400` in place of it until 12-04; and a parse error on the bytes a lingering close was
 * discarding reset the connection (the client, still writing, could lose the answer it had not
 * read yet: found by test/http-fuzz.test.ts, 1 in ~400 such requests).
 */
export function clientErrorHandler(maxUrlLength: number): (err: ParserError, socket: Socket) => void {
  // Node's parser reports every later chunk of a broken request again; the first answer stands.
  const answered = new WeakSet<Socket>();
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || socket.destroyed || answered.has(socket)) return;
    answered.add(socket);
    // Whatever closes this connection from here (node, after a response marked last) lingers.
    lingerWhenClosed(socket, PARSER_ERROR_LINGER);
    if (isLingering(socket)) return;
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    const unfinished = inFlight !== undefined && inFlight !== null && !inFlight.writableFinished;
    if (err.code === 'HPE_CLOSED_CONNECTION') {
      // The in-flight answer is the connection's last: node closes after it (lingering, above).
      // Until then the extra bytes are not read (the kernel's window holds the client back).
      if (unfinished) socket.pause();
      else closeLingering(socket, PARSER_ERROR_LINGER);
      return;
    }
    // A response already under way cannot be followed by another one on this socket.
    if (unfinished && inFlight.headersSent) {
      socket.destroy();
      return;
    }
    if (socket.writable) {
      const { code, message } = parserErrorAnswer(err, maxUrlLength);
      socket.end(rawErrorResponse(code, message));
    }
    closeLingering(socket, PARSER_ERROR_LINGER);
  };
}

/**
 * fastify's `frameworkErrors`: router errors raised before any hook runs, so the root's onSend
 * hooks do not run either: a small unread body is read here before the answer, a larger one
 * closes the connection (early-answer.ts).
 */
export const frameworkErrors = (o: EarlyAnswerOptions) => (err: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply): void => {
  settleUnreadBody(request.raw, o, (close) => answerFrameworkError(err, request, reply, close));
};

function answerFrameworkError(err: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply, close: boolean): void {
  let pe: PagerError;
  if (err.code === 'FST_ERR_BAD_URL') pe = new PagerError('invalid_request', 'the request path holds a malformed percent-escape');
  else if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') pe = new PagerError('uri_too_long', 'a path segment is longer than the server accepts');
  else pe = new PagerError('internal', 'internal error');
  if (pe.code === 'internal') request.log.error({ err }, 'internal error');
  if (close) reply.header('connection', 'close');
  void reply
    .code(pe.statusCode)
    .header(REQUEST_ID_HEADER, request.id)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(pe.toJSON()));
}

/** Node hands CONNECT to 'connect' listeners and drops the socket when there are none. */
export function refuseConnect(server: Server): void {
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => undefined);
    socket.end(rawErrorResponse('invalid_request', 'CONNECT is not supported: this server is not a proxy', requestIdOf(req.headers[REQUEST_ID_HEADER])));
    lingerThenDestroy(socket, PARSER_ERROR_LINGER);
  });
}
