/**
 * A response coded as it is written, for streams (the follow route's
 * Server-Sent Events), issue 12. Every write is coded as one more piece
 * that ends on a flush, so the client decodes each event as soon as it
 * arrives, and the snapshot's page goes in as the page path coded it (the
 * workers' pieces, kept with the prepared page): no page is compressed
 * twice.
 *
 * - gzip: one member; the header before the first piece, each piece raw
 *   deflate ending on a full flush, the final block and the trailer (CRC-32
 *   combined from the pieces', total length) when the stream ends
 *   (streams/gzip-members.ts);
 * - zstd: one frame per write.
 *
 * brotli has no such pieces (its streams do not concatenate): a stream asked
 * by a client that accepts only brotli goes out uncoded (docs/decisions.md).
 */
import { codeHere } from '../coded-page.js';
import { crc32Combine, FINAL_EMPTY_BLOCK, GZIP_HEADER, gzipEnd, type CodedPiece } from '../../streams/gzip-members.js';

const EMPTY = Buffer.alloc(0);

export class StreamCoder {
  private crc = 0;
  private length = 0;
  private started = false;

  constructor(
    readonly encoding: 'gzip' | 'zstd',
    private readonly level: number,
  ) {}

  /** Identity bytes as the bytes to send. */
  code(chunk: Buffer | string): Buffer {
    const b = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (b.length === 0) return this.head();
    return this.coded(codeHere(b, this.encoding, this.level));
  }

  /** A piece coded already (gzip: raw deflate ending on a full flush; zstd: whole frames), as the bytes to send. */
  coded(p: CodedPiece): Buffer {
    this.crc = this.length === 0 ? p.crc : crc32Combine(this.crc, p.crc, p.length);
    this.length += p.length;
    const head = this.head();
    const bytes = Buffer.from(p.bytes.buffer, p.bytes.byteOffset, p.bytes.byteLength);
    return head.length === 0 ? bytes : Buffer.concat([head, bytes]);
  }

  /** The bytes that end the stream (gzip: final block and trailer). */
  finish(): Buffer {
    const head = this.head();
    if (this.encoding !== 'gzip') return head;
    const end = Buffer.from(gzipEnd(this.crc, this.length));
    return head.length === 0 ? end : Buffer.concat([head, end]);
  }

  private head(): Buffer {
    if (this.started) return EMPTY;
    this.started = true;
    return this.encoding === 'gzip' ? Buffer.from(GZIP_HEADER) : EMPTY;
  }
}

/**
 * The inner piece of a page coded by the page path (coded-page.ts), for a
 * stream to carry: a gzip member's deflate data without its header, final
 * block and trailer (with the CRC-32 the trailer names), or zstd's frames as
 * they are; null when `coded` is not laid out as that path writes it.
 */
export function innerPiece(coded: Buffer, encoding: 'gzip' | 'zstd', identityLength: number): CodedPiece | null {
  if (encoding === 'zstd') return { bytes: coded, crc: 0, length: identityLength };
  const tail = FINAL_EMPTY_BLOCK.length + 8;
  if (coded.length < GZIP_HEADER.length + tail) return null;
  if (!coded.subarray(0, GZIP_HEADER.length).equals(GZIP_HEADER)) return null;
  const end = coded.length - tail;
  if (!coded.subarray(end, end + FINAL_EMPTY_BLOCK.length).equals(FINAL_EMPTY_BLOCK)) return null;
  if (coded.readUInt32LE(coded.length - 4) !== identityLength % 0x1_0000_0000) return null;
  return { bytes: coded.subarray(GZIP_HEADER.length, end), crc: coded.readUInt32LE(coded.length - 8), length: identityLength };
}
