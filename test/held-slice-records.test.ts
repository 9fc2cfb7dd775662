/**
 * A lone page decoded on the main thread takes its slice's checksum and
 * row-metadata records as views of the files the kept readers hold
 * (page-service.ts heldRecords), checked as the copies are; such a task
 * that goes to a worker after all has its records copied into one buffer of
 * their own, moved with it (small-slice-pool.ts), never the held files.
 */
import { describe, expect, it } from 'vitest';
import type { EntryLine } from '../src/core/types.js';
import type { FrameSpan } from '../src/core/page-planner.js';
import type { PagePool } from '../src/main/page-pool.js';
import { SmallSlicePool } from '../src/main/small-slice-pool.js';
import { runSlice } from '../src/main/worker-pool.js';
import { heldRecords } from '../src/main/store/page-service.js';
import { CRC_RECORD_BYTES } from '../src/streams/frame-crc-file.js';
import { META_RECORD_BYTES } from '../src/streams/frame-meta-file.js';
import type { PositionalReader } from '../src/streams/positional-reader.js';
import { sliceTask, type SliceTask } from '../src/workers/slice-protocol.js';

/** 20 frames, frame k at offset 100 + 10k, 10 bytes long: their checksum records and row metadata (marked by record). */
const FRAMES = 20;
const crcFile = Buffer.alloc(FRAMES * CRC_RECORD_BYTES);
const metaFile = Buffer.alloc(FRAMES * META_RECORD_BYTES);
for (let k = 0; k < FRAMES; k++) {
  crcFile.writeUInt32LE(100 + 10 * k, k * CRC_RECORD_BYTES);
  crcFile.writeUInt32LE(10, k * CRC_RECORD_BYTES + 8);
  crcFile.writeUInt32LE(1000 + k, k * CRC_RECORD_BYTES + 12);
  metaFile.fill(k, k * META_RECORD_BYTES, (k + 1) * META_RECORD_BYTES);
}
const entry = (k: number): EntryLine => ({ v: 1, seq: k, count: 1, offset: 100 + 10 * k, length: 10, kind: 'frame', schema: 1 });
/** Frames 5..9 (record numbers too). */
const span = { first: entry(5), last: entry(9), count: 5, bytes: 50, splits: [], splitFrames: [] } as unknown as FrameSpan;
const task = (): SliceTask => sliceTask('file:/logs', 's', 150, 200, 5, 10, 5, 10);

/** A reader of `bytes` that holds them (views) or not (null). */
function reader(bytes: Buffer, held: boolean): PositionalReader {
  return {
    size: bytes.length,
    read: async (pos, len) => bytes.subarray(pos, pos + len),
    heldView: (pos, len) => (held ? bytes.subarray(pos, Math.min(bytes.length, pos + len)) : null),
    close: async () => undefined,
  };
}


/** A pool that runs nothing: it records each task it is given and its transfer list. */
function recordingPool(): { seen: { task: SliceTask; transferList: ArrayBuffer[] }[]; inner: PagePool } {
  const seen: { task: SliceTask; transferList: ArrayBuffer[] }[] = [];
  const inner: PagePool = {
    options: { maxThreads: 2, maxQueue: 64 },
    queueSize: 0,
    utilization: 0,
    completed: 0,
    threads: [],
    run: async (t, opts) => {
      seen.push({ task: t as SliceTask, transferList: opts.transferList ?? [] });
      return new ArrayBuffer(0);
    },
    close: async () => undefined,
  };
  return { seen, inner };
}

describe('a lone page\'s records from held projection files', () => {
  it('are views of the held bytes: the slice\'s records and the one before them', () => {
    const t = task();
    expect(heldRecords(t, reader(crcFile, true), reader(metaFile, true), 5, span)).toBe(true);
    expect(Buffer.from(t.crcs as Uint8Array).equals(crcFile.subarray(4 * CRC_RECORD_BYTES, 10 * CRC_RECORD_BYTES))).toBe(true);
    expect(Buffer.from(t.meta as Uint8Array).equals(metaFile.subarray(4 * META_RECORD_BYTES, 10 * META_RECORD_BYTES))).toBe(true);
    // Views, not copies.
    expect(t.crcs?.buffer).toBe(crcFile.buffer);
    expect(t.meta?.buffer).toBe(metaFile.buffer);
  });

  it('are not taken when a file is not held, or the records are not the slice\'s frames (the caller reads them)', () => {
    for (const [crcs, meta] of [[reader(crcFile, false), reader(metaFile, true)], [reader(crcFile, true), reader(metaFile, false)]] as const) {
      const t = task();
      expect(heldRecords(t, crcs, meta, 5, span)).toBe(false);
      expect(t.crcs).toBeUndefined();
      expect(t.meta).toBeUndefined();
    }
    // Record numbers one off: the first frame's record does not start at the slice.
    const t = task();
    expect(heldRecords(t, reader(crcFile, true), reader(metaFile, true), 6, span)).toBe(false);
    expect(t.crcs).toBeUndefined();
    // No metadata file: the checksums alone.
    const c = task();
    expect(heldRecords(c, reader(crcFile, true), null, 5, span)).toBe(true);
    expect(c.meta).toBeUndefined();
  });

  it('go to a worker as one buffer of their own, moved, when the slice is not decoded here after all', async () => {
    const { seen, inner } = recordingPool();
    // No decoder loaded here: every slice goes to the workers.
    const pool = new SmallSlicePool(inner, 1 << 20);
    const t = task();
    expect(heldRecords(t, reader(crcFile, true), reader(metaFile, true), 5, span)).toBe(true);
    await pool.run(t, {});
    const sent = seen[0] as { task: SliceTask; transferList: ArrayBuffer[] };
    const { crcs, meta } = sent.task;
    expect(Buffer.from(crcs as Uint8Array).equals(crcFile.subarray(4 * CRC_RECORD_BYTES, 10 * CRC_RECORD_BYTES))).toBe(true);
    expect(Buffer.from(meta as Uint8Array).equals(metaFile.subarray(4 * META_RECORD_BYTES, 10 * META_RECORD_BYTES))).toBe(true);
    // One buffer of exactly the records, the checksums first, moved; never the held files.
    expect(crcs?.buffer).toBe(meta?.buffer);
    expect(crcs?.byteOffset).toBe(0);
    expect(meta?.byteOffset).toBe(crcs?.byteLength);
    expect(crcs?.buffer.byteLength).toBe((crcs?.byteLength ?? 0) + (meta?.byteLength ?? 0));
    expect(sent.transferList).toEqual([crcs?.buffer]);
    expect(sent.transferList).not.toContain(crcFile.buffer);
    expect(sent.transferList).not.toContain(metaFile.buffer);
  });
});

/** `bytes` copied into shared memory, as the kept readers hold files (kept-readers.ts). */
function sharedCopy(bytes: Buffer): Buffer {
  const b = Buffer.from(new SharedArrayBuffer(bytes.length));
  bytes.copy(b);
  return b;
}

describe('a one-slice page\'s records for a worker, from held projection files', () => {
  it('are views of held bytes only in shared memory, and go to the worker as they are: not copied, not moved', async () => {
    // Held in unshared memory: not taken for a worker (posted, a view would take its whole file along).
    const plain = task();
    expect(heldRecords(plain, reader(crcFile, true), reader(metaFile, true), 5, span, true)).toBe(false);
    expect(plain.crcs).toBeUndefined();
    expect(plain.meta).toBeUndefined();
    const crcShared = sharedCopy(crcFile);
    const metaShared = sharedCopy(metaFile);
    const t = task();
    expect(heldRecords(t, reader(crcShared, true), reader(metaShared, true), 5, span, true)).toBe(true);
    expect(t.crcs?.buffer).toBe(crcShared.buffer);
    expect(t.meta?.buffer).toBe(metaShared.buffer);
    expect(Buffer.from(t.crcs as Uint8Array).equals(crcFile.subarray(4 * CRC_RECORD_BYTES, 10 * CRC_RECORD_BYTES))).toBe(true);
    expect(Buffer.from(t.meta as Uint8Array).equals(metaFile.subarray(4 * META_RECORD_BYTES, 10 * META_RECORD_BYTES))).toBe(true);
    // Checksums held in shared memory but the metadata not: the checksums alone.
    const half = task();
    expect(heldRecords(half, reader(crcShared, true), reader(metaFile, true), 5, span, true)).toBe(true);
    expect(half.meta).toBeUndefined();
    // Through the pool: the same views, and nothing in the transfer list (shared memory is not moved).
    const { seen, inner } = recordingPool();
    await new SmallSlicePool(inner, 1 << 20).run(t, {});
    const sent = seen[0] as { task: SliceTask; transferList: ArrayBuffer[] };
    expect(sent.task.crcs).toBe(t.crcs);
    expect(sent.task.meta).toBe(t.meta);
    expect(sent.transferList).toEqual([]);
    // runSlice moves no shared memory either, even a view of a whole held file.
    const whole = task();
    whole.crcs = new Uint8Array(crcShared.buffer, 0, crcShared.length);
    seen.length = 0;
    await runSlice(inner, whole);
    expect((seen[0] as { transferList: ArrayBuffer[] }).transferList).toEqual([]);
  });
});

describe('a lone page\'s records from held files, as the decoder sees them', () => {
  it('are plain Uint8Arrays, as the copies are (the held bytes are Buffers)', () => {
    const t = task();
    expect(heldRecords(t, reader(crcFile, true), reader(metaFile, true), 5, span)).toBe(true);
    expect(Object.getPrototypeOf(t.crcs)).toBe(Uint8Array.prototype);
    expect(Object.getPrototypeOf(t.meta)).toBe(Uint8Array.prototype);
  });
});
