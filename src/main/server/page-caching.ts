/**
 * HTTP caching of pages (SPEC section 6).
 *
 * A page's bytes are a function of the session's events up to its cut, its
 * resolved parameters (throughSeq, end, maxMessages, maxBytes), the log it
 * was read from and the code that wrote it. The entity tag is a digest of
 * exactly that, so it is known before the page is built: `If-None-Match`
 * answers 304 without planning, reading or decoding anything.
 *
 * - pinned (`throughSeq` in the query): `Cache-Control: private,
 *   max-age=31536000, immutable` (the events up to a committed seq never change);
 * - unpinned (the cut is the current last seq): `Cache-Control: no-cache`
 *   (revalidate each time; 304 while no event was appended). Its tag equals
 *   the pinned page's at the same cut: they are the same bytes.
 *
 * Tags are strong and differ per content coding (RFC 9110 8.8.3: a strong
 * validator is unique across representations; the zstd, gzip and br forms
 * are other representations): `"<digest>"` identity, `"<digest>-zstd"`,
 * `"<digest>-gzip"`, `"<digest>-br"`. The coding of a page depends only on Accept-Encoding
 * (never on its size), so the selected representation's tag is known
 * before the page is, and If-None-Match is compared with it (weak
 * comparison, as RFC 9110 13.1.2 says for If-None-Match).
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { FastifyReply } from 'fastify';
import type { ResolvedParams } from '../../core/page-rule.js';
import type { PageEncoding } from './page-encoding.js';

/** Bump when the bytes of a page change for the same events (the package version is in the tag too). */
const PAGE_BYTES_REVISION = 2;

function packageVersion(): string {
  try {
    // src/main/server and dist/main/server are both three levels below the package root.
    return String((createRequire(import.meta.url)('../../../package.json') as { version?: unknown }).version ?? '0');
  } catch {
    return '0';
  }
}

const CODE = `${packageVersion()}/${PAGE_BYTES_REVISION}`;

export const IMMUTABLE = 'private, max-age=31536000, immutable';
export const REVALIDATE = 'no-cache';

/** The digest naming a page: representation-independent (the coding suffix is added by `etagFor`). */
export function pageDigest(id: string, incarnation: string, r: ResolvedParams): string {
  return createHash('sha256')
    .update(`${CODE}\0${id}\0${incarnation}\0${r.throughSeq}:${r.end}:${r.maxMessages}:${r.maxBytes ?? ''}`)
    .digest('base64url')
    .slice(0, 27);
}

/** A page validated by its bytes (a store without `pageVersion`). */
export function bodyDigest(body: Buffer): string {
  return createHash('sha256').update(CODE).update('\0').update(body).digest('base64url').slice(0, 27);
}

export function etagFor(digest: string, encoding: PageEncoding | null): string {
  return `"${digest}${encoding === null ? '' : `-${encoding}`}"`;
}

/** RFC 9110 13.1.2: If-None-Match holds `*` or a list of tags; weak comparison. */
export function noneMatch(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value.trim() === '*') return true;
  const want = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const m of value.matchAll(/(?:W\/)?"[^"]*"/g)) {
    const t = m[0].startsWith('W/') ? m[0].slice(2) : m[0];
    if (t === want) return true;
  }
  return false;
}

/** Add a field name to Vary, keeping what is there (CORS adds Origin). */
export function addVary(reply: FastifyReply, field: string): void {
  const prev = reply.getHeader('vary');
  const list = (Array.isArray(prev) ? prev.join(',') : prev === undefined ? '' : String(prev))
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
  if (list.includes('*') || list.some((v) => v.toLowerCase() === field.toLowerCase())) return;
  list.push(field);
  reply.header('vary', list.join(', '));
}

/** The caching headers of a page response (200 or 304). */
export function setPageCaching(reply: FastifyReply, etag: string, pinned: boolean): void {
  reply.header('etag', etag);
  reply.header('cache-control', pinned ? IMMUTABLE : REVALIDATE);
  addVary(reply, 'Accept-Encoding');
}
