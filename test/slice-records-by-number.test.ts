/**
 * A page planned from the frame index reads each slice's checksum and
 * row-metadata records by record number straight into the one buffer that
 * is moved to its worker (page-service.ts recordsByNumber): exactly the
 * projection files' records for the slice's frames and the one before them,
 * read once. Projections whose record numbers are not the frames' (a record
 * too many), row metadata shorter than the checksums, or files replaced
 * between pages never let other records reach a slice, and never change a
 * page; the frame index's blocks are read into buffers used again from plan
 * to plan (block-scratch.ts), given back only when the plan is made.
 */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPage } from '../src/core/page-planner.js';
import { resolvePageParams } from '../src/core/page-rule.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { ScratchBlocks } from '../src/main/store/block-scratch.js';
import { HOLD_FILE_MAX_BYTES, HOLD_TOTAL_MAX_BYTES, KeptReaders } from '../src/main/store/kept-readers.js';
import { LocalBackend } from '../src/storage/local/local-backend.js';
import { CRC_RECORD_BYTES, recordOffset, sliceCrcRecords } from '../src/streams/frame-crc-file.js';
import { FrameIndexFile, INDEX_BLOCK_BYTES, INDEX_RECORD_BYTES, indexRecords } from '../src/streams/frame-index-file.js';
import { META_RECORD_BYTES } from '../src/streams/frame-meta-file.js';
import { projectionReadStats } from '../src/streams/record-file.js';
import type { SliceTask } from '../src/workers/slice-protocol.js';
import { withoutSliceRecords } from './helpers/slice-records.js';
import { seedSession, tempStore, type TempStore } from './server-helpers.js';

interface Sent {
  start: number;
  end: number;
  crcs: Buffer | null;
  meta: Buffer | null;
  /** The crcs' buffer held exactly the records (and the metadata after them): nothing else moves with them. */
  own: boolean;
}

type Pages = { onPool: (v: unknown, tasks: SliceTask[]) => Promise<unknown> };

/** Every slice task `store` sends to its pool while `fn` runs, as sent (copied before the move detaches them). */
async function watching<T>(store: PagerStore, fn: () => Promise<T>): Promise<{ sent: Sent[]; out: T }> {
  const pages = (store as unknown as { pages: Pages }).pages;
  const sent: Sent[] = [];
  const onPool = pages.onPool.bind(pages);
  pages.onPool = (v, tasks) => {
    for (const t of tasks) {
      const crcs = t.crcs === undefined ? null : Buffer.from(t.crcs);
      const meta = t.meta === undefined ? null : Buffer.from(t.meta);
      const own = t.crcs === undefined || (t.crcs.byteOffset === 0 && t.crcs.buffer.byteLength === t.crcs.byteLength + (t.meta?.byteLength ?? 0));
      sent.push({ start: t.start, end: t.end, crcs, meta, own });
    }
    return onPool(v, tasks);
  };
  try {
    return { sent, out: await fn() };
  } finally {
    pages.onPool = onPool;
  }
}

describe('slice records read by number', () => {
  let ts: TempStore;
  let store: PagerStore;
  const crcPath = () => join(ts.dir, 'sessions/index/s/frames.crc2');
  const metaPath = () => join(ts.dir, 'sessions/index/s/frames.meta');
  const params = [{ maxMessages: 200 }, { throughSeq: 2999, beforeSeq: 1700, maxMessages: 400 }, { throughSeq: 1500, maxMessages: 40 }];
  let reference: string[] = [];

  /** The file's records a slice [start, end) needs, found by offset: its frames' and the one before them. */
  function expected(crcFile: Buffer, metaFile: Buffer, s: Sent): { crcs: Buffer; meta: Buffer } {
    const crcs = sliceCrcRecords(crcFile, s.start, s.end) as Uint8Array;
    const k = (crcs.byteOffset - crcFile.byteOffset) / CRC_RECORD_BYTES;
    const n = crcs.byteLength / CRC_RECORD_BYTES;
    return { crcs: Buffer.from(crcs), meta: metaFile.subarray(k * META_RECORD_BYTES, (k + n) * META_RECORD_BYTES) };
  }

  async function bodies(): Promise<string[]> {
    const out = [];
    for (const p of params) out.push((await store.pageBuffer('s', p)).body.toString());
    return out;
  }

  beforeAll(async () => {
    ts = await tempStore(1);
    await seedSession(ts.store, 's', 3000, 100);
    await ts.store.close();
    // Pages of several slices, and no records at all for the reference: nothing trusted, nothing skipped.
    const plain = await openStore({ dataDir: ts.dir, workers: 2, pageCacheBytes: 0, splitCost: 4096 });
    try {
      withoutSliceRecords(plain);
      reference = [];
      for (const p of params) reference.push((await plain.pageBuffer('s', p)).body.toString());
    } finally {
      await plain.close();
    }
    store = await openStore({ dataDir: ts.dir, workers: 2, pageCacheBytes: 0, splitCost: 4096 });
  });
  afterAll(async () => {
    await store?.close();
    await ts?.cleanup();
  });

  it("are the files' records for each slice's frames and the one before, in one buffer of their own, read once", async () => {
    const crcFile = readFileSync(crcPath());
    const metaFile = readFileSync(metaPath());
    const before = projectionReadStats.bytes;
    const { sent, out } = await watching(store, bodies);
    const read = projectionReadStats.bytes - before;
    expect(out).toEqual(reference);
    expect(sent.length).toBeGreaterThan(params.length);
    let records = 0;
    for (const s of sent) {
      const want = expected(crcFile, metaFile, s);
      expect(s.crcs?.equals(want.crcs)).toBe(true);
      expect(s.meta?.equals(want.meta)).toBe(true);
      expect(s.own).toBe(true);
      records += want.crcs.length / CRC_RECORD_BYTES;
    }
    // Read by number: the slices' records and nothing else (a search by offset reads records on its way).
    expect(read).toBe(records * (CRC_RECORD_BYTES + META_RECORD_BYTES));
  });

  it('a checksum file whose record numbers are not the frames\' (one record too many first): found by offset, pages unchanged', async () => {
    const crcFile = readFileSync(crcPath());
    const metaFile = readFileSync(metaPath());
    try {
      // A copy of record 1 ahead of the header's: every record number is off by one.
      const shifted = Buffer.concat([crcFile.subarray(CRC_RECORD_BYTES, 2 * CRC_RECORD_BYTES), crcFile]);
      writeFileSync(`${crcPath()}.tmp`, shifted);
      renameSync(`${crcPath()}.tmp`, crcPath());
      const { sent, out } = await watching(store, bodies);
      expect(out).toEqual(reference);
      for (const s of sent) {
        // Whatever a slice carries is the (shifted) file's records for its frames, found by their offsets.
        if (s.crcs === null) continue;
        expect(s.crcs.equals(Buffer.from(sliceCrcRecords(shifted, s.start, s.end) as Uint8Array))).toBe(true);
        const n = s.crcs.length / CRC_RECORD_BYTES;
        expect(recordOffset(s.crcs, n > 1 && recordOffset(s.crcs, 0) < s.start ? 1 : 0)).toBe(s.start);
        expect(s.own).toBe(true);
      }
      expect(sent.some((s) => s.crcs !== null)).toBe(true);
    } finally {
      writeFileSync(`${crcPath()}.tmp`, crcFile);
      renameSync(`${crcPath()}.tmp`, crcPath());
      writeFileSync(`${metaPath()}.tmp`, metaFile);
      renameSync(`${metaPath()}.tmp`, metaPath());
    }
  });

  it('row metadata shorter than the checksums: slices past its end carry checksums alone, in a buffer of their own', async () => {
    const metaFile = readFileSync(metaPath());
    const crcFile = readFileSync(crcPath());
    try {
      const keep = Math.floor(metaFile.length / META_RECORD_BYTES / 2);
      writeFileSync(`${metaPath()}.tmp`, metaFile.subarray(0, keep * META_RECORD_BYTES));
      renameSync(`${metaPath()}.tmp`, metaPath());
      const { sent, out } = await watching(store, bodies);
      expect(out).toEqual(reference);
      const alone = sent.filter((s) => s.crcs !== null && s.meta === null);
      expect(alone.length).toBeGreaterThan(0);
      for (const s of sent) {
        const want = expected(crcFile, metaFile, s);
        expect(s.crcs?.equals(want.crcs)).toBe(true);
        if (s.meta !== null) expect(s.meta.equals(want.meta)).toBe(true);
        expect(s.own).toBe(true);
      }
    } finally {
      writeFileSync(`${metaPath()}.tmp`, metaFile);
      renameSync(`${metaPath()}.tmp`, metaPath());
    }
  });

  it('projections rewritten in place between pages: the next page carries the records as they are now', async () => {
    const crcFile = readFileSync(crcPath());
    const metaFile = readFileSync(metaPath());
    try {
      await watching(store, bodies);
      // Every CRC changed, in place (same inode, same size): no record may reach a slice as it was.
      const changed = Buffer.from(crcFile);
      for (let o = 12; o < changed.length; o += CRC_RECORD_BYTES) changed[o] = (changed[o] as number) ^ 0x5a;
      await new Promise((r) => setTimeout(r, 20));
      writeFileSync(crcPath(), changed);
      const { sent, out } = await watching(store, bodies);
      expect(out).toEqual(reference);
      for (const s of sent) if (s.crcs !== null) expect(s.crcs.equals(expected(changed, metaFile, s).crcs)).toBe(true);
      expect(sent.some((s) => s.crcs !== null)).toBe(true);
    } finally {
      writeFileSync(`${crcPath()}.tmp`, crcFile);
      renameSync(`${crcPath()}.tmp`, crcPath());
    }
  });

  it('after all that, pages are read by number again', async () => {
    const { sent, out } = await watching(store, bodies);
    expect(out).toEqual(reference);
    expect(sent.every((s) => s.crcs !== null && s.meta !== null && s.own)).toBe(true);
  });
});

describe('frame index blocks read into scratch buffers', () => {
  let dir: string;
  const FRAMES = 9000;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sp-scratch-'));
    // An index of more frames than a few of its blocks (2,048 records each): the header, then
    // one-event frames of 50 bytes, every fifth a counted message (its own group).
    const entries = [{ seq: 0, offset: 0, length: 100, count: 0 }];
    for (let i = 0; i < FRAMES; i++) entries.push({ seq: i, offset: 100 + 50 * i, length: 50, count: 1, ...(i % 5 === 0 ? { group: i } : {}) });
    mkdirSync(join(dir, 'sessions/index/big'), { recursive: true });
    writeFileSync(join(dir, 'sessions/index/big/frames.idx'), indexRecords(entries));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  async function plan(scratch: ScratchBlocks | null, maxMessages: number) {
    const backend = new LocalBackend(dir);
    const reader = await backend.openReader('sessions/index/big/frames.idx');
    const records = reader.size / INDEX_RECORD_BYTES;
    const index = (await FrameIndexFile.openIfWhole(reader, records, 100 + 50 * FRAMES, FRAMES, scratch)) as FrameIndexFile;
    expect(index).not.toBeNull();
    try {
      const p = await planPage(resolvePageParams({ maxMessages }, FRAMES - 1), index.backwardFrom(records - 1));
      return { p, freeDuring: scratch?.size ?? 0 };
    } finally {
      await index.close();
    }
  }

  it('plans as from fresh memory; the buffers go back when the file closes and serve the next plan', async () => {
    const scratch = new ScratchBlocks(INDEX_BLOCK_BYTES);
    const plain = await plan(null, 1000);
    const first = await plan(scratch, 1000);
    expect(first.p).toEqual(plain.p);
    // The walk took blocks (none free while it held them), all given back at close.
    expect(first.freeDuring).toBe(0);
    const blocks = scratch.size;
    expect(blocks).toBeGreaterThan(2);
    const second = await plan(scratch, 1000);
    expect(second.p).toEqual(plain.p);
    expect(scratch.size).toBe(blocks);
    // A shorter plan in between, then the long one again: the same answer from reused memory.
    expect((await plan(scratch, 3)).p).toEqual((await plan(null, 3)).p);
    expect((await plan(scratch, 1000)).p).toEqual(plain.p);
    expect(scratch.size).toBe(blocks);
  });

  it('two files open at once never share a buffer; a buffer of another size, or past the bound, is not kept', () => {
    const scratch = new ScratchBlocks(1024, 2);
    const a = scratch.take(1024) as Uint8Array;
    const b = scratch.take(512) as Uint8Array;
    expect(a).not.toBe(b);
    expect(scratch.take(1025)).toBeNull();
    scratch.give(a);
    scratch.give(a);
    scratch.give(new Uint8Array(512));
    expect(scratch.size).toBe(1);
    scratch.give(b);
    scratch.give(new Uint8Array(1024));
    expect(scratch.size).toBe(2);
    const c = scratch.take(100);
    const d = scratch.take(100);
    expect(new Set([c, d]).size).toBe(2);
  });
});

describe('readInto', () => {
  it("writes into the caller's buffer what read returns (fewer bytes at the end, none past it), from a local reader and a kept one, holding or not", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sp-into-'));
    try {
      const backend = new LocalBackend(dir);
      const key = 'sessions/index/s/frames.crc2';
      const bytes = Buffer.from(Array.from({ length: 400 }, (_, i) => `r${i};`).join(''));
      await backend.replace(key, bytes);
      const kept = new KeptReaders(backend, 384, HOLD_FILE_MAX_BYTES, HOLD_TOTAL_MAX_BYTES, 0);
      const cases = [[0, bytes.length], [5, 17], [bytes.length - 3, 10], [bytes.length, 4], [bytes.length + 9, 4], [7, 0]] as const;
      const check = async (r: { read(p: number, l: number): Promise<Buffer>; readInto?(p: number, d: Uint8Array): Promise<number> }) => {
        for (const [pos, len] of cases) {
          const dest = Buffer.alloc(len, 0xee);
          const got = await (r.readInto as (p: number, d: Uint8Array) => Promise<number>)(pos, dest);
          const want = await r.read(pos, len);
          expect(got).toBe(want.length);
          expect(dest.subarray(0, got).equals(want)).toBe(true);
          // Past what was read: untouched.
          expect(dest.subarray(got).every((b) => b === 0xee)).toBe(true);
        }
      };
      const plain = await backend.openReader(key);
      await check(plain);
      await plain.close();
      // Kept: read through its reader, then (read whole once, used again) from the held bytes.
      for (let i = 0; i < 3; i++) {
        const r = (await kept.open(key, 'A')) as Parameters<typeof check>[0] & { close(): Promise<void> };
        await check(r);
        await r.close();
      }
      expect(kept.heldBytes).toBe(bytes.length);
      kept.closeAll();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
