import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { negotiate, PageEncoder } from '../src/main/server/page-encoding.js';

describe('page encoding', () => {
  it('prefers br, then gzip, honours q=0, and falls back to identity', () => {
    expect(negotiate('gzip, deflate, br')).toBe('br');
    expect(negotiate('gzip;q=1.0, br;q=0')).toBe('gzip');
    expect(negotiate(['deflate', 'gzip'])).toBe('gzip');
    expect(negotiate('*')).toBe('gzip');
    expect(negotiate('identity')).toBeNull();
    expect(negotiate('br;q=0, gzip;q=0')).toBeNull();
    expect(negotiate(undefined)).toBeNull();
  });

  it('compresses a body once per encoding and decodes back to it', async () => {
    const enc = new PageEncoder({ brotliQuality: 4, gzipLevel: 6 });
    const body = Buffer.from(JSON.stringify({ records: Array.from({ length: 2000 }, (_, i) => ({ event: { seq: i, text: `token ${i}` } })) }));
    const br = enc.encode(body, 'br');
    expect(enc.encode(body, 'br')).toBe(br);
    expect(brotliDecompressSync(await br)).toEqual(body);
    expect(gunzipSync(await enc.encode(body, 'gzip'))).toEqual(body);
    expect((await br).length).toBeLessThan(body.length / 4);
  });
});
