/**
 * The manifest's sparse index of the binary frame index (docs/s3-layout.md,
 * "Sparse index"): for every whole run of `every` records of
 * `p/frames.idx` (streams/frame-index-file.ts), the seq of its first record,
 * how many counted messages it holds (records with a group) and the lowest
 * group start among them. From it alone a reader knows which records a page
 * will read (the record holding its last seq, the planner's backward walk
 * over `maxMessages` counted messages and their group starts), so it fetches
 * those records of frames.idx, frames.crc2 and frames.meta in one parallel
 * wave with the page's other first reads, instead of one round trip per
 * binary-search probe or walked block.
 *
 * It is a hint, never trusted: it only chooses what is fetched ahead, and
 * the one answer it gives the planner (where the page's last record lies)
 * is taken only after the records at that range's ends prove it
 * (FrameIndexFile.findBySeq). A wrong hint costs round trips, never a
 * wrong page. Pure: records in, numbers out.
 */
import { INDEX_FILE_NAME, INDEX_RECORD_BYTES } from '../../streams/frame-index-file.js';
import type { MemberName } from './remote-names.js';

/** The member the sparse index describes. */
export const SPARSE_OF: MemberName = `p/${INDEX_FILE_NAME}`;
/** Records per sparse entry (the planner's backward walk reads blocks of this many). */
export const DEFAULT_SPARSE_EVERY = 2048;

export interface SparseIndex {
  /** The member described (always SPARSE_OF) and its incarnation: a sparse index of another one is ignored. */
  of: MemberName;
  born: string;
  /** Records per entry. */
  every: number;
  /** Entry k describes records [k * every, (k + 1) * every): its first record's seq, */
  seq: number[];
  /** its number of counted messages, */
  msgs: number[];
  /** and the lowest group start among them (-1: none). */
  group: number[];
}

/** Entry of one whole run of records (`every` records of frames.idx). */
export function summarizeRecords(b: Uint8Array): [seq: number, msgs: number, group: number] {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let msgs = 0;
  let group = -1;
  for (let o = 0; o + INDEX_RECORD_BYTES <= b.byteLength; o += INDEX_RECORD_BYTES) {
    const g = v.getFloat64(o + 16, true);
    if (g >= 0) {
      msgs++;
      if (group === -1 || g < group) group = g;
    }
  }
  return [b.byteLength >= 8 ? v.getFloat64(0, true) : 0, msgs, group];
}

const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;

/** A manifest's `sparse` field, checked field by field; throws on anything else. */
export function checkSparse(x: unknown): SparseIndex {
  const s = x as Record<string, unknown>;
  const ok =
    typeof s === 'object' &&
    s !== null &&
    s.of === SPARSE_OF &&
    typeof s.born === 'string' &&
    isCount(s.every) &&
    s.every > 0 &&
    Array.isArray(s.seq) &&
    Array.isArray(s.msgs) &&
    Array.isArray(s.group) &&
    s.msgs.length === s.seq.length &&
    s.group.length === s.seq.length &&
    s.seq.every(isCount) &&
    s.msgs.every(isCount) &&
    s.group.every((g) => g === -1 || isCount(g));
  if (!ok) throw new Error('invalid manifest: sparse index');
  return { of: SPARSE_OF, born: s.born as string, every: s.every as number, seq: s.seq as number[], msgs: s.msgs as number[], group: s.group as number[] };
}

/** The last entry whose first seq is at most `seq` (-1: none). */
function entryOf(sp: SparseIndex, seq: number): number {
  let lo = 0;
  let hi = sp.seq.length - 1;
  if (hi < 0 || (sp.seq[0] as number) > seq) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if ((sp.seq[mid] as number) <= seq) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** How far back before the first walked entry the planner may read (it walks blocks of this many records from its start). */
const WALK_BLOCK_RECORDS = 2048;

export interface PageRecords {
  /** Records [lo, hi] hold the frame of the page's last seq (null: the page ends at the last record). */
  find: { lo: number; hi: number } | null;
  /** Records [from, to] are what planning the page reads of the frame index (and, record for record, of frames.crc2 and frames.meta). */
  from: number;
  to: number;
}

/**
 * Which records of a frame index of `records` records a page reads, by the
 * sparse index alone: the page ends before seq `end` (undefined: the tail)
 * and walks back over `maxMessages` counted messages (the messages of the
 * entry holding the end are not counted: some may lie past it), then to the
 * lowest group start of what it walked. Null when the sparse index does not
 * fit the member (more entries than records).
 */
export function pageRecords(sp: SparseIndex, records: number, end: number | undefined, maxMessages: number): PageRecords | null {
  const E = sp.every;
  const n = sp.seq.length;
  if (records < 2 || n * E > records) return null;
  // No whole entry yet: the whole index is what the page may read.
  if (n === 0) return { find: end === undefined ? null : { lo: 1, hi: records - 1 }, from: 0, to: records - 1 };
  let find: PageRecords['find'] = null;
  let b: number;
  let to = records - 1;
  if (end === undefined) b = n;
  else {
    const k = entryOf(sp, end - 1);
    if (k < 0) return null;
    const lo = Math.max(1, k * E);
    // The last whole entry's run may continue into the records past it (no entry yet).
    const hi = k === n - 1 ? records - 1 : Math.min(records - 1, (k + 1) * E - 1);
    find = { lo, hi };
    b = k;
    // The record after the range proves its end.
    to = Math.min(records - 1, hi + 1);
  }
  let walked = 0;
  let k = b - 1;
  let group = b < n && (sp.group[b] as number) >= 0 ? (sp.group[b] as number) : Number.POSITIVE_INFINITY;
  for (; k >= 0 && walked < maxMessages; k--) {
    walked += sp.msgs[k] as number;
    if ((sp.group[k] as number) >= 0) group = Math.min(group, sp.group[k] as number);
  }
  let first = walked < maxMessages ? 0 : k + 1;
  if (group !== Number.POSITIVE_INFINITY) first = Math.min(first, Math.max(0, entryOf(sp, group)));
  // One record before (the checksum chain's seed) and one walk block before (the planner's blocks start where it started).
  const from = Math.max(0, first * E - WALK_BLOCK_RECORDS - 1);
  return { find, from, to };
}

/** A copy of the first `whole` entries (what a manifest may name of an index that is longer, or was cut). */
export function sparsePrefix(sp: SparseIndex, whole: number): SparseIndex {
  return { ...sp, seq: sp.seq.slice(0, whole), msgs: sp.msgs.slice(0, whole), group: sp.group.slice(0, whole) };
}

/** The frame index changed from byte `pos` on: keep only the entries wholly before it. */
export function cutSparse(sp: SparseIndex, pos: number): void {
  const keep = Math.floor(pos / (sp.every * INDEX_RECORD_BYTES));
  if (keep >= sp.seq.length) return;
  sp.seq.length = keep;
  sp.msgs.length = keep;
  sp.group.length = keep;
}

/** Entries for `bytes`, the whole runs of records that follow the last entry. */
export function extendSparse(sp: SparseIndex, bytes: Uint8Array): void {
  const stride = sp.every * INDEX_RECORD_BYTES;
  for (let k = 0; k + stride <= bytes.length; k += stride) {
    const [seq, msgs, group] = summarizeRecords(bytes.subarray(k, k + stride));
    sp.seq.push(seq);
    sp.msgs.push(msgs);
    sp.group.push(group);
  }
}
