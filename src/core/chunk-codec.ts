/**
 * The dsh-compatible lossless chunk-row codec (SPEC section 2), pure.
 *
 * A run of consecutive packable `assistant/chunk` events that share delta
 * kind and block is held as one `Run` (arrays of time gaps and member
 * strings). A run of 3 or more members is written as a packed row; shorter
 * runs stay plain events. The same `RunPacker` serves the writer (packing an
 * append batch), the reference reader (packing a page) and the page workers
 * (re-packing stored rows and events cut at page edges), so there is one
 * definition of "canonical packing" in the code base.
 */
import { RecordError } from './errors.js';
import type { ChunkRow, PageRecord, RowType, SessionEvent, StorageRecord, TextRowData, ToolRowData } from './types.js';
import { isRowType } from './types.js';
import { showToken } from './excerpt.js';

export type ChunkKind = 'text' | 'reasoning' | 'tool';

/** What makes two chunk members part of one run: same kind and block. */
export interface RunKey {
  kind: ChunkKind;
  turn: number;
  step: number;
  index: number;
  /** Tool calls only. */
  id?: string;
  /** Tool calls only, and only when the deltas carry a name. */
  name?: string;
}

/** An open or settled run of chunk members. `dt.length === members.length - 1`. */
export interface Run extends RunKey {
  seq0: number;
  time0: number;
  lastSeq: number;
  lastTime: number;
  dt: number[];
  members: string[];
}

export const MIN_PACKED_RUN = 3;

const ROW_TYPE_OF: Record<ChunkKind, RowType> = {
  text: 'text-chunks',
  reasoning: 'reasoning-chunks',
  tool: 'tool-call-chunks',
};
const KIND_OF_ROW: Record<RowType, ChunkKind> = {
  'text-chunks': 'text',
  'reasoning-chunks': 'reasoning',
  'tool-call-chunks': 'tool',
};
const DELTA_TYPE_OF: Record<ChunkKind, string> = {
  text: 'text-delta',
  reasoning: 'reasoning-delta',
  tool: 'tool-call-delta',
};

const isSafe = Number.isSafeInteger;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function hasExactKeys(o: Record<string, unknown>, required: readonly string[], optional: readonly string[] = []): boolean {
  let n = 0;
  for (const k in o) {
    if (!Object.prototype.hasOwnProperty.call(o, k)) continue;
    n++;
    if (!required.includes(k) && !optional.includes(k)) return false;
  }
  for (const k of required) if (!Object.prototype.hasOwnProperty.call(o, k)) return false;
  return n <= required.length + optional.length;
}

/**
 * If `e` is a packable chunk event, its run key and member string; else null.
 * Packable means exactly the shape of SPEC section 2: nothing extra anywhere,
 * safe integers where integers are expected.
 */
export function packableChunk(e: SessionEvent): { key: RunKey; member: string } | null {
  if (e.type !== 'assistant/chunk') return null;
  if (!hasExactKeys(e, ['type', 'seq', 'time', 'data'])) return null;
  if (!isSafe(e.seq) || !isSafe(e.time)) return null;
  const data = e.data;
  if (!isPlainObject(data) || !hasExactKeys(data, ['turn', 'step', 'chunk'])) return null;
  const { turn, step, chunk } = data;
  if (!isSafe(turn) || !isSafe(step) || !isPlainObject(chunk)) return null;
  const index = chunk.index;
  if (!isSafe(index)) return null;
  const ctype = chunk.type;
  if (ctype === 'text-delta' || ctype === 'reasoning-delta') {
    if (!hasExactKeys(chunk, ['type', 'index', 'text']) || typeof chunk.text !== 'string') return null;
    return {
      key: { kind: ctype === 'text-delta' ? 'text' : 'reasoning', turn: turn as number, step: step as number, index: index as number },
      member: chunk.text,
    };
  }
  if (ctype === 'tool-call-delta') {
    if (!hasExactKeys(chunk, ['type', 'index', 'id', 'argumentsDelta'], ['name'])) return null;
    if (typeof chunk.id !== 'string' || typeof chunk.argumentsDelta !== 'string') return null;
    const key: RunKey = { kind: 'tool', turn: turn as number, step: step as number, index: index as number, id: chunk.id };
    if ('name' in chunk) {
      if (typeof chunk.name !== 'string') return null;
      key.name = chunk.name;
    }
    return { key, member: chunk.argumentsDelta };
  }
  return null;
}

/** Same delta kind and block: turn, step, index, and for tool calls id and name (presence and value). */
export function sameRunKey(a: RunKey, b: RunKey): boolean {
  return (
    a.kind === b.kind &&
    a.turn === b.turn &&
    a.step === b.step &&
    a.index === b.index &&
    a.id === b.id &&
    // A name is a string when present, so equal values mean equal presence too
    // (and a run may carry name: undefined to keep one object shape).
    a.name === b.name
  );
}

/** Whether a member with `key` at (seq, time) continues `run`. */
export function continuesRun(run: RunKey & { lastSeq: number; lastTime: number }, key: RunKey, seq: number, time: number): boolean {
  return seq === run.lastSeq + 1 && isSafe(time - run.lastTime) && sameRunKey(run, key);
}

function newRun(key: RunKey, seq: number, time: number): Run {
  const run: Run = { kind: key.kind, turn: key.turn, step: key.step, index: key.index, seq0: seq, time0: time, lastSeq: seq, lastTime: time, dt: [], members: [] };
  if (key.id !== undefined) run.id = key.id;
  if ('name' in key) run.name = key.name;
  return run;
}

export function rowTypeOf(kind: ChunkKind): RowType {
  return ROW_TYPE_OF[kind];
}

export function rowKey(row: ChunkRow): RunKey {
  const d = row.data as ToolRowData;
  const key: RunKey = { kind: KIND_OF_ROW[row.type], turn: d.turn, step: d.step, index: d.index };
  if (row.type === 'tool-call-chunks') {
    key.id = d.id;
    if ('name' in d) key.name = d.name;
  }
  return key;
}

export function rowMembers(row: ChunkRow): string[] {
  return row.type === 'tool-call-chunks' ? (row.data as ToolRowData).args : (row.data as TextRowData).texts;
}

export function rowLength(row: ChunkRow): number {
  return rowMembers(row).length;
}

/** The row form of a run (any length; callers decide when a run is packed). */
export function runToRow(run: Run): ChunkRow {
  if (run.kind === 'tool') {
    const data: ToolRowData = { turn: run.turn, step: run.step, index: run.index, id: run.id as string, dt: run.dt, args: run.members };
    if ('name' in run) {
      // Keep the canonical key order: id, name, dt, args.
      return { type: 'tool-call-chunks', seq0: run.seq0, time0: run.time0, data: { turn: run.turn, step: run.step, index: run.index, id: run.id as string, name: run.name, dt: run.dt, args: run.members } };
    }
    return { type: 'tool-call-chunks', seq0: run.seq0, time0: run.time0, data };
  }
  return { type: ROW_TYPE_OF[run.kind], seq0: run.seq0, time0: run.time0, data: { turn: run.turn, step: run.step, index: run.index, dt: run.dt, texts: run.members } };
}

/** Member k of a run or row as a logical event. */
export function chunkEvent(key: RunKey, seq: number, time: number, member: string): SessionEvent {
  let chunk: Record<string, unknown>;
  if (key.kind === 'tool') {
    chunk = { type: 'tool-call-delta', index: key.index, id: key.id };
    if (key.name !== undefined) chunk.name = key.name;
    chunk.argumentsDelta = member;
  } else {
    chunk = { type: DELTA_TYPE_OF[key.kind], index: key.index, text: member };
  }
  return { type: 'assistant/chunk', seq, time, data: { turn: key.turn, step: key.step, chunk } };
}

/** A settled run as page records: one packed row, or plain events when short. */
export function runToRecords(run: Run): PageRecord[] {
  if (run.members.length >= MIN_PACKED_RUN) return [{ chunks: runToRow(run) }];
  return runEvents(run).map((event) => ({ event }));
}

export function runEvents(run: Run): SessionEvent[] {
  const out: SessionEvent[] = [];
  let time = run.time0;
  for (let k = 0; k < run.members.length; k++) {
    if (k > 0) time += run.dt[k - 1] as number;
    out.push(chunkEvent(run, run.seq0 + k, time, run.members[k] as string));
  }
  return out;
}

/** Expand a (validated) row into its logical events. */
export function expandRow(row: ChunkRow): SessionEvent[] {
  const key = rowKey(row);
  const members = rowMembers(row);
  const out: SessionEvent[] = new Array(members.length);
  let time = row.time0;
  for (let k = 0; k < members.length; k++) {
    if (k > 0) time += row.data.dt[k - 1] as number;
    out[k] = chunkEvent(key, row.seq0 + k, time, members[k] as string);
  }
  return out;
}

/** Expand page records (or storage records) back into logical events. */
export function expandRecords(records: readonly PageRecord[]): SessionEvent[] {
  const out: SessionEvent[] = [];
  for (const r of records) {
    if ('chunks' in r) for (const e of expandRow(r.chunks)) out.push(e);
    else out.push(r.event);
  }
  return out;
}

export type PackedItem = { event: SessionEvent } | { run: Run };

/**
 * Incremental canonical packer. Feed storage records in seq order (events,
 * or rows optionally cut to a member range); it emits settled items in order:
 * non-packable events, and runs once they can no longer grow. `takeOpen()`
 * hands back the run still open at the end without emitting it, for callers
 * that must merge it with what follows (page slices).
 */
export class RunPacker {
  private open: Run | null = null;
  constructor(private readonly sink: (item: PackedItem) => void) {}

  pushEvent(e: SessionEvent): void {
    const p = packableChunk(e);
    if (p === null) {
      this.flush();
      this.sink({ event: e });
      return;
    }
    const run = this.open;
    if (run !== null && continuesRun(run, p.key, e.seq, e.time)) {
      run.dt.push(e.time - run.lastTime);
      run.members.push(p.member);
      run.lastSeq = e.seq;
      run.lastTime = e.time;
      return;
    }
    this.flush();
    const fresh = newRun(p.key, e.seq, e.time);
    fresh.members.push(p.member);
    this.open = fresh;
  }

  /** Push members [from, to) of a validated row. */
  pushRow(row: ChunkRow, from = 0, to = rowLength(row)): void {
    if (to <= from) return;
    const members = rowMembers(row);
    const dt = row.data.dt;
    let time = row.time0;
    for (let k = 0; k < from; k++) time += dt[k] as number;
    const seq = row.seq0 + from;
    const key = rowKey(row);
    let run = this.open;
    if (run !== null && continuesRun(run, key, seq, time)) {
      run.dt.push(time - run.lastTime);
    } else {
      this.flush();
      run = newRun(key, seq, time);
      this.open = run;
    }
    for (let k = from; k < to; k++) {
      if (k > from) {
        const gap = dt[k - 1] as number;
        run.dt.push(gap);
        time += gap;
      }
      run.members.push(members[k] as string);
    }
    run.lastSeq = row.seq0 + to - 1;
    run.lastTime = time;
  }

  /** Push a whole run (e.g. the open run of a neighbouring slice). */
  pushRun(other: Run): void {
    const run = this.open;
    if (run !== null && continuesRun(run, other, other.seq0, other.time0)) {
      run.dt.push(other.time0 - run.lastTime);
      for (const g of other.dt) run.dt.push(g);
      for (const m of other.members) run.members.push(m);
      run.lastSeq = other.lastSeq;
      run.lastTime = other.lastTime;
      return;
    }
    this.flush();
    this.open = { ...other, dt: other.dt.slice(), members: other.members.slice() };
  }

  pushRecord(r: StorageRecord): void {
    if (isRowType(r.type) && 'seq0' in r) this.pushRow(r as ChunkRow);
    else this.pushEvent(r as SessionEvent);
  }

  flush(): void {
    if (this.open !== null) {
      const run = this.open;
      this.open = null;
      this.sink({ run });
    }
  }

  takeOpen(): Run | null {
    const run = this.open;
    this.open = null;
    return run;
  }
}

/** Canonical packing of a sequence of logical events (SPEC section 2). */
export function packEvents(events: Iterable<SessionEvent>): PageRecord[] {
  const out: PageRecord[] = [];
  const packer = new RunPacker((item) => {
    if ('event' in item) out.push(item);
    else for (const r of runToRecords(item.run)) out.push(r);
  });
  for (const e of events) packer.pushEvent(e);
  packer.flush();
  return out;
}

/** Storage form of a batch: page records unwrapped to the records a frame holds. */
export function packBatch(events: Iterable<SessionEvent>): StorageRecord[] {
  return packEvents(events).map((r) => ('chunks' in r ? r.chunks : r.event));
}

// ---------------------------------------------------------------------------
// Validation of decoded storage records.

// `where` is built only on failure: it quotes the input (cut and escaped, core/excerpt.ts).
function fail(rule: string, where: string | (() => string), message: string): never {
  throw new RecordError(rule, `${typeof where === 'string' ? where : where()}: ${message}`);
}

function describeRow(row: Record<string, unknown>): string {
  return `row ${showToken(row.type)} at seq0 ${showToken(row.seq0)}`;
}

/**
 * Validate a packed row exactly (SPEC section 2) and return it typed. The
 * error names the row and the broken rule.
 */
export function validateRow(value: unknown): ChunkRow {
  if (!isPlainObject(value)) fail('row-object', 'row', 'is not an object');
  const where = (): string => describeRow(value);
  if (!isRowType(value.type)) fail('row-type', where, 'has an unknown row type');
  if (!hasExactKeys(value, ['type', 'seq0', 'time0', 'data'])) fail('row-keys', where, 'keys must be exactly type, seq0, time0, data');
  const { seq0, time0, data } = value;
  if (!isSafe(seq0) || (seq0 as number) < 0) fail('row-seq0', where, 'seq0 must be a non-negative safe integer');
  if (!isSafe(time0)) fail('row-time0', where, 'time0 must be a safe integer');
  if (!isPlainObject(data)) fail('row-data', where, 'data must be an object');
  const tool = value.type === 'tool-call-chunks';
  const ok = tool
    ? hasExactKeys(data, ['turn', 'step', 'index', 'id', 'dt', 'args'], ['name'])
    : hasExactKeys(data, ['turn', 'step', 'index', 'dt', 'texts']);
  if (!ok) fail('row-data-keys', where, tool ? 'data keys must be exactly turn, step, index, id, name?, dt, args' : 'data keys must be exactly turn, step, index, dt, texts');
  for (const k of ['turn', 'step', 'index'] as const) if (!isSafe(data[k])) fail('row-int', where, `data.${k} must be a safe integer`);
  if (tool) {
    if (typeof data.id !== 'string') fail('row-id', where, 'data.id must be a string');
    if ('name' in data && typeof data.name !== 'string') fail('row-name', where, 'data.name must be a string when present');
  }
  const members = tool ? data.args : data.texts;
  const mname = tool ? 'args' : 'texts';
  if (!Array.isArray(members) || members.length === 0) fail('row-members', where, `data.${mname} must be a non-empty array`);
  for (let k = 0; k < members.length; k++) if (typeof members[k] !== 'string') fail('row-members', where, `data.${mname}[${k}] must be a string`);
  const dt = data.dt;
  if (!Array.isArray(dt)) fail('row-dt', where, 'data.dt must be an array');
  if (dt.length !== members.length - 1) fail('row-dt-length', where, `data.dt has ${dt.length} entries, must be ${members.length - 1} (members - 1)`);
  let t = time0 as number;
  for (let k = 0; k < dt.length; k++) {
    const g = dt[k];
    if (!isSafe(g)) fail('row-dt', where, `data.dt[${k}] must be a safe integer`);
    t += g as number;
    if (!isSafe(t)) fail('row-time', where, `member ${k + 1} time is not a safe integer`);
  }
  // Parenthesized: (seq0 + n) - 1 can round back into the safe range when seq0 + n is not.
  if (!isSafe((seq0 as number) + (members.length - 1))) fail('row-seq0', where, 'last member seq is not a safe integer');
  return value as unknown as ChunkRow;
}

/** Validate a stored event record: kept verbatim, but seq and time must be sound. */
export function validateEvent(value: unknown): SessionEvent {
  if (!isPlainObject(value)) fail('event-object', 'event', 'is not an object');
  const where = (): string => `event ${showToken(value.type)} at seq ${showToken(value.seq)}`;
  if (typeof value.type !== 'string' || value.type.length === 0) fail('event-type', where, 'type must be a non-empty string');
  if (!isSafe(value.seq) || (value.seq as number) < 0) fail('event-seq', where, 'seq must be a non-negative safe integer');
  if (!isSafe(value.time)) fail('event-time', where, 'time must be a safe integer');
  return value as SessionEvent;
}

/** Validate any storage record: a packed row or an event. */
export function validateRecord(value: unknown): StorageRecord {
  if (isPlainObject(value) && isRowType(value.type)) return validateRow(value);
  return validateEvent(value);
}

/** First seq and number of logical events a storage record holds. */
export function recordSpan(r: StorageRecord): { seq: number; count: number } {
  if (isRowType(r.type) && 'seq0' in r) return { seq: (r as ChunkRow).seq0, count: rowLength(r as ChunkRow) };
  return { seq: (r as SessionEvent).seq, count: 1 };
}
