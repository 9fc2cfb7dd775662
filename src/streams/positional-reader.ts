/**
 * What the byte formats read through: positional reads of one stored
 * object. The storage backends' readers (storage/backend.ts) are these; a
 * format never opens anything itself.
 */
export interface PositionalReader {
  /** Bytes of the object the reader may read. */
  readonly size: number;
  /** Bytes [pos, pos + len), fewer at the end. */
  read(pos: number, len: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** One ranged read of a stored object: bytes [start, end), fewer at the end; null when the object does not exist. */
export type RangeRead = (start: number, end: number) => Promise<Buffer | null>;
