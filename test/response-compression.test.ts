/**
 * The routes' response compression (src/main/server/response-compression.ts)
 * makes the choices @fastify/compress made when the server used it (issue 12
 * took it off the start-up path): the same app built once with each, the
 * same requests to both, and for every one the same status, Content-Encoding,
 * Vary and decoded body. Bodies of random sizes around the threshold, every
 * Accept-Encoding form that matters (q values, `*`, x-gzip, identity, upper
 * case, lists), types the pattern matches and types only mime-db knows,
 * stream bodies, a route opting out, `x-no-compression`, a body already
 * encoded by its route.
 */
import { Readable } from 'node:stream';
import { brotliDecompressSync, constants as zc, gunzipSync, gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { requireCjs } from '../src/main/server/cjs.js';
import { addResponseCompression, responseEncoding } from '../src/main/server/response-compression.js';

const Fastify = (requireCjs('fastify') as typeof import('fastify')).default;
const compressPlugin = requireCjs('@fastify/compress') as (...args: unknown[]) => void;

const THRESHOLD = 1024;
const BROTLI = { params: { [zc.BROTLI_PARAM_QUALITY]: 4, [zc.BROTLI_PARAM_MODE]: zc.BROTLI_MODE_TEXT } };
const ZLIB = { level: 6 };

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function text(n: number, r: () => number): string {
  let s = '';
  while (s.length < n) s += `{"k":${Math.floor(r() * 1000)},"v":"${'abcdefgh'.slice(0, 1 + Math.floor(r() * 8))}"},`;
  return s.slice(0, n);
}

async function app(withPackage: boolean): Promise<FastifyInstance> {
  const a = Fastify();
  if (withPackage) {
    a.register(compressPlugin as never, { global: true, threshold: THRESHOLD, encodings: ['br', 'gzip'], brotliOptions: BROTLI, zlibOptions: ZLIB });
  } else {
    addResponseCompression(a, { threshold: THRESHOLD, brotliOptions: BROTLI, zlibOptions: ZLIB });
  }
  a.register(async (r) => {
    r.get('/text', async (req, reply) => {
      const q = req.query as { n: string; type?: string; vary?: string };
      if (q.type !== undefined) reply.type(q.type);
      if (q.vary !== undefined) reply.header('vary', q.vary);
      return reply.send(text(Number(q.n), rng(Number(q.n))));
    });
    r.get('/json', async (req) => ({ items: text(Number((req.query as { n: string }).n), rng(7)) }));
    r.get('/buffer', async (req, reply) => reply.type('application/octet-stream').send(Buffer.from(text(Number((req.query as { n: string }).n), rng(9)))));
    r.get('/stream', async (_req, reply) => reply.type('text/plain').send(Readable.from([Buffer.from(text(3000, rng(3))), Buffer.from(text(500, rng(4)))])));
    r.get('/coded', async (_req, reply) => reply.header('content-encoding', 'gzip').type('application/json').send(gzipSync('{"already":"coded"}'.repeat(100))));
    r.get('/off', { compress: false }, async () => ({ off: text(5000, rng(5)) }));
    r.get('/off-config', { config: { compress: false } }, async () => ({ off: text(5000, rng(6)) }));
  });
  await a.ready();
  return a;
}

function decoded(res: { headers: Record<string, unknown>; rawPayload: Buffer }): string {
  const ce = res.headers['content-encoding'];
  if (ce === 'br') return brotliDecompressSync(res.rawPayload).toString();
  if (ce === 'gzip') return gunzipSync(res.rawPayload).toString();
  return res.rawPayload.toString();
}

const ACCEPTS: (string | undefined)[] = [
  undefined,
  '',
  'gzip, deflate, br, zstd',
  'gzip, deflate, br',
  'br',
  'gzip',
  'GZIP',
  'x-gzip',
  '*',
  'identity',
  'deflate',
  'zstd',
  'br;q=0.1, gzip;q=0.9',
  'gzip;q=0, br',
  'br;q=0, gzip;q=0',
  'gzip;q=0.5, br;q=0.5',
  'identity;q=1, gzip;q=0.5',
  '*;q=0.2, br;q=0.1',
  'compress, gzip',
  'nonsense',
];

describe('response compression', () => {
  it('answers every request as @fastify/compress did: status, Content-Encoding, Vary, decoded body', async () => {
    const [theirs, ours] = [await app(true), await app(false)];
    try {
      const r = rng(12);
      const urls = ['/stream', '/coded', '/off', '/off-config', '/json?n=2000', '/json?n=100', '/buffer?n=4000'];
      for (const n of [0, 1, 1000, 1023, 1024, 1025, 5000]) urls.push(`/text?n=${n}`);
      for (let i = 0; i < 12; i++) urls.push(`/text?n=${Math.floor(r() * 3000)}`);
      for (const type of ['text/html', 'text/event-stream', 'image/png', 'application/javascript', 'application/x-unknown', 'application/problem+json', 'TEXT/PLAIN']) {
        urls.push(`/text?n=2000&type=${encodeURIComponent(type)}`);
      }
      urls.push(`/text?n=2000&vary=origin`, `/text?n=2000&vary=${encodeURIComponent('Accept-Encoding')}`, `/text?n=2000&vary=accept-encoding`);
      let compared = 0;
      for (const url of urls) {
        for (const accept of ACCEPTS) {
          for (const noCompression of [false, true]) {
            if (noCompression && accept !== 'br') continue;
            const headers: Record<string, string> = {};
            if (accept !== undefined) headers['accept-encoding'] = accept;
            if (noCompression) headers['x-no-compression'] = '1';
            const [a, b] = [await theirs.inject({ url, headers }), await ours.inject({ url, headers })];
            const what = `${url} accept=${JSON.stringify(accept)}${noCompression ? ' x-no-compression' : ''}`;
            expect(b.statusCode, what).toBe(a.statusCode);
            expect(b.headers['content-encoding'], what).toBe(a.headers['content-encoding']);
            expect(b.headers.vary, what).toBe(a.headers.vary);
            expect(b.headers['content-type'], what).toBe(a.headers['content-type']);
            expect(decoded(b), what).toBe(decoded(a));
            compared++;
          }
        }
      }
      expect(compared).toBeGreaterThan(700);
    } finally {
      await theirs.close();
      await ours.close();
    }
  });

  it('negotiates br before gzip at equal preference, reads * and x-gzip as gzip, and never picks what q=0 refuses', () => {
    expect(responseEncoding(undefined)).toBeNull();
    expect(responseEncoding('gzip, deflate, br, zstd')).toBe('br');
    expect(responseEncoding('x-gzip')).toBe('gzip');
    expect(responseEncoding('*')).toBe('gzip');
    expect(responseEncoding('br;q=0, gzip')).toBe('gzip');
    expect(responseEncoding('br;q=0, gzip;q=0')).toBeNull();
    expect(responseEncoding('identity')).toBeNull();
    expect(responseEncoding(['gzip', 'br'])).toBe('br');
  });

  it('refuses a route compress setting it does not implement', async () => {
    const a = Fastify();
    addResponseCompression(a, { threshold: THRESHOLD, brotliOptions: BROTLI, zlibOptions: ZLIB });
    expect(() => a.get('/x', { compress: { threshold: 1 } as never }, async () => 'x')).toThrow(/compress option/);
    await a.close();
  });
});
