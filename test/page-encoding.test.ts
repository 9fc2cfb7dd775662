/**
 * Response codings (issue 12): negotiation per RFC 9110 12.5.3, levels by
 * body size, and every compressed body decoding to exactly the identity
 * body, per coding, over random pages and every fixture. zstd is decoded by
 * independent decoders: fzstd (pure JS) and, where installed, Debian's
 * `zstd` CLI (required in CI: .ci/run installs it).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { decompress as fzstdDecompress } from 'fzstd';
import { describe, expect, it } from 'vitest';
import { packEvents } from '../src/core/chunk-codec.js';
import { decodeWholeLog, referencePage } from '../src/main/reference-reader.js';
import { DEFAULT_ZSTD_LEVEL } from '../src/main/page-coding.js';
import { resolveOptions } from '../src/main/server/options.js';
import { compressBody, LARGE_BODY, levelFor, negotiate, PageEncoder, SMALL_BODY, type PageEncoding } from '../src/main/server/page-encoding.js';
import { dshFixtures } from './helpers/fixtures.js';
import { eventStreamArb } from './helpers/random-log.js';

const LEVELS = { brotliQuality: 4, gzipLevel: 6, zstdLevel: 6 };
const ALL: PageEncoding[] = ['zstd', 'gzip', 'br'];

function zstdCli(): boolean {
  const r = spawnSync('zstd', ['--version'], { encoding: 'utf8' });
  return r.error === undefined && r.status === 0;
}
const HAVE_ZSTD_CLI = zstdCli();

/** Every decoder we have for `coding`, each giving the bytes it decoded. */
function decoders(coding: PageEncoding): ((b: Buffer) => Buffer)[] {
  switch (coding) {
    case 'gzip':
      return [(b) => gunzipSync(b)];
    case 'br':
      return [(b) => brotliDecompressSync(b)];
    case 'zstd': {
      const out: ((b: Buffer) => Buffer)[] = [(b) => Buffer.from(fzstdDecompress(b))];
      if (HAVE_ZSTD_CLI)
        out.push((b) => {
          const r = spawnSync('zstd', ['-d', '-c', '-q'], { input: b, maxBuffer: 256 * 1024 * 1024 });
          expect(r.status, String(r.stderr)).toBe(0);
          return r.stdout;
        });
      return out;
    }
  }
}

async function expectRoundTrip(body: Buffer): Promise<void> {
  const enc = new PageEncoder(LEVELS);
  for (const coding of ALL) {
    const coded = await enc.encode(body, coding);
    for (const decode of decoders(coding)) expect(decode(coded).equals(body), `${coding} of ${body.length} bytes`).toBe(true);
  }
}

describe('negotiate (RFC 9110 12.5.3)', () => {
  const table: [string | string[] | undefined, PageEncoding | null][] = [
    // Server preference zstd > gzip > br among equal weights.
    ['gzip, deflate, br, zstd', 'zstd'],
    ['gzip, deflate, br', 'gzip'],
    ['br, gzip', 'gzip'],
    ['br', 'br'],
    ['deflate, br', 'br'],
    [['deflate', 'gzip'], 'gzip'],
    ['x-gzip', 'gzip'],
    ['ZSTD', 'zstd'],
    // q values rank; q=0 refuses.
    ['br;q=1, gzip;q=0.5', 'br'],
    ['zstd;q=0.2, gzip;q=0.9, br;q=0.5', 'gzip'],
    ['gzip;q=1.0, br;q=0', 'gzip'],
    ['zstd;q=0, gzip;q=0, br', 'br'],
    ['zstd;q=0.001, gzip;q=0', 'zstd'],
    ['gzip ; q=0.5 , br ; Q=0.4', 'gzip'],
    // Wildcards: `*` gives its weight to every coding not named.
    ['*', 'zstd'],
    ['*;q=0.5, zstd;q=0', 'gzip'],
    ['*;q=0.5, zstd;q=0, gzip;q=0', 'br'],
    ['gzip;q=0.3, *;q=0.5', 'zstd'],
    ['*;q=0', null],
    // identity: answered when weighed above every coding, or when nothing else is acceptable.
    ['identity', null],
    ['gzip;q=0.5, identity', null],
    ['gzip, identity;q=0.5', 'gzip'],
    ['identity;q=0', null],
    ['identity;q=0, *;q=0', null],
    ['br;q=0, gzip;q=0', null],
    ['deflate, compress', null],
    ['', null],
    [undefined, null],
    // Malformed weights drop their element, not the header.
    ['zstd;q=2, gzip', 'gzip'],
    ['zstd;q=abc, br', 'br'],
    ['zstd;q=0.0001, br', 'br'],
    ['zstd;q=1.000, gzip', 'zstd'],
    [', ,gzip,', 'gzip'],
  ];
  it.each(table.map(([h, want]) => [JSON.stringify(h), h, want] as const))('%s', (_name, header, want) => {
    expect(negotiate(header)).toBe(want);
  });

  it('answers a header value the same every time it comes (kept answers), past the bound of kept values and for long ones', () => {
    for (let round = 0; round < 3; round++) {
      for (const [h, want] of table) expect(negotiate(h)).toBe(want);
      // More distinct values than are kept, then the table again.
      for (let i = 0; i < 100; i++) expect(negotiate(`x-made-up-${round}-${i}, gzip;q=0.${(i % 9) + 1}, br;q=0.05`)).toBe('gzip');
      const long = `${'a, '.repeat(200)}br;q=0.5, zstd;q=0.4`;
      expect(negotiate(long)).toBe('br');
      expect(negotiate(long)).toBe('br');
    }
  });
});

describe('levels by body size', () => {
  it('use the configured levels for small bodies and step down for large ones, never raising a configured one', () => {
    expect([SMALL_BODY, SMALL_BODY + 1, LARGE_BODY, LARGE_BODY + 1].map((n) => levelFor('zstd', n, LEVELS))).toEqual([6, 3, 3, 1]);
    expect([SMALL_BODY, SMALL_BODY + 1, LARGE_BODY + 1].map((n) => levelFor('gzip', n, LEVELS))).toEqual([6, 4, 1]);
    expect([SMALL_BODY, SMALL_BODY + 1, LARGE_BODY + 1].map((n) => levelFor('br', n, LEVELS))).toEqual([4, 4, 1]);
    expect(levelFor('gzip', SMALL_BODY + 1, { ...LEVELS, gzipLevel: 2 })).toBe(2);
    expect(levelFor('zstd', 10, { brotliQuality: 4, gzipLevel: 6 })).toBe(DEFAULT_ZSTD_LEVEL);
  });

  it('zstd without a configured level: 3 up to 2 MiB (a typical page), 1 above (docs/decisions.md "zstd level 3 for typical pages")', () => {
    const none = { brotliQuality: 4, gzipLevel: 6 };
    expect(DEFAULT_ZSTD_LEVEL).toBe(3);
    expect([10, SMALL_BODY, SMALL_BODY + 1, LARGE_BODY, LARGE_BODY + 1].map((n) => levelFor('zstd', n, none))).toEqual([3, 3, 3, 3, 1]);
    expect(resolveOptions({}).compression.zstdLevel).toBeUndefined();
  });
});

describe('compressed bodies decode to exactly the identity body', () => {
  it('zstd CLI is there to check against (required in CI: .ci/run installs zstd)', () => {
    if (process.env.CI) expect(HAVE_ZSTD_CLI, 'zstd must be installed in CI').toBe(true);
  });

  it('memoizes one form per body and coding; a zstd body is one frame', async () => {
    const enc = new PageEncoder(LEVELS);
    const body = Buffer.from(JSON.stringify({ records: Array.from({ length: 2000 }, (_, i) => ({ event: { seq: i, text: `token ${i}` } })) }));
    for (const coding of ALL) {
      const first = enc.encode(body, coding);
      expect(enc.encode(body, coding)).toBe(first);
      expect((await first).length).toBeLessThan(body.length / 4);
    }
    const z = await enc.encode(body, 'zstd');
    expect(z.subarray(0, 4).equals(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]))).toBe(true);
  });

  it('over random pages', async () => {
    await fc.assert(
      fc.asyncProperty(eventStreamArb(), async (events) => {
        await expectRoundTrip(Buffer.from(JSON.stringify({ records: packEvents(events) })));
      }),
      { numRuns: 40 },
    );
  });

  it('for an empty body and for bodies in every size tier', async () => {
    await expectRoundTrip(Buffer.alloc(0));
    const one = readFileSync(dshFixtures()[0]!);
    for (const size of [SMALL_BODY + 100, LARGE_BODY + 100]) {
      const parts: Buffer[] = [];
      let n = 0;
      while (n < size) {
        parts.push(one);
        n += one.length;
      }
      await expectRoundTrip(Buffer.concat(parts));
    }
  });

  it.each(dshFixtures().map((f) => [basename(f), f]))('%s: its whole-log page, in every coding', async (_name, file) => {
    const log = decodeWholeLog(readFileSync(file));
    const body = Buffer.from(JSON.stringify(referencePage(log, 'x', {})));
    await expectRoundTrip(body);
  });

  it('the same bytes at every level the tiers use', async () => {
    const body = Buffer.from(JSON.stringify(referencePage(decodeWholeLog(readFileSync(dshFixtures()[1]!)), 'x', {})));
    for (const [coding, levels] of [['zstd', [1, 3, 6]], ['gzip', [1, 4, 6]], ['br', [2, 4]]] as const)
      for (const level of levels) for (const decode of decoders(coding)) expect(decode(await compressBody(body, coding, level)).equals(body)).toBe(true);
  });
});
