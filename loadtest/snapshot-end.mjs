/**
 * Where a follow's snapshot event ends in the bytes as they arrive, for the attach load
 * (overload-clients.mjs), identity or coded as a browser's EventSource gets it.
 *
 * The attach's latency is the time to the snapshot's last byte, so the load generator must find
 * that byte without spending, per attach, a large share of what the server spends: at 256
 * followers one client thread parsing every snapshot whole (236 KiB each, ~2,000 a second) added
 * its own loop's delay to the p99 it reported (docs/benchmarks.md, rel fourteenth session). So:
 *
 * - identity: the bytes are searched (the snapshot is the first event; its frame ends at the
 *   first blank line after `event: snapshot`; the page JSON is compact, no raw line break);
 * - zstd (what the server answers a browser's `gzip, deflate, br, zstd`; every write one or more
 *   whole frames, stream-coding.ts): the frames are walked by their block headers without decoding
 *   them; a frame is decoded and searched only when it is small (at most SMALL_FRAME bytes coded:
 *   the SSE frame's edges, `event: snapshot ... data: ` and the blank line), a large one (the page)
 *   is skipped, its content assumed to hold no blank line;
 * - gzip: inflated as it arrives (node's zlib stream), the end searched in the output; the time is
 *   that of the last coded chunk fed in when the output shows the end.
 *
 * What is skipped on the timing path is checked on a sample (`validate`): the whole snapshot then
 * decoded, its `data:` parsed as JSON and required to be the SPEC's snapshot (`cursor`, the tail
 * page through it: `throughSeq` = cursor, `toSeq` = cursor + 1, a `records` array), and no blank line inside what was assumed to hold none. The
 * check runs after the time is taken; its failures are counted by the caller (`bad`).
 */
import { createGunzip } from 'node:zlib';
import { Decoder } from '@toondepauw/node-zstd';

const MARK = Buffer.from('event: snapshot');
const DATA = Buffer.from('\ndata: ');
/** A zstd frame at most this many coded bytes is decoded on the timing path (the SSE frame's edges). */
const SMALL_FRAME = 4096;
const ZSTD_MAGIC = 0xfd2fb528;
const zstd = new Decoder();

/** Whether `text` (a snapshot event's bytes, `event: snapshot` up to its blank line) is the SPEC's snapshot of a page. */
export function checkSnapshot(event) {
  const d = event.indexOf(DATA);
  const end = event.indexOf('\n\n', d + 1);
  if (d === -1 || end === -1 || end !== event.length - 2) return false;
  try {
    const { cursor, page } = JSON.parse(event.subarray(d + DATA.length, end).toString('utf8'));
    return Number.isSafeInteger(cursor) && page?.throughSeq === cursor && page.toSeq === cursor + 1 && Array.isArray(page.records);
  } catch {
    return false;
  }
}

/**
 * Searches decoded pieces of the stream for the snapshot's end: `push(piece)` true at the piece
 * holding it; `skip()` for a piece not searched (its content taken to hold no blank line).
 */
class Search {
  marked = false;
  done = false;
  head = Buffer.alloc(0);
  prev = 0; // the last byte searched, for a blank line split across pieces
  /** The event's bytes when validating (null: not kept). */
  kept;

  constructor(keep) {
    this.kept = keep ? [] : null;
  }

  skip() {
    this.prev = 0;
  }

  push(d) {
    if (this.done) return false;
    let at = -1;
    let from = 0;
    if (!this.marked) {
      this.head = this.head.length === 0 ? d : Buffer.concat([this.head, d]);
      const m = this.head.indexOf(MARK);
      if (m === -1) {
        if (this.head.length > 4096) this.head = this.head.subarray(this.head.length - MARK.length);
        return false;
      }
      this.marked = true;
      d = this.head.subarray(m);
      this.head = Buffer.alloc(0);
      at = d.indexOf('\n\n');
    } else {
      at = this.prev === 0x0a && d[0] === 0x0a ? 0 : d.indexOf('\n\n');
      if (at === 0 && this.prev === 0x0a) from = -1; // the blank line's first byte was in the last piece
    }
    this.prev = d.length > 0 ? d[d.length - 1] : this.prev;
    if (at === -1) {
      this.kept?.push(d);
      return false;
    }
    this.done = true;
    this.kept?.push(d.subarray(0, at + (from === -1 ? 1 : 2)));
    return true;
  }

  event() {
    return this.kept === null ? null : Buffer.concat(this.kept);
  }
}

/** zstd's frames walked by their headers: complete frames handed to `onFrame(bytes | null, codedLength)` (null: not kept). */
class ZstdFrames {
  buf = Buffer.alloc(0); // bytes not yet walked (a header split across chunks)
  frame = []; // the current frame's bytes, while kept
  frameLength = 0;
  keepAll;
  keeping = true;
  state = 'magic'; // magic | block | skip | checksum
  skipLeft = 0;
  lastBlock = false;
  checksum = false;

  constructor(keepAll, onFrame) {
    this.keepAll = keepAll;
    this.onFrame = onFrame;
  }

  /** Walks `chunk`; throws on bytes that are not zstd frames. */
  push(chunk) {
    let b = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    let i = 0;
    const take = (n) => {
      // the frame's bytes [i, i + n) belong to the current frame
      if (this.keeping) {
        this.frame.push(b.subarray(i, i + n));
        if (!this.keepAll && this.frameLength + n > SMALL_FRAME) {
          this.keeping = false;
          this.frame = [];
        }
      }
      this.frameLength += n;
      i += n;
    };
    for (;;) {
      if (this.state === 'skip') {
        const n = Math.min(this.skipLeft, b.length - i);
        take(n);
        this.skipLeft -= n;
        if (this.skipLeft > 0) break;
        this.state = this.lastBlock ? (this.checksum ? 'checksum' : 'end') : 'block';
        if (this.state !== 'end') continue;
      }
      if (this.state === 'end') {
        this.onFrame(this.keeping ? Buffer.concat(this.frame) : null, this.frameLength);
        this.frame = [];
        this.frameLength = 0;
        this.keeping = true;
        this.state = 'magic';
        continue;
      }
      const left = b.length - i;
      if (this.state === 'magic') {
        if (left < 6) break;
        if (b.readUInt32LE(i) !== ZSTD_MAGIC) throw new Error('not a zstd frame');
        const fhd = b[i + 4];
        const fcsFlag = fhd >> 6;
        const single = (fhd >> 5) & 1;
        const did = [0, 1, 2, 4][fhd & 3];
        const fcs = [single ? 1 : 0, 2, 4, 8][fcsFlag];
        const n = 5 + (single ? 0 : 1) + did + fcs;
        if (left < n) break;
        this.checksum = ((fhd >> 2) & 1) === 1;
        take(n);
        this.state = 'block';
        continue;
      }
      if (this.state === 'block') {
        if (left < 3) break;
        const h = b[i] | (b[i + 1] << 8) | (b[i + 2] << 16);
        this.lastBlock = (h & 1) === 1;
        const type = (h >> 1) & 3;
        if (type === 3) throw new Error('reserved zstd block type');
        take(3);
        this.skipLeft = type === 1 ? 1 : h >>> 3;
        this.state = 'skip';
        continue;
      }
      if (this.state === 'checksum') {
        if (left < 4) break;
        take(4);
        this.state = 'end';
        continue;
      }
    }
    // what is left is a header split across chunks; block contents never stay here (`skip` takes them)
    this.buf = i >= b.length ? Buffer.alloc(0) : Buffer.from(b.subarray(i));
  }
}

/**
 * The snapshot's end in one follow's body, for `encoding` (the answer's Content-Encoding, or
 * undefined). `push(chunk, at)` with each chunk and its arrival time; `end` is then the arrival
 * time of the chunk that completed the snapshot (null until then); `valid` after `end`: null when
 * not validated, else whether the snapshot checked (a promise for gzip, settled with the stream).
 */
export class SnapshotEnd {
  end = null;
  valid = null;

  constructor(encoding, validate) {
    this.search = new Search(validate);
    this.validate = validate;
    if (encoding === undefined || encoding === 'identity') {
      this.pushCoded = (chunk) => this.found(this.search.push(chunk));
    } else if (encoding === 'zstd') {
      const frames = new ZstdFrames(validate, (bytes) => {
        if (this.end !== null) return;
        if (bytes === null) this.search.skip();
        else this.found(this.search.push(zstd.decodeSync(bytes)));
      });
      this.pushCoded = (chunk) => frames.push(chunk);
    } else if (encoding === 'gzip') {
      const gunzip = createGunzip();
      gunzip.on('data', (d) => this.found(this.search.push(d)));
      gunzip.on('error', () => {});
      this.pushCoded = (chunk) => gunzip.write(chunk);
      this.close = () => gunzip.destroy();
    } else {
      throw new Error(`no snapshot search for Content-Encoding ${encoding}`);
    }
  }

  lastAt = 0;

  found(yes) {
    if (!yes || this.end !== null) return;
    this.end = this.lastAt;
    if (this.validate) this.valid = checkSnapshot(this.search.event());
    this.onEnd?.(this.end);
  }

  /** A chunk of the body as it arrived at `at` (ms); `onEnd(at)` is called once the snapshot's end is seen. */
  push(chunk, at) {
    if (this.end !== null) return;
    this.lastAt = at;
    this.pushCoded(chunk);
  }

  close() {}
}
