/**
 * HTTP caching of pages (SPEC section 6).
 *
 * A page's bytes are a function of the session's events up to its cut, its
 * resolved parameters (throughSeq, end, maxMessages, maxBytes), the log it
 * was read from and the code that wrote it. The page's digest is a digest of
 * exactly that, so it is known before the page is built: `If-None-Match`
 * (compared by that digest, below) answers 304 without planning, reading or
 * decoding anything.
 *
 * - pinned (`throughSeq` in the query): `Cache-Control: private,
 *   max-age=31536000, immutable` (the events up to a committed seq never change);
 * - unpinned (the cut is the current last seq): `Cache-Control: no-cache`
 *   (revalidate each time; 304 while no event was appended). Its tag equals
 *   the pinned page's at the same cut: they are the same bytes.
 *
 * Tags are strong and differ per content coding (RFC 9110 8.8.3: a strong
 * validator is unique across representations; the zstd, gzip and br forms
 * are other representations): `"<digest>"` identity, and for a coded form
 * `"<digest>-<coding>.<params>"` (`-zstd`, `-gzip`, `-br`), where `params`
 * is 6 hex digits of a digest of what makes the coded bytes besides the
 * identity bytes: the level and the identity length of each compressed piece
 * (gzip and zstd are compressed in pieces at the cuts a build made, and
 * two builds may cut differently). One tag is so always one byte sequence
 * (docs/decisions.md "Coded tags name their cuts"). The coded tag is known
 * once the page is built; the identity digest is known before.
 *
 * If-None-Match is compared weakly (RFC 9110 13.1.2) and by identity bytes:
 * a listed tag of the same digest, whatever coding suffix it carries,
 * answers 304 before anything is built, so a client loses no 304 when
 * another server (or a rebuilt page) cut the coded form differently. The
 * 304 carries the listed tag that matched (the one of the coding asked for
 * when there is one): the representation the client holds, which a cache
 * picks by it to freshen (RFC 9111 4.3.4).
 */
import * as cryptoModule from 'node:crypto';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { FastifyReply } from 'fastify';
import type { ResolvedParams } from '../../core/page-rule.js';
import type { CodedForm, PageEncoding } from '../page-coding.js';

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

/**
 * SHA-256 of a string in base64url: the same bytes either way. Node's one-shot `crypto.hash`
 * (20.12 and later) makes no Hash object; a page's digest is computed once a request, and the
 * Hash object and its three calls cost several times the digest (~1.5 against ~5-10 us on this
 * machine: docs/benchmarks.md, "proof (thirteenth session, 2026-12-03)").
 */
const oneShot = (cryptoModule as { hash?: (algorithm: string, data: string, encoding: 'base64url') => string }).hash;
const sha256 = oneShot !== undefined ? (s: string) => oneShot('sha256', s, 'base64url') : (s: string) => createHash('sha256').update(s).digest('base64url');

/** The digest naming a page: representation-independent (the coding suffix is added by `etagFor`). */
export function pageDigest(id: string, incarnation: string, r: ResolvedParams): string {
  return sha256(`${CODE}\0${id}\0${incarnation}\0${r.throughSeq}:${r.end}:${r.maxMessages}:${r.maxBytes ?? ''}`).slice(0, 27);
}

/** A page validated by its bytes (a store without `pageVersion`). */
export function bodyDigest(body: Buffer): string {
  return createHash('sha256').update(CODE).update('\0').update(body).digest('base64url').slice(0, 27);
}

/** The coded tag's parameters: 6 hex digits naming the level and the pieces' identity lengths (one stream: `w`). */
export function formParams(form: CodedForm): string {
  let p = formParamsMemo.get(form);
  if (p === undefined) {
    const cuts = form.pieces === null ? 'w' : form.pieces.join(',');
    p = createHash('sha256').update(`${form.level}\0${cuts}`).digest('hex').slice(0, 6);
    formParamsMemo.set(form, p);
  }
  return p;
}

/** A cached page hands out the same form object request after request: hashed once. */
const formParamsMemo = new WeakMap<CodedForm, string>();

/** The tag of the identity body (`form` null) or of a coded form of it. */
export function etagFor(digest: string, form: CodedForm | null): string {
  return `"${digest}${form === null ? '' : `-${form.encoding}.${formParams(form)}`}"`;
}

const CODED_SUFFIX = /^-(?:zstd|gzip|br)(?:\.[0-9a-f]{6})?$/;

/**
 * RFC 9110 13.1.2: If-None-Match holds `*` or a list of tags; weak comparison,
 * by identity bytes. The listed tag that names the page `digest` (identity or
 * any coded form of it; the one of `encoding` first), `*`, or null.
 */
export function noneMatch(header: string | string[] | undefined, digest: string, encoding: PageEncoding | null): string | null {
  if (header === undefined) return null;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value.trim() === '*') return '*';
  let found: string | null = null;
  for (const m of value.matchAll(/(?:W\/)?"([^"]*)"/g)) {
    const opaque = m[1] as string;
    if (!opaque.startsWith(digest)) continue;
    const rest = opaque.slice(digest.length);
    if (rest !== '' && !CODED_SUFFIX.test(rest)) continue;
    const tag = `"${opaque}"`;
    // The client's copy in the coding asked for, if it holds that one.
    if ((encoding === null && rest === '') || (encoding !== null && rest.startsWith(`-${encoding}`))) return tag;
    found ??= tag;
  }
  return found;
}

/**
 * The tag of a 304 for the listed tag `matched` (noneMatch): that tag, the
 * client's own. For `*`, the identity tag; a coded form's tag is not known
 * until it is built, and a 304 to `*` builds nothing, so none is sent then.
 */
export function notModifiedTag(matched: string, digest: string, encoding: PageEncoding | null): string | null {
  if (matched !== '*') return matched;
  return encoding === null ? etagFor(digest, null) : null;
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
export function setPageCaching(reply: FastifyReply, etag: string | null, pinned: boolean): void {
  if (etag !== null) reply.header('etag', etag);
  reply.header('cache-control', pinned ? IMMUTABLE : REVALIDATE);
  addVary(reply, 'Accept-Encoding');
}
