/**
 * The reference reader: what hosts do today. Decode the whole log into
 * `SessionEvent[]`, select the page by the rule of SPEC section 5 with a
 * plain loop, and pack it. Deliberately simple and independent of the page
 * planner, worker pool and assembler: it is the oracle of the tests and the
 * baseline of the benchmarks. Never used on a serving path.
 */
import { promises as fsp } from 'node:fs';
import { expandRow, packEvents, validateRecord } from '../core/chunk-codec.js';
import { groupStart, isCountedMessage, resolvePageParams } from '../core/page-rule.js';
import type { ChunkRow, Page, PageParams, SessionEvent, SessionHeader } from '../core/types.js';
import { isRowType } from '../core/types.js';
import { decodeFrame } from '../streams/frame-codec.js';

export interface ReferenceFrame {
  offset: number;
  length: number;
  seq: number;
  count: number;
}

export interface ReferenceLog {
  header: SessionHeader;
  events: SessionEvent[];
  /** Frames after the header, in order. */
  frames: ReferenceFrame[];
  /** frameOf[seq]: index into `frames` of the frame holding that event. */
  frameOf: Int32Array;
}

/** Decode a whole log held in memory. Throws on the first bad frame. */
export function decodeWholeLog(bytes: Buffer, limit = bytes.length): ReferenceLog {
  let pos = 0;
  const head = decodeFrame(bytes, 0, 0, limit);
  if (!head.ok) throw new Error(head.message);
  const header = head.record as SessionHeader;
  if (header.type !== 'session') throw new Error('frame 0 is not a session header');
  pos = head.length;
  const events: SessionEvent[] = [];
  const frames: ReferenceFrame[] = [];
  const owner: number[] = [];
  while (pos < limit) {
    const f = decodeFrame(bytes, pos, pos, limit);
    if (!f.ok) throw new Error(f.message);
    const r = validateRecord(f.record);
    const expanded = isRowType(r.type) && 'seq0' in r ? expandRow(r as ChunkRow) : [r as SessionEvent];
    const fi = frames.length;
    frames.push({ offset: pos, length: f.length, seq: expanded[0]!.seq, count: expanded.length });
    for (const e of expanded) {
      if (e.seq !== events.length) throw new Error(`frame at offset ${pos}: seq ${e.seq} where ${events.length} was expected`);
      events.push(e);
      owner.push(fi);
    }
    pos += f.length;
  }
  return { header, events, frames, frameOf: Int32Array.from(owner) };
}

export async function readWholeLog(path: string, limit?: number): Promise<ReferenceLog> {
  const bytes = await fsp.readFile(path);
  return decodeWholeLog(bytes, limit ?? bytes.length);
}

/** Stored bytes of the frames holding any event of [from, to). */
export function coveredBytes(log: ReferenceLog, from: number, to: number): number {
  if (to <= from) return 0;
  let sum = 0;
  for (let f = log.frameOf[from]!; f <= log.frameOf[to - 1]!; f++) sum += log.frames[f]!.length;
  return sum;
}

/** The page of SPEC sections 4 and 5, computed the obvious way. */
export function referencePage(log: ReferenceLog, sessionId: string, params: PageParams = {}): Page {
  const lastSeq = log.events.length - 1;
  const p = resolvePageParams(params, lastSeq);
  const end = p.end;
  let cut = end;
  let counted = 0;
  let stopped = false;
  for (let s = end - 1; s >= 0; s--) {
    const e = log.events[s]!;
    if (!isCountedMessage(e)) continue;
    cut = Math.min(cut, groupStart(e));
    counted++;
    if (counted >= p.maxMessages || (p.maxBytes !== undefined && coveredBytes(log, cut, end) > p.maxBytes)) {
      stopped = true;
      break;
    }
  }
  if (!stopped) cut = 0;
  const to = Math.max(end, 0);
  return {
    sessionId,
    throughSeq: p.throughSeq,
    fromSeq: cut,
    toSeq: to,
    hasMore: cut > 0,
    records: packEvents(log.events.slice(cut, to)),
  };
}
