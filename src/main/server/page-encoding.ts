/**
 * Compressed page bodies, memoized per prepared body. Pages served from the
 * store's page cache are the same Buffer request after request, so their
 * brotli or gzip form is computed once (on the libuv thread pool, not the
 * event loop) and reused; @fastify/compress leaves a response that already
 * carries a Content-Encoding alone.
 */
import { promisify } from 'node:util';
import { brotliCompress, constants as zc, gzip } from 'node:zlib';

const brotli = promisify(brotliCompress);
const gz = promisify(gzip);

export type PageEncoding = 'br' | 'gzip';

/** The encoding to answer with: br, then gzip, honouring q=0; null for identity. */
export function negotiate(acceptEncoding: string | string[] | undefined): PageEncoding | null {
  const header = Array.isArray(acceptEncoding) ? acceptEncoding.join(',') : (acceptEncoding ?? '');
  const ok = new Set<string>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (name && !(q !== undefined && Number(q.slice(2)) === 0)) ok.add(name);
  }
  if (ok.has('br')) return 'br';
  if (ok.has('gzip') || ok.has('*')) return 'gzip';
  return null;
}

export class PageEncoder {
  private readonly memo = new WeakMap<Buffer, Map<PageEncoding, Promise<Buffer>>>();

  constructor(private readonly opts: { brotliQuality: number; gzipLevel: number }) {}

  encode(body: Buffer, encoding: PageEncoding): Promise<Buffer> {
    let forBody = this.memo.get(body);
    if (forBody === undefined) {
      forBody = new Map();
      this.memo.set(body, forBody);
    }
    let out = forBody.get(encoding);
    if (out === undefined) {
      out =
        encoding === 'br'
          ? brotli(body, { params: { [zc.BROTLI_PARAM_QUALITY]: this.opts.brotliQuality, [zc.BROTLI_PARAM_MODE]: zc.BROTLI_MODE_TEXT, [zc.BROTLI_PARAM_SIZE_HINT]: body.length } })
          : gz(body, { level: this.opts.gzipLevel });
      forBody.set(encoding, out);
      out.catch(() => forBody?.delete(encoding));
    }
    return out;
  }
}
