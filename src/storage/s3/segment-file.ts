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
 *
 * Readers go by the manifest's extents and never need the header; it makes
 * an object readable on its own (a lost manifest can be rebuilt from the
 * segments; each section's CRC-32 checks it). Pure: bytes in, bytes out.
 */
import { crc32 } from 'node:zlib';
import type { MemberName } from './remote-names.js';

export const SEGMENT_MAGIC = 'SPSG';
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

export interface SegmentHeader {
  session: string;
  epoch: number;
  kind: SegmentKind;
  sections: SectionInfo[];
}

/** Index sections first, the log last: a page's index reads then share one block, its frames another. */
function order(a: SectionInput, b: SectionInput): number {
  const rank = (m: MemberName) => (m === 'events' ? 2 : m === 'entries' ? 0 : 1);
  return rank(a.member) - rank(b.member);
}

export function encodeSegment(session: string, epoch: number, kind: SegmentKind, input: readonly SectionInput[]): { bytes: Buffer; header: SegmentHeader } {
  const sorted = [...input].filter((s) => s.data.length > 0).sort(order);
  // Offsets depend on the header's length, which depends on the offsets' digits: settle it in two passes.
  let headerLen = 0;
  let header: SegmentHeader = { session, epoch, kind, sections: [] };
  let json = '';
  for (let pass = 0; pass < 3; pass++) {
    let at = 16 + headerLen;
    header = { session, epoch, kind, sections: sorted.map((s) => ({ member: s.member, start: s.start, at: (at += s.data.length) - s.data.length, len: s.data.length, crc: crc32(s.data) })) };
    json = JSON.stringify(header);
    const len = Buffer.byteLength(json);
    if (len === headerLen) break;
    headerLen = len;
  }
  const head = Buffer.from(json, 'utf8');
  if (head.length !== headerLen) throw new Error('segment header did not settle');
  const total = 16 + head.length + sorted.reduce((a, s) => a + s.data.length, 0);
  const out = Buffer.allocUnsafe(total);
  out.write(SEGMENT_MAGIC, 0, 'latin1');
  out.writeUInt16LE(1, 4);
  out.writeUInt16LE(kind === 'segment' ? 1 : 2, 6);
  out.writeUInt32LE(head.length, 8);
  out.writeUInt32LE(crc32(head), 12);
  head.copy(out, 16);
  for (const [i, s] of sorted.entries()) out.set(s.data, (header.sections[i] as SectionInfo).at);
  return { bytes: out, header };
}

/** The header of a whole segment or tail object; throws on any mismatch (magic, version, CRCs, bounds). */
export function decodeSegment(bytes: Buffer): SegmentHeader {
  if (bytes.length < 16 || bytes.toString('latin1', 0, 4) !== SEGMENT_MAGIC) throw new Error('not a segment object (magic)');
  if (bytes.readUInt16LE(4) !== 1) throw new Error(`segment format version ${bytes.readUInt16LE(4)} unknown`);
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
  return h;
}
