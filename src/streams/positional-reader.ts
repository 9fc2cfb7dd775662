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
  /**
   * Bytes [pos, pos + dest.length) written into `dest`, fewer at the end: how many. Optional (a
   * reader that cannot is read with `read` and copied): a caller whose destination is the buffer
   * it hands on (a slice task's records, moved to a worker) then makes no buffer of its own.
   */
  readInto?(pos: number, dest: Uint8Array): Promise<number>;
  /**
   * Bytes [pos, pos + len) (fewer at the end) as a view of the whole object the reader already
   * holds in memory, or null when it holds none (then `read` or `readInto`). Optional. Callers
   * must not write into it. A reader of a block it would otherwise copy into a buffer of its own
   * (the frame index's 64 KB blocks) takes this first: no read and no copy.
   */
  heldView?(pos: number, len: number): Buffer | null;
  close(): Promise<void>;
}

/** One ranged read of a stored object: bytes [start, end), fewer at the end; null when the object does not exist. */
export type RangeRead = (start: number, end: number) => Promise<Buffer | null>;
