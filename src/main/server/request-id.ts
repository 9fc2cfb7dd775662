/**
 * Request ids. A client's `x-request-id` is honoured (it ties the client's
 * logs to ours) when it is a plain token: 1 to 128 characters of letters,
 * digits and `._:+/=@~-` (UUIDs, ULIDs, hex and base64 trace ids all fit).
 * Anything else (too long, spaces, quotes, control bytes, several headers
 * joined) is replaced by a fresh UUID, so a hostile value never reaches the
 * logs or the response headers as it was sent.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const REQUEST_ID_HEADER = 'x-request-id';
const REQUEST_ID = /^[A-Za-z0-9._:+/=@~-]{1,128}$/;

/** The client's id when it is acceptable, else a new one. */
export function requestIdOf(raw: unknown): string {
  return typeof raw === 'string' && REQUEST_ID.test(raw) ? raw : randomUUID();
}

/** fastify's `genReqId`. */
export function genReqId(req: IncomingMessage): string {
  return requestIdOf(req.headers[REQUEST_ID_HEADER]);
}
