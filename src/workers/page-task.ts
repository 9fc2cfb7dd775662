/**
 * Piscina task: decode one slice of a page. Reads the slice's byte range with
 * one positional read, decodes only those frames (JSONL or binary, checksum
 * verified, rows validated exactly), checks seq continuity against the entry
 * sidecar's plan, cuts rows at the page edges and hands back the packed,
 * serialized slice as a moved ArrayBuffer.
 */
import { openSync, readSync, closeSync } from 'node:fs';
import { Piscina } from 'piscina';
import { decodeRecordFrame } from '../streams/frame-codec.js';
import { isRowType, type ChunkRow, type SessionEvent } from '../main/core/types.js';
import { rowLength } from '../main/core/chunk-codec.js';
import { SliceEncoder } from './slice-encoder.js';
import type { SliceFault, SliceResult, SliceTask } from './slice-protocol.js';

function readRange(path: string, start: number, end: number): Buffer {
  const len = end - start;
  const buf = Buffer.allocUnsafe(len);
  const fd = openSync(path, 'r');
  try {
    let got = 0;
    while (got < len) {
      const n = readSync(fd, buf, got, len - got, start + got);
      if (n === 0) break;
      got += n;
    }
    return got === len ? buf : buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

function corrupt(task: SliceTask, offset: number, fromSeq: number, toSeq: number, why: string): SliceFault {
  return {
    error: {
      code: 'corrupt_range',
      message: `events [${fromSeq}, ${toSeq}) cannot be read: ${why}`,
      reason: why,
      offset,
      fromSeq,
      toSeq,
    },
  };
}

export function decodeSlice(task: SliceTask, bytes: Buffer): SliceResult {
  const enc = new SliceEncoder();
  enc.bytesRead = bytes.length;
  let pos = 0;
  let seq = task.firstSeq;
  const len = task.end - task.start;
  if (bytes.length < len) return corrupt(task, task.start + bytes.length, seq, task.endSeq, `log ends at byte ${task.start + bytes.length}, before the indexed end ${task.end}`);
  while (pos < len) {
    const offset = task.start + pos;
    const f = decodeRecordFrame(bytes, pos, offset, len);
    if (!f.ok) return corrupt(task, offset, seq, task.endSeq, f.message);
    const r = f.record;
    const row = isRowType(r.type) && 'seq0' in r;
    const first = row ? (r as ChunkRow).seq0 : (r as SessionEvent).seq;
    const count = row ? rowLength(r as ChunkRow) : 1;
    if (first !== seq) return corrupt(task, offset, seq, seq + count, `frame holds seq ${first}, the entry sidecar says ${seq}`);
    const from = Math.max(task.fromSeq - first, 0);
    const to = Math.min(task.toSeq - first, count);
    if (from < to) {
      if (row) enc.row(r as ChunkRow, from, to);
      else enc.event(r as SessionEvent);
    }
    seq += count;
    pos += f.length;
    enc.frames++;
  }
  if (seq !== task.endSeq) return corrupt(task, task.end, seq, task.endSeq, `frames end at seq ${seq}, the entry sidecar says ${task.endSeq}`);
  return enc.finish();
}

export default function pageTask(task: SliceTask): SliceResult {
  const result = decodeSlice(task, readRange(task.path, task.start, task.end));
  return (result instanceof ArrayBuffer ? Piscina.move(result) : result) as SliceResult;
}
