/**
 * Response codings of a page body, by name: which ones there are, their
 * levels by body size, and a body compressed in one piece. The page path
 * compresses in the workers instead (workers/slice-compress.ts, joined by
 * coded-page.ts); one piece is for brotli (its streams do not concatenate)
 * and for bodies no worker built.
 */
import { Encoder as ZstdEncoder } from '@toondepauw/node-zstd';
import { promisify } from 'node:util';
import { brotliCompress, constants as zc, gzip } from 'node:zlib';

const brotli = promisify(brotliCompress);
const gz = promisify(gzip);

export type PageEncoding = 'zstd' | 'gzip' | 'br';

/** Server preference among equally acceptable codings (brotli last: its streams do not concatenate). */
export const ENCODING_PREFERENCE: readonly PageEncoding[] = ['zstd', 'gzip', 'br'];

/** A coding and the levels to pick from by body size: what a page is asked in. */
export interface OutputCoding {
  encoding: PageEncoding;
  levels: CompressionLevels;
}

export interface CompressionLevels {
  /** brotli quality for bodies up to SMALL_BODY; larger bodies step down (levelFor). */
  brotliQuality: number;
  /** gzip level for bodies up to SMALL_BODY; larger bodies step down (levelFor). */
  gzipLevel: number;
  /** zstd level for bodies up to SMALL_BODY; larger bodies step down (levelFor). */
  zstdLevel?: number;
}

/**
 * A body in a coding, with what determines its bytes besides the identity
 * bytes: the level and how it was cut (docs/decisions.md "Coded tags name
 * their cuts"). The coded tag is a digest of these (page-caching.ts), so one
 * tag is one byte sequence even though two builds may cut differently.
 */
export interface CodedForm {
  encoding: PageEncoding;
  body: Buffer;
  level: number;
  /**
   * The identity length of each compressed piece, in body order (pieces
   * compressed apart and joined: coded-page.ts); null: one stream made by
   * compressBody (brotli, and bodies no worker compressed).
   */
  pieces: readonly number[] | null;
}

/**
 * The zstd level for bodies up to SMALL_BODY when none is configured: 3, not 6. On the real
 * 50-message pages (93-270 KB) level 6 cost 1.19 ms of a worker's CPU a page against 0.42 at 3
 * for 10% more bytes on the wire (ratio 6.45 against 5.87), and 3 still beats gzip 6 (5.44,
 * 2.09 ms), which is what every browser got before zstd. docs/decisions.md "zstd level 3 for
 * typical pages".
 */
export const DEFAULT_ZSTD_LEVEL = 3;

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
      return Math.min(levels.zstdLevel ?? DEFAULT_ZSTD_LEVEL, [Infinity, 3, 1][tier]!);
    case 'gzip':
      return Math.min(levels.gzipLevel, [Infinity, 4, 1][tier]!);
    case 'br':
      return Math.min(levels.brotliQuality, [Infinity, 4, 1][tier]!);
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

