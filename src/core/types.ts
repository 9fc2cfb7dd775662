/**
 * The logical model shared by every layer: events, packed chunk rows, page
 * records and entry-sidecar lines (SPEC sections 2, 3 and 4). Pure types.
 */

/** A logical event: `seq` is its position in the session, `time` epoch ms. */
export interface SessionEvent {
  type: string;
  seq: number;
  time: number;
  data?: unknown;
  [key: string]: unknown;
}

/** The session header record, frame 0 of every log. */
export interface SessionHeader {
  type: 'session';
  id: string;
  createdAt?: number;
  version?: unknown;
  [key: string]: unknown;
}

/** What creating a session takes: a header record whose `type`, `id` and `createdAt` are filled in when absent. */
export type SessionHeaderInit = Partial<SessionHeader>;

export type RowType = 'text-chunks' | 'reasoning-chunks' | 'tool-call-chunks';

export interface TextRowData {
  turn: number;
  step: number;
  index: number;
  dt: number[];
  texts: string[];
}

export interface ToolRowData {
  turn: number;
  step: number;
  index: number;
  id: string;
  name?: string;
  dt: number[];
  args: string[];
}

/** A packed run of `assistant/chunk` events (SPEC section 2). */
export interface ChunkRow {
  type: RowType;
  seq0: number;
  time0: number;
  data: TextRowData | ToolRowData;
}

/** What one frame of a log holds (after the header frame). */
export type StorageRecord = SessionEvent | ChunkRow;

/** One element of a page's `records` (SPEC section 4). */
export type PageRecord = { event: SessionEvent } | { chunks: ChunkRow };

export interface Page {
  sessionId: string;
  throughSeq: number;
  fromSeq: number;
  toSeq: number;
  hasMore: boolean;
  records: PageRecord[];
}

export interface PageParams {
  throughSeq?: number;
  beforeSeq?: number;
  maxMessages?: number;
  maxBytes?: number;
}

/** One line of the entry sidecar: where a frame is and what it holds. */
export interface EntryLine {
  v: 1;
  seq: number;
  count: number;
  offset: number;
  length: number;
  kind: string;
  schema: number;
  /** Group start, present only on a counted message (SPEC section 5). */
  group?: number;
}

export const ROW_TYPES: ReadonlySet<string> = new Set<RowType>(['text-chunks', 'reasoning-chunks', 'tool-call-chunks']);

export function isRowType(type: unknown): type is RowType {
  return typeof type === 'string' && ROW_TYPES.has(type);
}
