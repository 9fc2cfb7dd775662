/**
 * Response compression for every route but the page and the catalog (which
 * code their bodies themselves: page-encoding.ts): what @fastify/compress did
 * here (8.3.1, `global: true`, br and gzip, a size threshold), without it.
 * Its module requires readable-stream, pumpify, peek-stream, duplexify,
 * through2 and minipass at load (~80 CommonJS files, ~40-60 ms of CPU in a
 * fresh process) for stream plumbing a Buffer or string body does not need,
 * and a fresh `serve` loaded them on its main thread before it could be
 * ready (issue 12). The same choices are made here from the same parts: the
 * encoding by @fastify/accept-negotiator over `br, gzip` (`*` and `x-gzip`
 * read as gzip), the same compressible types (mime-db asked only for types
 * the pattern does not match), `Vary: accept-encoding`, the same zlib
 * settings. Bodies are compressed whole on libuv's pool (zlib's async
 * calls) and sent with their length instead of chunked; a stream body is
 * piped through a zlib stream, as before. A route opts out with
 * `compress: false` (its route option or `config.compress`). Request bodies
 * are decoded by request-decoding.ts, as they were.
 */
import { brotliCompress, createBrotliCompress, createGzip, gzip, type BrotliOptions, type ZlibOptions } from 'node:zlib';
import { pipeline, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { requireCjs } from './cjs.js';

// The parts @fastify/compress chose with, as direct dependencies (their versions pinned to the ones it used).
const negotiator = requireCjs('@fastify/accept-negotiator') as { negotiate(header: string, supported: string[]): string | null };

type Encoding = 'br' | 'gzip';
const ENCODINGS: Encoding[] = ['br', 'gzip'];

export interface ResponseCompressionOptions {
  /** Bodies shorter than this many bytes are sent as they are. */
  threshold: number;
  brotliOptions: BrotliOptions;
  zlibOptions: ZlibOptions;
}

// @fastify/compress's default compressible types.
const COMPRESSIBLE = /^text\/(?!event-stream)|(?:\+|\/)json(?:;|$)|(?:\+|\/)text(?:;|$)|(?:\+|\/)xml(?:;|$)|octet-stream(?:;|$)/u;
let mimeDb: Record<string, { compressible?: boolean }> | undefined;

function compressible(type: string): boolean {
  if (COMPRESSIBLE.test(type)) return true;
  mimeDb ??= requireCjs('mime-db') as Record<string, { compressible?: boolean }>;
  return mimeDb[type.split(';', 1)[0]!.trim().toLowerCase()]?.compressible === true;
}

const GZIP_ALIAS = /\*|x-gzip/gu;

/** The encoding to send, or null (no header, nothing acceptable, or identity). */
export function responseEncoding(header: string | string[] | undefined): Encoding | null {
  if (header === undefined) return null;
  const value = (Array.isArray(header) ? header.join(',') : header).toLowerCase().replace(GZIP_ALIAS, 'gzip');
  const chosen = negotiator.negotiate(value, ENCODINGS);
  return chosen === 'br' || chosen === 'gzip' ? chosen : null;
}

function addVary(reply: FastifyReply): void {
  const vary = reply.getHeader('vary');
  if (vary === undefined) {
    reply.header('vary', 'accept-encoding');
    return;
  }
  const values = (Array.isArray(vary) ? vary : [vary]).map(String);
  if (!values.some((v) => v.includes('accept-encoding'))) reply.header('vary', values.concat('accept-encoding').join(', '));
}

type OnSend = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void) => void;

function onSendFor(o: ResponseCompressionOptions): OnSend {
  return (request, reply, payload, done) => {
    if (payload === null || payload === undefined) return done(null);
    const already = reply.getHeader('content-encoding');
    if (already !== undefined && already !== 'identity') return done(null, payload);
    if (request.headers['x-no-compression'] !== undefined) return done(null, payload);
    if (!compressible(String(reply.getHeader('content-type') ?? 'application/json'))) return done(null, payload);
    const encoding = responseEncoding(request.headers['accept-encoding']);
    if (encoding === null) return done(null, payload);
    if (typeof (payload as { pipe?: unknown }).pipe === 'function') {
      const z = encoding === 'br' ? createBrotliCompress(o.brotliOptions) : createGzip(o.zlibOptions);
      addVary(reply);
      reply.header('content-encoding', encoding);
      reply.removeHeader('content-length');
      pipeline(payload as Readable, z, (err) => {
        if (err) reply.log.error(err);
      });
      return done(null, z);
    }
    const body = typeof payload === 'string' ? Buffer.from(payload) : (payload as Buffer);
    if (body.length < o.threshold) return done(null, payload);
    const finish = (err: Error | null, out: Buffer) => {
      if (err) return done(err);
      addVary(reply);
      reply.header('content-encoding', encoding);
      reply.removeHeader('content-length');
      done(null, out);
    };
    if (encoding === 'br') brotliCompress(body, o.brotliOptions, finish);
    else gzip(body, o.zlibOptions, finish);
  };
}

/** Install on the root app before the routes: each route not opted out gets the onSend hook. */
export function addResponseCompression(app: FastifyInstance, o: ResponseCompressionOptions): void {
  const onSend = onSendFor(o);
  app.addHook('onRoute', (route: RouteOptions & { compress?: unknown; config?: { compress?: unknown } }) => {
    const setting = route.config?.compress !== undefined ? route.config.compress : route.compress;
    if (setting === false) return;
    if (setting !== undefined) throw new Error('a route\'s compress option is false or absent');
    const hooks = route.onSend;
    route.onSend = hooks === undefined ? [onSend] : Array.isArray(hooks) ? [...hooks, onSend] : [hooks, onSend];
  });
}

declare module 'fastify' {
  interface RouteShorthandOptions {
    /** false: this route's responses are not compressed here (it codes its own). */
    compress?: false;
  }
}
