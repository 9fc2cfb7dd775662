/**
 * Resynchronizing past damaged bytes of a log (docs/decisions.md, "Repair
 * resynchronizes"), the way LevelDB's log reader skips a corrupt record and
 * looks for the next valid one: a damaged frame whose length cannot be
 * trusted (a flipped bit in a binary length field, a torn or garbled JSONL
 * line, garbage) does not make the rest of the log a torn tail. From the
 * first damaged byte on, every place that could start a frame (the SPF2
 * magic, or `{` right after a newline) is tried, and the first *confirmed*
 * valid frame ends the damaged range.
 *
 * A candidate is a valid frame when it decodes fully (SPF2 magic, version,
 * length within the file, CRC-32, MessagePack JSON can hold; or a JSON line
 * that parses) into a well-formed storage record (validateRecord, not a
 * second header). It is confirmed when its seq can follow the damage
 * (at least the expected seq, and no more events skipped than the damaged
 * bytes could hold, MIN_EVENT_BYTES each) and either it holds exactly the
 * expected seq or the log goes on from it: it ends the file, or the frame
 * right after it is valid and continues its seqs. The confirmation keeps bytes
 * inside a damaged payload that merely look like a frame (a JSONL line
 * quoted in a binary frame's text) from being taken for one.
 */
import { recordSpan, validateRecord } from '../../core/chunk-codec.js';
import { BINARY_HEADER_BYTES, decodeFrame, MAX_FRAME_BYTES, type DecodedFrame } from '../../streams/frame-codec.js';
import { IO_BLOCK_BYTES } from './io.js';

/** Positional reads of the log (the storage seam's RandomReader is one): this module opens nothing itself. */
export interface PositionalReader {
  /** Bytes [pos, pos + len), fewer at the end. */
  read(pos: number, len: number): Promise<Buffer>;
}

const NEWLINE = 0x0a;
const BRACE = 0x7b;
const MAGIC = Buffer.from('SPF2', 'latin1');
const FIRST_READ = 64 * 1024;
/**
 * Fewest bytes one event takes in any frame: a member of a packed row in
 * MessagePack is a one-byte dt and a one-character string (2 bytes).
 */
const MIN_EVENT_BYTES = 3;

/** A valid frame found by resync: where it is and which seqs it holds. */
export interface ValidFrame {
  offset: number;
  length: number;
  seq: number;
  count: number;
}

export interface ResyncResult {
  /** The first confirmed valid frame after the damage, or null when none follows. */
  found: ValidFrame | null;
  /** Valid frames seen that could not be confirmed (a seq that cannot follow, or no valid successor): a tail with any is not clearly invalid. */
  unconfirmed: ValidFrame[];
}

/** The valid storage-record frame starting at `pos`, or null. Reads at most the frame (bounded by MAX_FRAME_BYTES). */
export async function validFrameAt(fh: PositionalReader, pos: number, size: number): Promise<ValidFrame | null> {
  if (pos >= size) return null;
  let buf = await fh.read(pos, Math.min(FIRST_READ, size - pos));
  let want = 0;
  if (buf[0] === BRACE) {
    // Grow until the newline shows up (or the frame cannot be one).
    while (buf.indexOf(NEWLINE) === -1) {
      if (buf.length >= size - pos || buf.length >= MAX_FRAME_BYTES) return null;
      buf = await fh.read(pos, Math.min(buf.length * 4, size - pos, MAX_FRAME_BYTES + 1));
    }
  } else {
    if (buf.length < BINARY_HEADER_BYTES || !buf.subarray(0, 4).equals(MAGIC)) return null;
    const len = buf.readUInt32LE(8);
    if (len > MAX_FRAME_BYTES || pos + BINARY_HEADER_BYTES + len > size) return null;
    want = BINARY_HEADER_BYTES + len;
    if (buf.length < want) buf = await fh.read(pos, want);
  }
  const f = decodeFrame(buf, 0, pos);
  if (!f.ok) return null;
  return asRecord(f);
}

function asRecord(f: DecodedFrame): ValidFrame | null {
  try {
    const r = validateRecord(f.record);
    if (r.type === 'session') return null;
    const span = recordSpan(r);
    return { offset: f.offset, length: f.length, seq: span.seq, count: span.count };
  } catch {
    return null;
  }
}

/** Offsets in (from, size) where a frame could start, in order: the SPF2 magic, or `{` after a newline. */
async function* candidateOffsets(fh: PositionalReader, from: number, size: number): AsyncGenerator<number> {
  let pos = from + 1;
  // The byte before `pos`, for the newline rule, and up to 3 bytes kept across blocks for the magic.
  let carry = await fh.read(from, 1);
  let last = -1;
  while (pos < size) {
    const block = await fh.read(pos, Math.min(IO_BLOCK_BYTES, size - pos));
    if (block.length === 0) return;
    const buf = Buffer.concat([carry, block]);
    const base = pos - carry.length; // file offset of buf[0]
    const hits: number[] = [];
    for (let i = buf.indexOf(MAGIC); i !== -1; i = buf.indexOf(MAGIC, i + 1)) if (base + i > from) hits.push(base + i);
    for (let i = buf.indexOf(BRACE, 1); i !== -1; i = buf.indexOf(BRACE, i + 1)) if (buf[i - 1] === NEWLINE && base + i > from) hits.push(base + i);
    hits.sort((a, b) => a - b);
    for (const h of hits) {
      // The carried bytes were searched with the previous block already.
      if (h <= last) continue;
      last = h;
      yield h;
    }
    pos += block.length;
    carry = Buffer.from(buf.subarray(Math.max(0, buf.length - 3)));
  }
}

/**
 * From damage starting at `damageStart` (a frame that did not check, at seq
 * `expected`), find the first confirmed valid frame after it (starting
 * before `before`).
 */
export async function resync(fh: PositionalReader, damageStart: number, size: number, expected: number, before = size): Promise<ResyncResult> {
  const unconfirmed: ValidFrame[] = [];
  for await (const at of candidateOffsets(fh, damageStart, size)) {
    if (at >= before) break;
    const v = await validFrameAt(fh, at, size);
    if (v === null) continue;
    const end = v.offset + v.length;
    // Each skipped event held at least MIN_EVENT_BYTES damaged bytes.
    const plausible = v.seq >= expected && (v.seq - expected) * MIN_EVENT_BYTES <= at - damageStart;
    let confirmed = false;
    if (plausible) {
      // Exactly the expected seq (the damage held no event), or the log goes on from it.
      if (end === size || v.seq === expected) confirmed = true;
      else {
        const next = await validFrameAt(fh, end, size);
        confirmed = next !== null && next.seq === v.seq + v.count;
      }
    }
    if (confirmed) return { found: v, unconfirmed };
    unconfirmed.push(v);
  }
  return { found: null, unconfirmed };
}
