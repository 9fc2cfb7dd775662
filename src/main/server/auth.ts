/**
 * Bearer-token auth (SPEC section 6): every route but /healthz. The token is
 * compared in constant time: both sides are hashed to fixed-length SHA-256
 * digests first, so neither the content nor the length of the expected
 * token leaks through timing. A connection's later requests with the value
 * it already passed with are compared with that value (addAuth).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PagerError } from '../../core/errors.js';

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** A checker for `Authorization` header values; null token means auth is off. */
export function tokenChecker(token: string | null): (authorization: string | undefined) => boolean {
  if (token === null || token === '') return () => true;
  const expected = digest(token);
  return (authorization) => {
    if (typeof authorization !== 'string') return false;
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
    if (m === null) return false;
    return timingSafeEqual(digest(m[1] as string), expected);
  };
}

/** onRequest hook for an encapsulated context: 401 `unauthorized` unless the token matches. */
export function addAuth(app: FastifyInstance, token: string | null): void {
  if (token === null || token === '') return;
  const check = tokenChecker(token);
  // The Authorization value a keep-alive connection last passed with: its next requests, sending
  // the same value, skip the digest and the constant-time compare. Only a value that passed on
  // this very connection is held, so the plain compare tells a client nothing it did not send.
  const passed = new WeakMap<object, string>();
  // Callback style: an authorized request costs no promise.
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const authorization = request.headers.authorization;
    const socket = request.raw.socket as object | null | undefined;
    if (authorization !== undefined && socket != null && passed.get(socket) === authorization) return done();
    if (check(authorization)) {
      if (authorization !== undefined && socket != null) passed.set(socket, authorization);
      return done();
    }
    done(new PagerError('unauthorized', request.headers.authorization === undefined ? 'missing bearer token (Authorization: Bearer <token>)' : 'invalid bearer token'));
  });
}
