/**
 * Frame codecs (SPEC section 3), pure: JSONL frames and binary SPF2 frames,
 * told apart by their first byte, each decodable alone.
 *
 * Binary frame layout (all little endian), modelled on LevelDB's log records:
 *
 *   0  4  magic "SPF2"
 *   4  2  frame version (2)
 *   6  2  schema version
 *   8  4  payload length
 *  12  4  CRC-32 (IEEE) of the payload
 *  16  …  payload: MessagePack of one record
 *
 * Decoding never throws on bad bytes: it returns a `FrameFault` that names
 * the offset and the reason, so readers can report precisely and skip or stop
 * as their trust rules say.
 */
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';
import { RecordError } from '../core/errors.js';
import { validateRecord } from '../core/chunk-codec.js';
import { jsonNestingExceeds, nestingMessage } from '../core/nesting.js';
import { msgpackJsonFault } from './msgpack-check.js';
import type { StorageRecord } from '../core/types.js';
import { jsonErrorReason, safeLine } from '../core/excerpt.js';

export const BINARY_MAGIC = Buffer.from('SPF2', 'latin1');
export const BINARY_HEADER_BYTES = 16;
export const BINARY_FRAME_VERSION = 2;
/** Schema version of the records this build writes. */
export const RECORD_SCHEMA = 1;
/** Largest frame a reader accepts; anything longer is reported, not allocated. */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

const BRACE = 0x7b; // '{'
const NEWLINE = 0x0a;
const MAGIC0 = 0x53; // 'S'

export type FrameEncoding = 'jsonl' | 'binary';

/**
 * Plain MessagePack maps, no record extension: any MessagePack decoder can read a payload.
 * 64-bit integers decode as numbers: msgpackJsonFault has already refused those past the safe integers.
 */
const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true, int64AsType: 'number' });

export type FaultReason =
  | 'torn' // the frame runs past the end of the available bytes
  | 'bad_magic' // first byte neither '{' nor the SPF2 magic
  | 'bad_version' // SPF2 frame version this build does not read
  | 'oversized' // declared or scanned length over MAX_FRAME_BYTES
  | 'bad_checksum' // payload CRC-32 mismatch
  | 'bad_payload' // payload is not JSON / MessagePack of an object
  | 'bad_record'; // decoded, but breaks a record rule (SPEC section 2)

export interface FrameFault {
  ok: false;
  offset: number;
  reason: FaultReason;
  message: string;
  /** Bytes of the frame when known (a bad checksum still has a length). */
  length?: number;
}

export interface DecodedFrame {
  ok: true;
  offset: number;
  length: number;
  encoding: FrameEncoding;
  schema: number;
  record: unknown;
}

export type FrameResult = DecodedFrame | FrameFault;

export function fault(offset: number, reason: FaultReason, message: string, length?: number): FrameFault {
  const f: FrameFault = { ok: false, offset, reason, message: `frame at offset ${offset}: ${message}` };
  if (length !== undefined) f.length = length;
  return f;
}

export function encodeJsonlFrame(record: unknown): Buffer {
  return Buffer.from(JSON.stringify(record) + '\n', 'utf8');
}

export function encodeBinaryFrame(record: unknown, schema = RECORD_SCHEMA): Buffer {
  // pack() returns a view of msgpackr's shared arena: copy it into the frame.
  const payload = packr.pack(record);
  const frame = Buffer.allocUnsafe(BINARY_HEADER_BYTES + payload.length);
  BINARY_MAGIC.copy(frame, 0);
  frame.writeUInt16LE(BINARY_FRAME_VERSION, 4);
  frame.writeUInt16LE(schema, 6);
  frame.writeUInt32LE(payload.length, 8);
  frame.writeUInt32LE(crc32(payload), 12);
  payload.copy(frame, BINARY_HEADER_BYTES);
  return frame;
}

/**
 * What MessagePack (as msgpackr writes it) cannot keep verbatim: a lone
 * UTF-16 surrogate in a string (MessagePack strings are UTF-8; it comes back
 * as U+FFFD) and an own `__proto__` key (msgpackr renames it to guard
 * against prototype pollution). JSON keeps both. The test is on the JSON
 * text, which escapes lone surrogates; a false positive (an escaped
 * backslash before "ud8…") only costs a JSONL frame.
 */
const NOT_MSGPACK_SAFE = /\\ud[89a-f][0-9a-f]{2}|"__proto__":/i;

export function keepsVerbatimInMsgpack(json: string): boolean {
  return !NOT_MSGPACK_SAFE.test(json);
}

/**
 * Frame a record. A session's binary encoding is a preference, not a
 * promise: a record MessagePack would alter is written as a JSONL frame
 * instead (both encodings may be mixed in one log), so nothing is lost.
 */
export function encodeFrame(record: unknown, encoding: FrameEncoding): Buffer {
  if (encoding === 'binary') {
    const json = JSON.stringify(record);
    return keepsVerbatimInMsgpack(json) ? encodeBinaryFrame(record) : Buffer.from(json + '\n', 'utf8');
  }
  return encodeJsonlFrame(record);
}

export interface FrameBounds {
  ok: true;
  length: number;
  encoding: FrameEncoding;
}

/**
 * Where the frame starting at `buf[pos]` ends, without decoding its payload.
 * `fileOffset` is `pos`'s position in the file, for messages. A frame cut by
 * the end of `buf` is `torn`: callers reading in blocks read more and retry.
 */
export function frameBounds(buf: Uint8Array, pos: number, fileOffset: number, end = buf.length): FrameBounds | FrameFault {
  if (pos >= end) return fault(fileOffset, 'torn', 'no bytes');
  const first = buf[pos];
  if (first === BRACE) {
    const limit = Math.min(end, pos + MAX_FRAME_BYTES);
    const nl = buf.indexOf(NEWLINE, pos);
    if (nl === -1 || nl >= limit) {
      if (limit - pos >= MAX_FRAME_BYTES) return fault(fileOffset, 'oversized', `JSONL line longer than ${MAX_FRAME_BYTES} bytes`);
      return fault(fileOffset, 'torn', 'JSONL line has no terminating newline');
    }
    return { ok: true, length: nl + 1 - pos, encoding: 'jsonl' };
  }
  if (first === MAGIC0) {
    if (end - pos < BINARY_HEADER_BYTES) {
      // Only a prefix: torn if what is there matches the magic so far.
      const have = end - pos;
      for (let i = 0; i < Math.min(have, 4); i++) if (buf[pos + i] !== BINARY_MAGIC[i]) return fault(fileOffset, 'bad_magic', 'bad SPF2 magic');
      return fault(fileOffset, 'torn', `binary header cut after ${have} bytes`);
    }
    for (let i = 1; i < 4; i++) if (buf[pos + i] !== BINARY_MAGIC[i]) return fault(fileOffset, 'bad_magic', 'bad SPF2 magic');
    const view = Buffer.from(buf.buffer, buf.byteOffset + pos, BINARY_HEADER_BYTES);
    const version = view.readUInt16LE(4);
    if (version !== BINARY_FRAME_VERSION) return fault(fileOffset, 'bad_version', `unsupported SPF2 frame version ${version}`);
    const len = view.readUInt32LE(8);
    if (len > MAX_FRAME_BYTES) return fault(fileOffset, 'oversized', `payload length ${len} over ${MAX_FRAME_BYTES}`);
    const total = BINARY_HEADER_BYTES + len;
    if (end - pos < total) return fault(fileOffset, 'torn', `binary frame of ${total} bytes cut after ${end - pos}`);
    return { ok: true, length: total, encoding: 'binary' };
  }
  return fault(fileOffset, 'bad_magic', `first byte 0x${(first as number).toString(16).padStart(2, '0')} is neither '{' nor SPF2`);
}

/**
 * Decode the frame at `buf[pos]` into its raw value (not yet validated as a
 * record): bounds, checksum, then JSON or MessagePack.
 */
export function decodeFrame(buf: Uint8Array, pos: number, fileOffset: number, end = buf.length): FrameResult {
  const b = frameBounds(buf, pos, fileOffset, end);
  if (!b.ok) return b;
  const bytes = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b.encoding === 'jsonl') {
    // Before anything recursive meets it (core/nesting.ts).
    if (jsonNestingExceeds(bytes, pos, pos + b.length - 1)) return fault(fileOffset, 'bad_payload', nestingMessage('JSON line'), b.length);
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString('utf8', pos, pos + b.length - 1));
    } catch (err) {
      return fault(fileOffset, 'bad_payload', `invalid JSON: ${jsonErrorReason(err)}`, b.length);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return fault(fileOffset, 'bad_payload', 'JSON line is not an object', b.length);
    return { ok: true, offset: fileOffset, length: b.length, encoding: 'jsonl', schema: RECORD_SCHEMA, record: value };
  }
  const schema = bytes.readUInt16LE(pos + 6);
  const expected = bytes.readUInt32LE(pos + 12);
  const payload = bytes.subarray(pos + BINARY_HEADER_BYTES, pos + b.length);
  const actual = crc32(payload);
  if (actual !== expected) {
    return fault(fileOffset, 'bad_checksum', `CRC-32 mismatch (stored ${expected.toString(16)}, computed ${actual.toString(16)})`, b.length);
  }
  // Only what JSON can hold (msgpack-check.ts): else msgpackr would hand out BigInts, Dates, Buffers, NaN.
  const notJson = msgpackJsonFault(payload);
  if (notJson !== null) return fault(fileOffset, 'bad_payload', notJson, b.length);
  let value: unknown;
  try {
    value = packr.unpack(payload);
  } catch (err) {
    return fault(fileOffset, 'bad_payload', `invalid MessagePack: ${safeLine((err as Error).message)}`, b.length);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fault(fileOffset, 'bad_payload', 'payload is not a map', b.length);
  return { ok: true, offset: fileOffset, length: b.length, encoding: 'binary', schema, record: value };
}

/** A frame holding a storage record (any frame but the header), validated. */
export function decodeRecordFrame(buf: Uint8Array, pos: number, fileOffset: number, end = buf.length): (DecodedFrame & { record: StorageRecord }) | FrameFault {
  const f = decodeFrame(buf, pos, fileOffset, end);
  if (!f.ok) return f;
  try {
    return { ...f, record: validateRecord(f.record) };
  } catch (err) {
    if (err instanceof RecordError) return fault(fileOffset, 'bad_record', err.message, f.length);
    throw err;
  }
}
