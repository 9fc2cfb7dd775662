/**
 * Builds a slice result (see slice-protocol.ts) from storage records, pure.
 * Re-packs canonically: members of stored rows are copied as byte ranges of
 * the frames, never parsed into strings, straight into growable byte sinks
 * (core/byte-sink.ts). The run open at the slice's start and the one open at
 * its end stay separate, as the assembler may merge them with neighbouring
 * slices. Used by the page worker; kept apart so tests can drive it.
 */
import { continuesRun, MIN_PACKED_RUN, packableChunk, rowKey, rowMembers, type RunKey } from '../core/chunk-codec.js';
import { ByteSink } from '../core/byte-sink.js';
import { keepShape } from '../core/shape-keeper.js';
import { PACKED_ROW_END, packedRowMiddle, writePackedRowHead, writeShortRun } from '../core/fragment-run.js';
import type { ChunkRow, SessionEvent } from '../core/types.js';
import { rowGaps, rowMemberBounds, type RawRow } from '../streams/jsonl-row-scanner.js';
import { RESULT_TRAILER_BYTES, type FragmentRunHeader, type PageCoder, type SliceHeader } from './slice-protocol.js';

const COMMA = 0x2c;
/** The end of a page's JSON (after its records array). */
const PAGE_END = new Uint8Array([0x5d, 0x7d]);

/** A run being built: its key and extent; gaps and members live in the encoder's sinks. */
interface OpenRun extends RunKey {
  seq0: number;
  time0: number;
  lastSeq: number;
  lastTime: number;
  n: number;
}

/** A run kept apart for the assembler: header plus its comma-joined gaps and members. */
interface EdgeRun {
  run: OpenRun;
  dt: ByteSink;
  members: ByteSink;
}

/** One object shape for every run (id and name always present, undefined when absent): the hot path's property loads stay monomorphic. */
function openRun(key: RunKey, seq: number, time: number): OpenRun {
  return { kind: key.kind, turn: key.turn, step: key.step, index: key.index, id: key.id, name: key.name, seq0: seq, time0: time, lastSeq: seq - 1, lastTime: time, n: 0 };
}

/**
 * Bytes an arena keeps free at its end for the result's header and trailer
 * when the result is the arena itself (page-task.ts reserves them).
 */
export const ARENA_HEADER_ROOM = 64 * 1024;

/** The buffers an encoder builds in: settled records, the open run's gaps and members, and the head run's once it settles. */
export interface EncoderSinks {
  body: ByteSink;
  dt: ByteSink;
  members: ByteSink;
  headDt: ByteSink;
  headMembers: ByteSink;
}

export function newEncoderSinks(): EncoderSinks {
  return { body: new ByteSink(), dt: new ByteSink(), members: new ByteSink(), headDt: new ByteSink(), headMembers: new ByteSink() };
}

function header(e: EdgeRun, at: Map<ByteSink, number>): FragmentRunHeader {
  return { ...e.run, dtAt: at.get(e.dt) as number, dtBytes: e.dt.length, membersAt: at.get(e.members) as number, memberBytes: e.members.length };
}

function timeAt(time0: number, dt: readonly number[], k: number): number {
  let t = time0;
  for (let i = 0; i < k; i++) t += dt[i] as number;
  return t;
}

export class SliceEncoder {
  /** Settled records, comma-joined. */
  private readonly body: ByteSink;
  private open: OpenRun | null = null;
  /** The key object the open run was started with. */
  private openKey: RunKey | null = null;
  /** Gaps and members of the open run. */
  private readonly dt: ByteSink;
  private readonly members: ByteSink;
  /** Where the head run's gaps and members go when it settles (the open run's sinks go on). */
  private readonly headDt: ByteSink;
  private readonly headMembers: ByteSink;
  /** Whether the slice's first record has begun (the first run to settle is the head). */
  private started = false;
  private head: EdgeRun | null = null;
  frames = 0;
  bytesRead = 0;
  private readonly startedAt = performance.now();

  /**
   * `sinks`: buffers to build in, reused from task to task by a worker (fresh
   * memory costs a page fault per 4 KB on first touch, several ms for a large
   * slice); they are cleared here and nothing refers to them after finish().
   */
  /**
   * `pageHead`: non-empty when the slice is the whole page (SliceTask.pageHead): no run is kept
   * apart for an assembler (the first settles into the body like any other, the last at finish),
   * and the result holds the page itself, this text, the records and `]}`.
   */
  constructor(
    sinks: EncoderSinks = newEncoderSinks(),
    private readonly pageHead = '',
  ) {
    this.started = pageHead !== '';
    this.body = sinks.body;
    this.dt = sinks.dt;
    this.members = sinks.members;
    this.headDt = sinks.headDt;
    this.headMembers = sinks.headMembers;
    this.body.clear();
    this.dt.clear();
    this.members.clear();
    this.headDt.clear();
    this.headMembers.clear();
    keepShape(this);
  }

  private settle(): void {
    const run = this.open;
    if (run === null) return;
    this.open = null;
    if (!this.started) {
      // The head may continue the previous slice's tail: it is kept apart (a copy: the sinks go on).
      this.started = true;
      this.headDt.sink(this.dt);
      this.headMembers.sink(this.members);
      this.head = { run, dt: this.headDt, members: this.headMembers };
      return;
    }
    const body = this.body;
    if (body.length > 0) body.byte(COMMA);
    if (run.n >= MIN_PACKED_RUN) {
      writePackedRowHead(body, run);
      body.sink(this.dt);
      body.ascii(packedRowMiddle(run.kind));
      body.sink(this.members);
      body.ascii(PACKED_ROW_END);
    } else {
      writeShortRun(body, run, this.dt, this.members);
    }
  }

  /** Begin a settled record in the body. */
  private record(): ByteSink {
    this.settle();
    this.started = true;
    if (this.body.length > 0) this.body.byte(COMMA);
    return this.body;
  }

  /**
   * Extend the run for `key` with `count` members starting at (seq, time) and
   * ending at `lastTime`: a fresh run unless they continue the open one.
   * The caller then writes their gaps (gapBytes/gapNumbers) and members.
   */
  private extend(key: RunKey, seq: number, time: number, lastTime: number, count: number): void {
    let run = this.open;
    // The trusted scanner hands out one key object per block, so consecutive frames of a
    // run compare by identity: no key-shape-dependent property loads on the hot path.
    if (run === null || !(key === this.openKey ? seq === run.lastSeq + 1 && Number.isSafeInteger(time - run.lastTime) : continuesRun(run, key, seq, time))) {
      this.settle();
      run = openRun(key, seq, time);
      this.open = run;
      this.openKey = key;
      this.dt.clear();
      this.members.clear();
    } else {
      // A one-member run has no gaps yet: no separator before its first.
      if (this.dt.length > 0) this.dt.byte(COMMA);
      this.dt.int(time - run.lastTime);
    }
    run.n += count;
    run.lastSeq = seq + count - 1;
    run.lastTime = lastTime;
  }

  private gapBytes(src: Uint8Array, start: number, end: number): void {
    if (end <= start) return;
    if (this.dt.length > 0) this.dt.byte(COMMA);
    this.dt.bytes(src, start, end);
  }

  private gapNumbers(gaps: readonly number[], from: number, to: number): void {
    for (let k = from; k < to; k++) {
      if (this.dt.length > 0) this.dt.byte(COMMA);
      this.dt.int(gaps[k] as number);
    }
  }

  private memberBytes(src: Uint8Array, start: number, end: number): void {
    if (this.members.length > 0) this.members.byte(COMMA);
    this.members.bytes(src, start, end);
  }

  private memberText(json: string): void {
    if (this.members.length > 0) this.members.byte(COMMA);
    this.members.text(json);
  }

  event(e: SessionEvent): void {
    const p = packableChunk(e);
    if (p === null) {
      this.record().text(JSON.stringify({ event: e }));
      return;
    }
    this.extend(p.key, e.seq, e.time, e.time, 1);
    this.memberText(JSON.stringify(p.member));
  }

  /** A non-packable event whose JSON line was validated by the scanner: its bytes are copied as they are. */
  rawEvent(src: Uint8Array, start: number, end: number): void {
    const body = this.record();
    body.ascii('{"event":');
    body.bytes(src, start, end);
    body.byte(0x7d);
  }

  /** Members [from, to) of a row scanned from a JSONL frame: member tokens are copied as bytes. */
  rawRow(row: RawRow, from: number, to: number): void {
    const seq = row.seq0 + from;
    if (from === 0 && to === row.n) {
      this.extend(row.key, seq, row.time0, row.time0 + row.dtSum, row.n);
      this.gapBytes(row.buf, row.dtStart, row.dtEnd);
      this.memberBytes(row.buf, row.membersStart, row.membersEnd);
      return;
    }
    // Cut at a page edge (at most two rows per page): locate members and gaps.
    const gaps = rowGaps(row);
    const { starts, ends } = rowMemberBounds(row);
    this.extend(row.key, seq, timeAt(row.time0, gaps, from), timeAt(row.time0, gaps, to - 1), to - from);
    this.gapNumbers(gaps, from, to - 1);
    this.memberBytes(row.buf, starts[from] as number, ends[to - 1] as number);
  }

  /**
   * A whole stored row whose gaps and members the caller then writes itself,
   * as JSON, into `runGaps` and `runMembers` (comma-joined, a comma first
   * when the sink is not empty): a binary frame's row, transcoded straight
   * into the page (workers/binary-frame.ts).
   */
  wholeRow(key: RunKey, seq: number, time0: number, lastTime: number, count: number): void {
    this.extend(key, seq, time0, lastTime, count);
  }

  /** The open run's gaps (valid right after wholeRow). */
  get runGaps(): ByteSink {
    return this.dt;
  }

  /** The open run's members (valid right after wholeRow). */
  get runMembers(): ByteSink {
    return this.members;
  }

  /** Members [from, to) of a decoded row (binary frames, or JSONL the scanner declined). */
  row(row: ChunkRow, from: number, to: number): void {
    const dt = row.data.dt;
    this.extend(rowKey(row), row.seq0 + from, timeAt(row.time0, dt, from), timeAt(row.time0, dt, to - 1), to - from);
    this.gapNumbers(dt, from, to - 1);
    this.memberText(JSON.stringify(rowMembers(row).slice(from, to)).slice(1, -1));
  }

  /**
   * The result (slice-protocol.ts), safe to transfer. `arena`: the buffer
   * the sinks were placed in (page-task.ts); when every section is still in
   * it, the result is the arena's own ArrayBuffer, with only the header
   * written (at its end): no copy of the slice's bytes. Otherwise (no arena,
   * or a sink outgrew its region) the sections are copied into a fresh,
   * exactly sized buffer. `readMs` is reported with it. (Not a field: a
   * field first holding 0 and then a fraction changes its representation,
   * which deoptimized every encoder method on a worker's first real page
   * after its warm-up.)
   */
  finish(readMs = 0, arena: Buffer | null = null, out: ArrayBuffer | null = null, code: PageCoder | null = null): ArrayBuffer {
    if (this.pageHead !== '') return this.finishPage(readMs, out, code);
    let tail: EdgeRun | null = this.open === null ? null : { run: this.open, dt: this.dt, members: this.members };
    this.open = null;
    let whole = false;
    if (!this.started && tail !== null) {
      this.head = tail;
      tail = null;
      whole = true;
    }
    const head = this.head;
    const sections: ByteSink[] = [];
    if (head) sections.push(head.dt, head.members);
    sections.push(this.body);
    if (tail) sections.push(tail.dt, tail.members);
    const decodeMs = performance.now() - this.startedAt;
    // The header for sections where they are (in place), or where a copy lays them out back to back.
    const headerFor = (inPlace: boolean): Buffer => {
      const at = new Map<ByteSink, number>();
      let pos = 0;
      for (const s of sections) {
        at.set(s, inPlace ? s.offsetIn(arena as Buffer) : pos);
        pos += s.length;
      }
      const h: SliceHeader = { head: head && header(head, at), whole, bodyAt: at.get(this.body) as number, bodyBytes: this.body.length, tail: tail && header(tail, at), frames: this.frames, bytesRead: this.bytesRead, readMs, decodeMs };
      return Buffer.from(JSON.stringify(h), 'utf8');
    };
    if (arena !== null && sections.every((s) => s.offsetIn(arena) >= 0)) {
      const headerBytes = headerFor(true);
      if (headerBytes.length + RESULT_TRAILER_BYTES <= ARENA_HEADER_ROOM) {
        // The arena keeps its last ARENA_HEADER_ROOM bytes free for this.
        const headerAt = arena.length - RESULT_TRAILER_BYTES - headerBytes.length;
        arena.set(headerBytes, headerAt);
        arena.writeUInt32LE(headerAt, arena.length - RESULT_TRAILER_BYTES);
        arena.writeUInt32LE(headerBytes.length, arena.length - 4);
        return arena.buffer as ArrayBuffer;
      }
    }
    return this.finishCopy(sections, headerFor(false), out);
  }

  /**
   * A whole page's result: the last run settled into the body (the first already was: `started`),
   * then the page's bytes (envelope head, records, `]}`) from the buffer's start, the header
   * naming the records as the body section and the page's length, and the trailer.
   *
   * With `code` (the task's output coding), the page is compressed here, from a view of it framed
   * in the arena around the records (ByteSink#framed: no copy), and its coded form goes into the
   * result right after it (`header.coded`): one buffer and one copy of the page, where compressing
   * the finished result (slice-compress.ts codeSlice) took a second buffer of its size and a second
   * copy (~0.25 ms of a typical zstd page's ~0.7 ms over identity, docs/benchmarks.md "ready,
   * second round (twelfth session)"). When the records are not in the arena, codeSlice does it.
   */
  private finishPage(readMs: number, out: ArrayBuffer | null, code: PageCoder | null): ArrayBuffer {
    this.settle();
    const headBytes = Buffer.byteLength(this.pageHead, 'utf8');
    const pageBytes = headBytes + this.body.length + PAGE_END.length;
    const decodeMs = performance.now() - this.startedAt;
    const page = code === null ? null : this.body.framed(this.pageHead, headBytes, PAGE_END);
    const h: SliceHeader = { head: null, whole: false, bodyAt: headBytes, bodyBytes: this.body.length, tail: null, frames: this.frames, bytesRead: this.bytesRead, readMs, decodeMs, pageBytes };
    let coded: Buffer | null = null;
    if (page !== null) {
      const c = (code as PageCoder).code(page);
      coded = c.bytes;
      h.coded = [{ of: 0, length: pageBytes, crc: c.crc, at: pageBytes, bytes: coded.length }];
      h.codeMs = performance.now() - this.startedAt - decodeMs;
    }
    const headerBytes = Buffer.from(JSON.stringify(h), 'utf8');
    const codedBytes = coded === null ? 0 : coded.length;
    const total = pageBytes + codedBytes + headerBytes.length + RESULT_TRAILER_BYTES;
    // A handed-back buffer too small for this page: a fresh one with a quarter more room, to go round in its place.
    const buf = out === null ? Buffer.allocUnsafeSlow(total) : out.byteLength >= total ? Buffer.from(out) : Buffer.allocUnsafeSlow(total + (total >>> 2));
    if (page !== null) {
      buf.set(page, 0);
      buf.set(coded as Buffer, pageBytes);
    } else {
      buf.write(this.pageHead, 0, 'utf8');
      buf.set(this.body.view(), headBytes);
      buf.set(PAGE_END, headBytes + this.body.length);
    }
    buf.set(headerBytes, pageBytes + codedBytes);
    buf.writeUInt32LE(pageBytes + codedBytes, buf.length - RESULT_TRAILER_BYTES);
    buf.writeUInt32LE(headerBytes.length, buf.length - 4);
    return buf.buffer as ArrayBuffer;
  }

  /**
   * The sections copied into a fresh, exactly sized buffer (its own
   * ArrayBuffer, left unzeroed: every byte is written). With `into`: into
   * that buffer when it is large enough, else into a fresh one with a
   * quarter more room, either to be handed back and used again (page-task.ts);
   * the trailer is at the buffer's end, whatever its size.
   */
  private finishCopy(sections: ByteSink[], headerBytes: Buffer, into: ArrayBuffer | null): ArrayBuffer {
    let total = RESULT_TRAILER_BYTES + headerBytes.length;
    for (const s of sections) total += s.length;
    const out = into === null ? Buffer.allocUnsafeSlow(total) : into.byteLength >= total ? Buffer.from(into) : Buffer.allocUnsafeSlow(total + (total >>> 2));
    let pos = 0;
    for (const s of sections) {
      out.set(s.view(), pos);
      pos += s.length;
    }
    out.set(headerBytes, pos);
    out.writeUInt32LE(pos, out.length - RESULT_TRAILER_BYTES);
    out.writeUInt32LE(headerBytes.length, out.length - 4);
    return out.buffer as ArrayBuffer;
  }
}
