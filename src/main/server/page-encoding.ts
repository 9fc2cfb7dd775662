/**
 * Compressed response bodies, memoized per prepared body. Pages served from
 * the store's page cache are the same Buffer request after request, so each
 * compressed form is computed once (off the event loop: zlib and the zstd
 * binding both run on the libuv thread pool) and lives exactly as long as the
 * body it was made from (a WeakMap keyed by it). The routes' response
 * compression (response-compression.ts) leaves a response that already
 * carries a Content-Encoding alone.
 *
 * `compressBody` is a pure function of (bytes, coding, level) so it can move
 * into the page workers later (issue 12: compression per slice).
 */
import { compressBody, ENCODING_PREFERENCE, levelFor, type CompressionLevels, type PageEncoding } from '../page-coding.js';

export { compressBody, ENCODING_PREFERENCE, LARGE_BODY, levelFor, SMALL_BODY, type CompressionLevels, type PageEncoding } from '../page-coding.js';

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
  if (typeof acceptEncoding !== 'string') return negotiateNow(acceptEncoding.join(','));
  // A client sends the same header with every request, and clients are few kinds (browsers,
  // libraries): the answer for a header value is kept (a page parsed it, split it and made a Map).
  const known = negotiated.get(acceptEncoding);
  if (known !== undefined) return known;
  const out = negotiateNow(acceptEncoding);
  // Bounded: values a client makes up anew each request cannot grow it, nor long ones fill it.
  if (acceptEncoding.length > NEGOTIATED_MAX_LENGTH) return out;
  if (negotiated.size >= NEGOTIATED_MAX) negotiated.clear();
  negotiated.set(acceptEncoding, out);
  return out;
}

/** negotiate's answers by header value, at most NEGOTIATED_MAX of them (then forgotten at once). */
const negotiated = new Map<string, PageEncoding | null>();
const NEGOTIATED_MAX = 64;
const NEGOTIATED_MAX_LENGTH = 256;

function negotiateNow(acceptEncoding: string): PageEncoding | null {
  const weights = parseAcceptEncoding(acceptEncoding);
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
