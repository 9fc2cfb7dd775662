/**
 * Projection readers kept open between pages (src/main/store/kept-readers.ts)
 * never read a file the key no longer names, nor a file as it was: a file
 * renamed over, removed, rewritten in place or grown is read as it is now,
 * a new session stamp opens the key again, and a reader still in use is
 * closed only when its page is done with it.
 */
import { linkSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RandomReader } from '../src/storage/backend.js';
import { LocalBackend } from '../src/storage/local/local-backend.js';
import { MemoryBackend } from '../src/storage/memory/memory-backend.js';
import { HOLD_FILE_MAX_BYTES, HOLD_TOTAL_MAX_BYTES, KeptReaders } from '../src/main/store/kept-readers.js';
import type { PositionalReader } from '../src/streams/positional-reader.js';

let dir: string;
const KEY = 'sessions/index/s/frames.crc2';

async function text(r: PositionalReader | null): Promise<string | null> {
  if (r === null) return null;
  try {
    return (await r.read(0, r.size)).toString();
  } finally {
    await r.close();
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sp-kept-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('kept projection readers (local files)', () => {
  const file = () => join(dir, KEY);
  const put = async (backend: LocalBackend, s: string) => backend.replace(KEY, Buffer.from(s));

  it('are used again while the stamp and the file are unchanged', async () => {
    const backend = new LocalBackend(dir);
    await put(backend, 'first');
    const kept = new KeptReaders(backend);
    expect(await text(await kept.open(KEY, 'A'))).toBe('first');
    expect(await text(await kept.open(KEY, 'A'))).toBe('first');
    expect(await text(await kept.open(KEY, 'A'))).toBe('first');
    expect({ opened: kept.opened, reused: kept.reused }).toEqual({ opened: 1, reused: 2 });
    kept.closeAll();
  });

  it('a file replaced by a rename, removed, rewritten or grown under the same stamp is read as it is now', async () => {
    const backend = new LocalBackend(dir);
    await put(backend, 'old bytes');
    const kept = new KeptReaders(backend);
    expect(await text(await kept.open(KEY, 'A'))).toBe('old bytes');
    // Replaced by a rename (the atomic replace every tool uses): the kept reader's file has no name left.
    await put(backend, 'new bytes');
    expect(await text(await kept.open(KEY, 'A'))).toBe('new bytes');
    // Removed: projections are optional, a missing one reads as null.
    rmSync(file());
    expect(await kept.open(KEY, 'A')).toBeNull();
    writeFileSync(file(), 'in place');
    expect(await text(await kept.open(KEY, 'A'))).toBe('in place');
    // Rewritten in place at another size, then grown (a writer's append).
    writeFileSync(file(), 'cut');
    expect(await text(await kept.open(KEY, 'A'))).toBe('cut');
    writeFileSync(file(), 'cut, then appended to');
    expect(await text(await kept.open(KEY, 'A'))).toBe('cut, then appended to');
    expect(kept.opened).toBe(5);
    kept.closeAll();
  });

  it('a rename over one of two hard links of the file is seen (its link count, so its change time, moved)', async () => {
    const backend = new LocalBackend(dir);
    await put(backend, 'linked twice');
    const other = join(dir, 'elsewhere.crc2');
    rmSync(other, { force: true });
    linkSync(file(), other);
    const kept = new KeptReaders(backend);
    expect(await text(await kept.open(KEY, 'A'))).toBe('linked twice');
    // The change time has a clock tick's granularity: a change in the tick of the open could not be told.
    await new Promise((r) => setTimeout(r, 20));
    const tmp = join(dir, 'next.tmp');
    writeFileSync(tmp, 'replaced one link');
    renameSync(tmp, file());
    expect(await text(await kept.open(KEY, 'A'))).toBe('replaced one link');
    kept.closeAll();
  });

  it('a new stamp opens the key again; a reader in use is closed only when handed back', async () => {
    const closed: string[] = [];
    const local = new LocalBackend(dir);
    await put(local, 'bytes');
    // The local backend's readers, each close recorded.
    const backend = Object.create(local) as LocalBackend;
    let made = 0;
    backend.openReader = async (key: string, size?: number): Promise<RandomReader> => {
      const r = await local.openReader(key, size);
      const n = `r${made++}`;
      return { size: r.size, read: (p, l) => r.read(p, l), unchanged: () => r.unchanged?.() ?? Promise.resolve(false), close: async () => { closed.push(n); await r.close(); } };
    };
    const kept = new KeptReaders(backend);
    const inUse = await kept.open(KEY, 'A');
    expect(inUse).not.toBeNull();
    // A page under a newer stamp: the first reader is retired but still reads for its page.
    expect(await text(await kept.open(KEY, 'B'))).toBe('bytes');
    expect(closed).toEqual([]);
    expect((await inUse?.read(0, 5))?.toString()).toBe('bytes');
    await inUse?.close();
    await inUse?.close(); // handing back twice closes nothing twice
    expect(closed).toEqual(['r0']);
    expect(kept.opened).toBe(2);
    // The empty stamp (a view whose files moved while read): the kept reader is dropped, and the new one not kept.
    await text(await kept.open(KEY, ''));
    expect(closed).toEqual(['r0', 'r1', 'r2']);
    expect(kept.size).toBe(0);
  });

  it('keeps at most its bound of readers, least recently used closed first', async () => {
    const backend = new LocalBackend(dir);
    for (const k of ['a', 'b', 'c']) await backend.replace(`sessions/index/${k}/frames.idx`, Buffer.from(k));
    const kept = new KeptReaders(backend, 2);
    for (const k of ['a', 'b', 'a', 'c', 'a']) expect(await text(await kept.open(`sessions/index/${k}/frames.idx`, 'A'))).toBe(k);
    expect(kept.size).toBe(2);
    expect({ opened: kept.opened, reused: kept.reused }).toEqual({ opened: 3, reused: 2 });
    kept.closeAll();
    expect(kept.size).toBe(0);
  });
});

describe('kept projection readers: small files held whole once used again', () => {
  /** The local backend, each reader's reads counted. */
  function counting(): { backend: LocalBackend; reads: () => number } {
    const local = new LocalBackend(dir);
    const backend = Object.create(local) as LocalBackend;
    let reads = 0;
    backend.openReader = async (key: string, size?: number): Promise<RandomReader> => {
      const r = await local.openReader(key, size);
      return { size: r.size, read: (p, l) => (reads++, r.read(p, l)), unchanged: () => r.unchanged?.() ?? Promise.resolve(false), close: () => r.close() };
    };
    return { backend, reads: () => reads };
  }
  const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => `record ${i};`).join(''));
  /** Readers hold as soon as they are used again (not only once open HOLD_AFTER_MS). */
  const holding = (backend: LocalBackend) => new KeptReaders(backend, 384, HOLD_FILE_MAX_BYTES, HOLD_TOTAL_MAX_BYTES, 0);

  it('holds nothing from a reader opened less than its bound ago (its file may change in the tick it last changed)', async () => {
    const { backend, reads } = counting();
    await backend.replace(KEY, bytes);
    const kept = new KeptReaders(backend, 384, HOLD_FILE_MAX_BYTES, HOLD_TOTAL_MAX_BYTES, 60_000);
    for (let i = 0; i < 3; i++) expect(await text(await kept.open(KEY, 'A'))).toBe(bytes.toString());
    expect({ held: kept.heldBytes, reads: reads(), reused: kept.reused }).toEqual({ held: 0, reads: 3, reused: 2 });
    kept.closeAll();
  });

  it('answers every range as the reader would (fewer bytes at the end, none past it) without reading again', async () => {
    const { backend, reads } = counting();
    await backend.replace(KEY, bytes);
    const kept = holding(backend);
    // Pages that read less than the file holds: not held (a tail page's few KB of a large checksum file).
    for (let i = 0; i < 3; i++) {
      const page = await kept.open(KEY, 'A');
      expect((await page?.read(10, 20))?.toString()).toBe(bytes.subarray(10, 30).toString());
      await page?.close();
    }
    expect(kept.heldBytes).toBe(0);
    // Once they have read as much as it holds, the next page holds it whole: one read.
    const first = await kept.open(KEY, 'A');
    // Nothing held yet: no view of held bytes (the caller reads).
    expect(first?.heldView?.(0, 8)).toBeNull();
    expect((await first?.read(0, bytes.length))?.length).toBe(bytes.length);
    await first?.close();
    expect(kept.heldBytes).toBe(0);
    const before = reads();
    const r = (await kept.open(KEY, 'A')) as PositionalReader;
    expect(reads()).toBe(before + 1);
    expect(kept.heldBytes).toBe(bytes.length);
    for (const [pos, len] of [[0, bytes.length], [5, 17], [bytes.length - 3, 10], [bytes.length, 4], [bytes.length + 9, 4], [7, 0]] as const) {
      expect((await r.read(pos, len)).equals(bytes.subarray(Math.min(pos, bytes.length), Math.min(bytes.length, pos + len)))).toBe(true);
      // The same bytes as a view of the held ones (heldView: the frame index's blocks).
      expect(r.heldView?.(pos, len)?.equals(bytes.subarray(Math.min(pos, bytes.length), Math.min(bytes.length, pos + len)))).toBe(true);
    }
    // In shared memory: a page's records go to its worker as views of it (page-service.ts heldRecords).
    expect(r.heldView?.(0, 8)?.buffer).toBeInstanceOf(SharedArrayBuffer);
    await r.close();
    expect(reads()).toBe(before + 1);
    kept.closeAll();
    expect(kept.heldBytes).toBe(0);
  });

  it('drops the held bytes with the reader: a file changed under the same stamp is read as it is now', async () => {
    const { backend } = counting();
    await backend.replace(KEY, bytes);
    const kept = holding(backend);
    await text(await kept.open(KEY, 'A'));
    expect(await text(await kept.open(KEY, 'A'))).toBe(bytes.toString());
    expect(kept.heldBytes).toBe(bytes.length);
    await new Promise((r) => setTimeout(r, 20));
    writeFileSync(join(dir, KEY), 'rewritten in place');
    expect(await text(await kept.open(KEY, 'A'))).toBe('rewritten in place');
    expect(kept.heldBytes).toBe(0);
    await backend.replace(KEY, Buffer.from('replaced'));
    expect(await text(await kept.open(KEY, 'A'))).toBe('replaced');
    expect(await text(await kept.open(KEY, 'A'))).toBe('replaced');
    expect(kept.heldBytes).toBe('replaced'.length);
    kept.closeAll();
  });

  it('holds no file past its bound, and drops the least recently used past the total', async () => {
    const { backend } = counting();
    const keys = ['a', 'b', 'c'].map((k) => `sessions/index/${k}/frames.meta`);
    for (const k of keys) await backend.replace(k, bytes);
    await backend.replace('sessions/index/big/frames.meta', Buffer.concat([bytes, bytes]));
    // Files of at most 1.5 times `bytes`, two of them in all.
    const kept = new KeptReaders(backend, 384, Math.floor(bytes.length * 1.5), bytes.length * 2, 0);
    for (let round = 0; round < 2; round++) expect(await text(await kept.open('sessions/index/big/frames.meta', 'A'))).toBe(bytes.toString().repeat(2));
    expect(kept.heldBytes).toBe(0);
    for (const k of [...keys, ...keys]) expect(await text(await kept.open(k, 'A'))).toBe(bytes.toString());
    expect(kept.heldBytes).toBe(bytes.length * 2);
    kept.closeAll();
  });
});

describe('kept projection readers (a backend whose readers cannot tell they are current)', () => {
  it('open the object each time, so a replaced one is read as it is now', async () => {
    const backend = new MemoryBackend();
    await backend.replace(KEY, Buffer.from('one'));
    const kept = new KeptReaders(backend);
    expect(await text(await kept.open(KEY, 'A'))).toBe('one');
    await backend.replace(KEY, Buffer.from('two'));
    expect(await text(await kept.open(KEY, 'A'))).toBe('two');
    expect({ opened: kept.opened, reused: kept.reused, size: kept.size }).toEqual({ opened: 2, reused: 0, size: 0 });
  });
});
