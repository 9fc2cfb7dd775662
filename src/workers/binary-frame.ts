/**
 * A binary (SPF2) frame on the page path without unpacking it: its payload
 * is transcoded to the JSON bytes of its record (streams/msgpack-json.ts),
 * and those bytes are read as a JSONL frame holding them would be, by the
 * same scanners, so both encodings of a record give the same page bytes.
 * Called by page-task.ts for each binary frame; what this declines
 * (damage, types JSON cannot hold, layouts the scanners do not know) takes
 * the full decode, which names the fault exactly.
 *
 * Integrity: a frame whose bytes match the writer's chained checksum record
 * (frames.crc2, checked for the whole slice at once by CrcCursor) is the
 * writer's own MessagePack of a validated record, so its JSON is the line
 * the writer would have written for it, and the trusted layout applies
 * (trusted-frame-scanner.ts). Any other frame's payload is checked against
 * the CRC-32 in its own header, transcoded in strict mode and read by the
 * validating scanners.
 */
import { crc32 } from 'node:zlib';
import type { SliceEncoder } from './slice-encoder.js';
import type { SliceTask } from './slice-protocol.js';
import type { CrcCursor } from '../streams/frame-crc-file.js';
import { BINARY_FRAME_VERSION, BINARY_HEADER_BYTES, MAX_FRAME_BYTES } from '../streams/frame-codec.js';
import { binaryRow, continuedBinaryRow, readWriterRow, rowGapsBound, rowMembersBound, writeRowGaps, writeRowMembers } from '../streams/msgpack-row.js';
import type { RunKey } from '../core/chunk-codec.js';
import { jsonBytesBound, msgpackToJson, TRANSCODE_DECLINED } from '../streams/msgpack-json.js';
import { scanJsonlRow } from '../streams/jsonl-row-scanner.js';
import { scanJsonlEvent } from '../streams/jsonl-event-scanner.js';
import { OTHER_LAYOUT, scanTrustedFrame, TRUSTED_EVENT, TRUSTED_ROW, trustedEventSeq, trustedRow } from '../streams/trusted-frame-scanner.js';
import { isMessageTypeAt, mentionsGroupKeys, messageGroup } from '../streams/message-group.js';
import { frameClaim } from '../core/frame-claim.js';

/** What binaryFrame did with the frame: read it (see `binary`), left it to the full decode, or found it holding another seq. */
export const BINARY_READ = 0;
export const BINARY_FULL_DECODE = 1;
export const BINARY_WRONG_SEQ = 2;

/**
 * The frame binaryFrame last read: its length, logical events, first seq and claim
 * (core/frame-claim.ts), and its block when it was a writer's row (else null). Reused.
 */
export const binary: { length: number; count: number; first: number; claim: number; key: RunKey | null } = { length: 0, count: 0, first: 0, claim: 0, key: null };

/** Where payloads are transcoded: reused from frame to frame; a frame needing more gets a buffer of its own. */
const KEEP_SCRATCH_BYTES = 1024 * 1024;
let scratch = Buffer.allocUnsafe(64 * 1024);

/**
 * Read the binary frame at `bytes[pos]` (log offset `offset`, the slice's
 * bytes ending at `len`), expected to start at `seq`, into `enc` cut to the
 * task's page range; `block`: the previous frame's block when it was a
 * writer's row. BINARY_READ: `binary` says what it held.
 */
export function binaryFrame(bytes: Buffer, pos: number, offset: number, len: number, seq: number, task: SliceTask, crcs: CrcCursor, enc: SliceEncoder, block: RunKey | null): number {
  // The header as frame-codec.ts reads it (anything off is left to it, to be named).
  if (pos + BINARY_HEADER_BYTES > len || bytes[pos + 1] !== 0x50 || bytes[pos + 2] !== 0x46 || bytes[pos + 3] !== 0x32 || bytes.readUInt16LE(pos + 4) !== BINARY_FRAME_VERSION) return BINARY_FULL_DECODE;
  const payloadLength = bytes.readUInt32LE(pos + 8);
  if (payloadLength > MAX_FRAME_BYTES || pos + BINARY_HEADER_BYTES + payloadLength > len) return BINARY_FULL_DECODE;
  const length = BINARY_HEADER_BYTES + payloadLength;
  const trusted = crcs.trustedLength(offset) === length;
  const payload = pos + BINARY_HEADER_BYTES;
  const payloadEnd = pos + length;
  if (!trusted && crc32(bytes.subarray(payload, payloadEnd)) !== bytes.readUInt32LE(pos + 12)) return BINARY_FULL_DECODE;
  binary.length = length;
  binary.key = null;
  // A row continuing the previous frame's block whose metadata holds is read from it (no header or gap walk).
  const m0 = trusted && block !== null ? crcs.continuingRow() : -1;
  const known = m0 >= 0 && continuedBinaryRow(bytes, pos, payload, payloadEnd, block as RunKey, crcs.metaTime0(m0), crcs.metaDtSum(m0), crcs.metaCount(m0), crcs.metaDtStart(m0), crcs.metaDtEnd(m0));
  // The writer's own row, wholly in the page: its gaps and members transcoded straight into the run (msgpack-row.ts).
  if (known || (trusted && readWriterRow(bytes, payload, payloadEnd))) {
    const r = binaryRow;
    binary.key = r.key;
    binary.count = r.n;
    binary.first = r.seq0;
    if (r.seq0 !== seq) return BINARY_WRONG_SEQ;
    binary.claim = frameClaim(seq, offset, -1);
    if (seq + r.n <= task.fromSeq || seq >= task.toSeq) return BINARY_READ;
    if (seq >= task.fromSeq && seq + r.n <= task.toSeq) {
      enc.wholeRow(r.key, seq, r.time0, r.time0 + r.dtSum, r.n);
      const dt = enc.runGaps;
      dt.reserve(rowGapsBound());
      dt.length = writeRowGaps(bytes, dt.buf, dt.length, dt.length > 0);
      const m = enc.runMembers;
      m.reserve(rowMembersBound());
      m.length = writeRowMembers(bytes, m.buf, m.length, m.length > 0);
      return BINARY_READ;
    }
    // Cut by the page's edge (two rows a page at most): read below, as any other.
  }
  const room = jsonBytesBound(payloadEnd - payload);
  let out = scratch;
  if (room > out.length) {
    out = Buffer.allocUnsafe(room);
    if (room <= KEEP_SCRATCH_BYTES) scratch = out;
  }
  const end = msgpackToJson(bytes, payload, payloadEnd, out, 0, !trusted);
  if (end === TRANSCODE_DECLINED) return BINARY_FULL_DECODE;
  // As a JSONL frame holding these bytes is read (page-task.ts).
  const layout = trusted ? scanTrustedFrame(out, 0, end) : OTHER_LAYOUT;
  const raw = layout === TRUSTED_ROW ? trustedRow : layout === OTHER_LAYOUT ? scanJsonlRow(out, 0, end, false) : null;
  if (raw !== null) {
    binary.count = raw.n;
    binary.first = raw.seq0;
    if (raw.seq0 !== seq) return BINARY_WRONG_SEQ;
    const from = Math.max(task.fromSeq - seq, 0);
    const to = Math.min(task.toSeq - seq, raw.n);
    if (from < to) enc.rawRow(raw, from, to);
    binary.claim = frameClaim(seq, offset, -1);
    return BINARY_READ;
  }
  const ev = layout === TRUSTED_EVENT ? null : scanJsonlEvent(out, 0, end, false);
  const evSeq = layout === TRUSTED_EVENT ? trustedEventSeq() : ev === null ? -1 : ev.seq;
  if (evSeq < 0) return BINARY_FULL_DECODE;
  binary.count = 1;
  binary.first = evSeq;
  if (evSeq !== seq) return BINARY_WRONG_SEQ;
  if (seq >= task.fromSeq && seq < task.toSeq) enc.rawEvent(out, 0, end);
  const message = ev === null ? isMessageTypeAt(out, 9) : ev.message;
  const groupKeys = message && (ev === null ? mentionsGroupKeys(out, 0, end) : ev.groupKeys);
  binary.claim = frameClaim(seq, offset, message ? messageGroup(out, 0, end, seq, groupKeys) : -1);
  return BINARY_READ;
}
