/**
 * The byte format of a sealed segment and of a tail object
 * (docs/s3-layout.md): a self-describing object holding, for one range of
 * frames, a section per member: the frames' entry lines and projection
 * records first (the segment's part of the index, so one ranged GET reads
 * it), the log's frames last.
 *
 *   0   4  "SPSG"
 *   4   2  format version (1), u16 LE
 *   6   2  kind: 1 sealed segment, 2 tail object, u16 LE
 *   8   4  header length H, u32 LE
 *  12   4  CRC-32 of the header, u32 LE
 *  16   H  header: JSON {"session","epoch","sections":[{"member","start","at","len","crc"}]}
 *  16+H    the sections' bytes, at the offsets the header gives
 *  A       the check table: u32 LE CRC-32s of the object's chunks before it,
 *          in order: the header [0, 16+H) and then each section cut into
 *          `chunk`-byte pieces from its own start (the last one short), so
 *          damage in one section never touches another's chunks
 *
 * Readers go by the manifest's extents and never need the header; it makes
 * an object readable on its own (a lost manifest can be rebuilt from the
 * segments; each section's CRC-32 checks it). The check table is what a
 * reader verifies a ranged read by (checked-reads.ts): the manifest names
 * its place and its own CRC, so a read of a few blocks is checked without
 * reading the whole object. Pure: bytes in, bytes out.
 */
import { crc32 } from 'node:zlib';
import type { MemberName } from './remote-names.js';

export const SEGMENT_MAGIC = 'SPSG';
export const SEGMENT_VERSION = 2;
/** The check table's granularity: a ranged read is widened to whole chunks to be verified. */
export const DEFAULT_CHECK_BYTES = 16 * 1024;
export type SegmentKind = 'segment' | 'tail';

export interface SectionInput {
  member: MemberName;
  /** Logical offset of the section's first byte in its member. */
  start: number;
  data: Uint8Array;
}

export interface SectionInfo {
  member: MemberName;
  start: number;
  at: number;
  len: number;
  crc: number;
}

/** Where an object's check table is and what it holds (the manifest keeps one per object it names). */
export interface ObjectCheck {
  /** Chunk size in bytes. */
  chunk: number;
  /** Where the table starts: the chunks cover bytes [0, at). */
  at: number;
  /** CRC-32 of the table's bytes. */
  crc: number;
  /** Where chunking starts afresh: 0 (the header), then each section's start, ascending, below `at`. */
  starts: number[];
}

/** The chunk holding byte `x` of the object (x < check.at): its number in the table and its bytes [start, end). */
export function chunkAt(check: Pick<ObjectCheck, 'chunk' | 'at' | 'starts'>, x: number): { index: number; start: number; end: number } {
  const K = check.chunk;
  let index = 0;
  for (let r = 0; r < check.starts.length; r++) {
    const from = check.starts[r] as number;
    const to = check.starts[r + 1] ?? check.at;
    if (x < to) {
      const k = Math.floor((x - from) / K);
      return { index: index + k, start: from + k * K, end: Math.min(from + (k + 1) * K, to) };
    }
    index += Math.ceil((to - from) / K);
  }
  throw new RangeError(`byte ${x} is past the checked bytes (${check.at})`);
}

export interface SegmentHeader {
  session: string;
  epoch: number;
  kind: SegmentKind;
  sections: SectionInfo[];
  /** The check table's chunk size and place (its CRC is the manifest's). */
  check: { chunk: number; at: number };
}

/** Bytes of an object's check table. */
export function checkTableBytes(check: Pick<ObjectCheck, 'chunk' | 'at' | 'starts'>): number {
  return check.at === 0 ? 0 : 4 * (chunkAt(check, check.at - 1).index + 1);
}

/** The check table of `bytes` (all of the object before the table), chunked afresh at `starts`. */
export function checkTable(bytes: Uint8Array, chunk: number, starts: readonly number[]): Buffer {
  const out: number[] = [];
  for (let r = 0; r < starts.length; r++) {
    const to = starts[r + 1] ?? bytes.length;
    for (let a = starts[r] as number; a < to; a += chunk) out.push(crc32(bytes.subarray(a, Math.min(a + chunk, to))));
  }
  const buf = Buffer.allocUnsafe(4 * out.length);
  out.forEach((c, i) => buf.writeUInt32LE(c, 4 * i));
  return buf;
}

/**
 * The chunks of `data` (bytes [from, from + want) of the object, `from` a
 * chunk's start and `from + want` a chunk's end) whose CRC differs from the
 * table's: their byte ranges in the object. A `data` shorter than asked
 * fails its missing chunks.
 */
export function badChunks(data: Uint8Array, from: number, want: number, table: Buffer, check: Pick<ObjectCheck, 'chunk' | 'at' | 'starts'>): [number, number][] {
  const bad: [number, number][] = [];
  for (let x = from; x < from + want; ) {
    const c = chunkAt(check, x);
    const a = c.start - from;
    const b = c.end - from;
    if (b > data.length || 4 * c.index + 4 > table.length || crc32(data.subarray(a, b)) !== table.readUInt32LE(4 * c.index)) bad.push([c.start, c.end]);
    x = c.end;
  }
  return bad;
}

/** Index sections first, the log last: a page's index reads then share one block, its frames another. */
function order(a: SectionInput, b: SectionInput): number {
  const rank = (m: MemberName) => (m === 'events' ? 2 : m === 'entries' ? 0 : 1);
  return rank(a.member) - rank(b.member);
}

export function encodeSegment(session: string, epoch: number, kind: SegmentKind, input: readonly SectionInput[], chunk = DEFAULT_CHECK_BYTES): { bytes: Buffer; header: SegmentHeader; check: ObjectCheck } {
  if (!Number.isSafeInteger(chunk) || chunk < 1) throw new Error(`check chunk ${chunk}`);
  const sorted = [...input].filter((s) => s.data.length > 0).sort(order);
  // Offsets depend on the header's length, which depends on the offsets' digits: settle it in a few passes.
  let headerLen = 0;
  let header: SegmentHeader = { session, epoch, kind, sections: [], check: { chunk, at: 0 } };
  let json = '';
  for (let pass = 0; pass < 4; pass++) {
    let at = 16 + headerLen;
    const sections = sorted.map((s) => ({ member: s.member, start: s.start, at: (at += s.data.length) - s.data.length, len: s.data.length, crc: crc32(s.data) }));
    header = { session, epoch, kind, sections, check: { chunk, at } };
    json = JSON.stringify(header);
    const len = Buffer.byteLength(json);
    if (len === headerLen) break;
    headerLen = len;
  }
  const head = Buffer.from(json, 'utf8');
  if (head.length !== headerLen) throw new Error('segment header did not settle');
  const tableAt = header.check.at;
  const starts = [0, ...header.sections.map((x) => x.at)];
  const out = Buffer.allocUnsafe(tableAt + checkTableBytes({ chunk, at: tableAt, starts }));
  out.write(SEGMENT_MAGIC, 0, 'latin1');
  out.writeUInt16LE(SEGMENT_VERSION, 4);
  out.writeUInt16LE(kind === 'segment' ? 1 : 2, 6);
  out.writeUInt32LE(head.length, 8);
  out.writeUInt32LE(crc32(head), 12);
  head.copy(out, 16);
  for (const [i, s] of sorted.entries()) out.set(s.data, (header.sections[i] as SectionInfo).at);
  const table = checkTable(out.subarray(0, tableAt), chunk, starts);
  table.copy(out, tableAt);
  return { bytes: out, header, check: { chunk, at: tableAt, crc: crc32(table), starts } };
}

/** The header of a whole segment or tail object; throws on any mismatch (magic, version, CRCs, bounds, check table). */
export function decodeSegment(bytes: Buffer): SegmentHeader {
  if (bytes.length < 16 || bytes.toString('latin1', 0, 4) !== SEGMENT_MAGIC) throw new Error('not a segment object (magic)');
  if (bytes.readUInt16LE(4) !== SEGMENT_VERSION) throw new Error(`segment format version ${bytes.readUInt16LE(4)} unknown`);
  const kindCode = bytes.readUInt16LE(6);
  const len = bytes.readUInt32LE(8);
  if (16 + len > bytes.length) throw new Error('segment header runs past the object');
  const head = bytes.subarray(16, 16 + len);
  if (crc32(head) !== bytes.readUInt32LE(12)) throw new Error('segment header fails its CRC');
  const h = JSON.parse(head.toString('utf8')) as SegmentHeader;
  if ((kindCode === 1 ? 'segment' : kindCode === 2 ? 'tail' : '') !== h.kind) throw new Error('segment kind mismatch');
  for (const s of h.sections) {
    if (s.at < 16 + len || s.at + s.len > bytes.length) throw new Error(`section ${s.member} out of bounds`);
    if (crc32(bytes.subarray(s.at, s.at + s.len)) !== s.crc) throw new Error(`section ${s.member} fails its CRC`);
  }
  const c = h.check;
  if (typeof c !== 'object' || c === null || !Number.isSafeInteger(c.chunk) || c.chunk < 1 || !Number.isSafeInteger(c.at) || c.at < 16 + len) throw new Error('segment check table missing');
  const check = { chunk: c.chunk, at: c.at, starts: [0, ...h.sections.map((x) => x.at)] };
  if (c.at + checkTableBytes(check) !== bytes.length) throw new Error('segment check table out of bounds');
  if (badChunks(bytes.subarray(0, c.at), 0, c.at, bytes.subarray(c.at), check).length > 0) throw new Error('segment fails its check table');
  return h;
}
