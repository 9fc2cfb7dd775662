/**
 * CORS for browser web UIs (SPEC section 1 names them as clients), off
 * unless an origin is configured (`--cors-origin`, SESSION_PAGER_CORS_ORIGIN).
 * Through @fastify/cors at the root, so preflights are answered before auth
 * (a browser never sends credentials on a preflight). Bearer tokens, not
 * cookies: no `Access-Control-Allow-Credentials`.
 */
import type { FastifyInstance } from 'fastify';
import { requireCjs } from './cjs.js';

// By require(), not import (cjs.ts says why).
const cors = requireCjs('@fastify/cors') as typeof import('@fastify/cors').default;

/** Request headers a web UI sends beyond the CORS-safelisted ones. */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Content-Encoding', 'If-None-Match', 'Last-Event-ID', 'X-Request-Id'];

/** Response headers a web UI may read beyond the safelisted ones (caching, retry, tracing). */
export const CORS_EXPOSED_HEADERS = ['ETag', 'Retry-After', 'X-Request-Id', 'Allow', 'WWW-Authenticate', 'Content-Encoding', 'Content-Length'];

/** `origins`: one origin, `*`, or several separated by commas. */
export function registerCors(app: FastifyInstance, origins: string): void {
  const list = origins
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  app.register(cors, {
    // One origin: a fixed header; several: the request's origin reflected when listed (and Vary: Origin).
    origin: list.length === 1 ? (list[0] as string) : list,
    methods: ['GET', 'HEAD', 'PUT', 'POST'],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    credentials: false,
    // Browsers cap this (Chromium at 2 h); 10 minutes keeps a changed policy from lingering.
    maxAge: 600,
    strictPreflight: true,
  });
}
