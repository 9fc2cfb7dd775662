/**
 * Builds a slice result (see slice-protocol.ts) from storage records, pure.
 * Re-packs canonically with runs held as JSON fragments (fragment-run.ts):
 * members of stored rows are copied as byte ranges, never parsed into
 * strings. Used by the page worker; kept apart so tests can drive it.
 */
import { continuesRun, packableChunk, rowKey, rowMembers, type RunKey } from '../main/core/chunk-codec.js';
import { appendMembers, fragRecords, joinedToBuffer, newFragRun, PieceWriter, RecordList, type FragRun } from '../main/core/fragment-run.js';
import type { ChunkRow, SessionEvent } from '../main/core/types.js';
import { rowGaps, rowMemberBounds, type RawRow } from '../streams/jsonl-row-scanner.js';
import type { FragmentRunHeader, SliceHeader } from './slice-protocol.js';

function encodeRun(run: FragRun): { header: FragmentRunHeader; dt: Buffer; members: Buffer } {
  const dt = joinedToBuffer(run.dt);
  const members = joinedToBuffer(run.members);
  const { dt: _d, members: _m, ...rest } = run;
  return { header: { ...rest, dtBytes: dt.length, memberBytes: members.length }, dt, members };
}

function timeAt(time0: number, dt: readonly number[], k: number): number {
  let t = time0;
  for (let i = 0; i < k; i++) t += dt[i] as number;
  return t;
}

export class SliceEncoder {
  private open: FragRun | null = null;
  private readonly body = new RecordList();
  private started = false;
  private head: FragRun | null = null;
  frames = 0;
  bytesRead = 0;

  private settleRun(run: FragRun): void {
    if (!this.started) {
      this.started = true;
      this.head = run;
      return;
    }
    this.body.add(fragRecords(run));
  }

  private flush(): void {
    if (this.open !== null) {
      const run = this.open;
      this.open = null;
      this.settleRun(run);
    }
  }

  /** The run that members with `key` starting at (seq, time) extend: the open one, or a fresh one. */
  private runFor(key: RunKey, seq: number, time: number): FragRun {
    const open = this.open;
    if (open !== null && continuesRun(open, key, seq, time)) return open;
    this.flush();
    const run = newFragRun(key, seq, time);
    this.open = run;
    return run;
  }

  event(e: SessionEvent): void {
    const p = packableChunk(e);
    if (p === null) {
      this.flush();
      this.started = true;
      this.body.add([JSON.stringify({ event: e })]);
      return;
    }
    appendMembers(this.runFor(p.key, e.seq, e.time), e.seq, e.time, e.time, 1, null, JSON.stringify(p.member));
  }

  /** A non-packable event whose JSON line was validated by the scanner: its bytes are copied as they are. */
  rawEvent(json: Uint8Array): void {
    this.flush();
    this.started = true;
    this.body.add(['{"event":', json, '}']);
  }

  /** Members [from, to) of a row scanned from a JSONL frame: member tokens are copied as bytes. */
  rawRow(row: RawRow, from: number, to: number): void {
    const seq = row.seq0 + from;
    if (from === 0 && to === row.n) {
      const dt = row.buf.subarray(row.dtStart, row.dtEnd);
      const members = row.buf.subarray(row.membersStart, row.membersEnd);
      appendMembers(this.runFor(row.key, seq, row.time0), seq, row.time0, row.time0 + row.dtSum, row.n, dt, members);
      return;
    }
    // Cut at a page edge (at most two rows per page): locate members and gaps.
    const gaps = rowGaps(row);
    const { starts, ends } = rowMemberBounds(row);
    const time = timeAt(row.time0, gaps, from);
    const last = timeAt(row.time0, gaps, to - 1);
    const members = row.buf.subarray(starts[from] as number, ends[to - 1] as number);
    appendMembers(this.runFor(row.key, seq, time), seq, time, last, to - from, gaps.slice(from, to - 1).join(','), members);
  }

  /** Members [from, to) of a decoded row (binary frames, or JSONL the scanner declined). */
  row(row: ChunkRow, from: number, to: number): void {
    const dt = row.data.dt;
    const time = timeAt(row.time0, dt, from);
    const last = timeAt(row.time0, dt, to - 1);
    const seq = row.seq0 + from;
    const members = JSON.stringify(rowMembers(row).slice(from, to)).slice(1, -1);
    appendMembers(this.runFor(rowKey(row), seq, time), seq, time, last, to - from, dt.slice(from, to - 1).join(','), members);
  }

  /** The result buffer: exactly sized, freshly allocated, safe to transfer. */
  finish(): ArrayBuffer {
    let tailRun = this.open;
    this.open = null;
    let whole = false;
    if (!this.started && tailRun !== null) {
      this.head = tailRun;
      tailRun = null;
      whole = true;
    }
    const head = this.head ? encodeRun(this.head) : null;
    const tail = tailRun ? encodeRun(tailRun) : null;
    // The body is written straight into the result buffer: no intermediate copy.
    const body = new PieceWriter(this.body.pieces);
    const header: SliceHeader = { head: head?.header ?? null, whole, bodyBytes: body.byteLength, tail: tail?.header ?? null, frames: this.frames, bytesRead: this.bytesRead };
    const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
    const before: Uint8Array[] = [headerBytes];
    if (head) before.push(head.dt, head.members);
    const after: Uint8Array[] = [];
    if (tail) after.push(tail.dt, tail.members);
    let total = 4 + body.byteLength;
    for (const p of before) total += p.length;
    for (const p of after) total += p.length;
    const ab = new ArrayBuffer(total);
    const out = Buffer.from(ab);
    out.writeUInt32LE(headerBytes.length, 0);
    let at = 4;
    for (const p of before) {
      out.set(p, at);
      at += p.length;
    }
    at = body.writeTo(out, at);
    for (const p of after) {
      out.set(p, at);
      at += p.length;
    }
    return ab;
  }
}
