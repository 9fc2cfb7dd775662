/**
 * Compressed response bodies, memoized per prepared body. Pages served from
 * the store's page cache are the same Buffer request after request, so each
 * compressed form is computed once (off the event loop: zlib and the zstd
 * binding both run on the libuv thread pool) and lives exactly as long as the
 * body it was made from (a WeakMap keyed by it). @fastify/compress leaves a
 * response that already carries a Content-Encoding alone.
 *
 * `compressBody` is a pure function of (bytes, coding, level) so it can move
 * into the page workers later (issue 12: compression per slice).
 */
import { Encoder as ZstdEncoder } from '@toondepauw/node-zstd';
import { promisify } from 'node:util';
import { brotliCompress, constants as zc, gzip } from 'node:zlib';

const brotli = promisify(brotliCompress);
const gz = promisify(gzip);

export type PageEncoding = 'zstd' | 'gzip' | 'br';

/** Server preference among equally acceptable codings (brotli last: its streams do not concatenate). */
export const ENCODING_PREFERENCE: readonly PageEncoding[] = ['zstd', 'gzip', 'br'];

/** One element of Accept-Encoding: coding name (lower case) and its q value. */
function parseAcceptEncoding(header: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of header.split(',')) {
    const [rawName, ...params] = part.split(';');
    const name = (rawName ?? '').trim().toLowerCase();
    if (name === '') continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*(.*?)\s*$/i.exec(p);
      if (m === null) continue;
      // RFC 9110 12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ); anything else ignores the element.
      q = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test(m[1]!) ? Number(m[1]) : Number.NaN;
    }
    if (Number.isNaN(q)) continue;
    const key = name === 'x-gzip' ? 'gzip' : name;
    // A coding named twice keeps its highest weight.
    out.set(key, Math.max(q, out.get(key) ?? 0));
  }
  return out;
}

/**
 * The coding to answer with (RFC 9110 12.5.3), null for identity.
 *
 * - no header, or an empty one: identity;
 * - a coding's weight is its own q, else that of `*`, else it is not acceptable;
 * - q=0 refuses; the highest weight wins, ties go by ENCODING_PREFERENCE;
 * - identity is answered when the client weighs it above every coding it
 *   accepts, and also when it accepts none of ours (even `identity;q=0`:
 *   the page is still served, uncompressed, rather than refused with 406).
 */
export function negotiate(acceptEncoding: string | string[] | undefined): PageEncoding | null {
  if (acceptEncoding === undefined) return null;
  const weights = parseAcceptEncoding(Array.isArray(acceptEncoding) ? acceptEncoding.join(',') : acceptEncoding);
  const star = weights.get('*');
  let best: PageEncoding | null = null;
  let bestQ = 0;
  for (const coding of ENCODING_PREFERENCE) {
    const q = weights.get(coding) ?? star ?? 0;
    if (q > bestQ) {
      best = coding;
      bestQ = q;
    }
  }
  if (best === null) return null;
  const identityQ = weights.get('identity');
  if (identityQ !== undefined && identityQ > bestQ) return null;
  return best;
}

export interface CompressionLevels {
  /** brotli quality for bodies up to SMALL_BODY; larger bodies step down (levelFor). */
  brotliQuality: number;
  /** gzip level for bodies up to SMALL_BODY; larger bodies step down (levelFor). */
  gzipLevel: number;
  /** zstd level for bodies up to SMALL_BODY; larger bodies step down (levelFor). */
  zstdLevel?: number;
}

/** Bodies up to this size get the configured levels: compressing them costs little next to the request. */
export const SMALL_BODY = 256 * 1024;
/** Above this, the fastest levels: a multi-megabyte page must not cost several times its own build. */
export const LARGE_BODY = 2 * 1024 * 1024;

/**
 * The level for a body of `size` bytes (docs/decisions.md "Response
 * compression: zstd, negotiation, levels by size"): the configured level up
 * to SMALL_BODY, a middle level up to LARGE_BODY, the fast level above.
 * Configured levels are caps: a lower one is never raised.
 */
export function levelFor(encoding: PageEncoding, size: number, levels: CompressionLevels): number {
  const tier = size <= SMALL_BODY ? 0 : size <= LARGE_BODY ? 1 : 2;
  switch (encoding) {
    case 'zstd':
      return Math.min(levels.zstdLevel ?? 6, [Infinity, 3, 1][tier]!);
    case 'gzip':
      return Math.min(levels.gzipLevel, [Infinity, 4, 1][tier]!);
    case 'br':
      return Math.min(levels.brotliQuality, [Infinity, 4, 2][tier]!);
  }
}

const zstdEncoders = new Map<number, ZstdEncoder>();

/** `body` compressed as one complete stream (zstd: one frame) of `encoding` at `level`. */
export async function compressBody(body: Buffer, encoding: PageEncoding, level: number): Promise<Buffer> {
  switch (encoding) {
    case 'zstd': {
      let enc = zstdEncoders.get(level);
      if (enc === undefined) zstdEncoders.set(level, (enc = new ZstdEncoder(level)));
      return enc.encode(body);
    }
    case 'gzip':
      return gz(body, { level });
    case 'br':
      return brotli(body, { params: { [zc.BROTLI_PARAM_QUALITY]: level, [zc.BROTLI_PARAM_MODE]: zc.BROTLI_MODE_TEXT, [zc.BROTLI_PARAM_SIZE_HINT]: body.length } });
  }
}

export class PageEncoder {
  private readonly memo = new WeakMap<Buffer, Map<PageEncoding, Promise<Buffer>>>();

  constructor(private readonly levels: CompressionLevels) {}

  encode(body: Buffer, encoding: PageEncoding): Promise<Buffer> {
    let forBody = this.memo.get(body);
    if (forBody === undefined) {
      forBody = new Map();
      this.memo.set(body, forBody);
    }
    let out = forBody.get(encoding);
    if (out === undefined) {
      out = compressBody(body, encoding, levelFor(encoding, body.length, this.levels));
      forBody.set(encoding, out);
      out.catch(() => forBody?.delete(encoding));
    }
    return out;
  }
}
