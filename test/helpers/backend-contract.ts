/**
 * The storage seam's contract (storage/backend.ts), the same assertions for
 * every backend (test/helpers/backends.ts): ranged reads, stat, positional
 * writes and durability calls, atomic replace, list, remove, leases. The
 * page path, trust rules, appends and maintenance over each backend are in
 * storage-compliance.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isExists, isNotFound, type StorageBackend } from '../../src/storage/backend.js';
import type { BackendUnderTest } from './backends.js';
import { copyObject, openReplacement } from '../../src/storage/replacement.js';

/** The raw contract against one backend. */
export function backendContract(b: BackendUnderTest): void {
  describe(`storage backend: ${b.name}`, () => {
    let storage: StorageBackend;
    let dispose: () => Promise<void>;
    beforeEach(() => {
      ({ storage, dispose } = b.make());
    });
    afterEach(async () => dispose());

    it('a missing object: stat and reads say so, reader and existing-open fail with ENOENT', async () => {
      expect(await storage.stat('sessions/none.events')).toBeNull();
      expect(await storage.read('sessions/none.events', 0, 10)).toBeNull();
      expect(await storage.readAll('sessions/none.events')).toBeNull();
      expect(await storage.list('sessions')).toEqual([]);
      await expect(storage.openReader('sessions/none.events')).rejects.toSatisfy(isNotFound);
      await expect(storage.openWritable('sessions/none.events', 'existing')).rejects.toSatisfy(isNotFound);
    });

    it('positional writes, ranged reads (short at the end), stat that changes with the content', async () => {
      const w = await storage.openWritable('sessions/a.events', 'create');
      await w.write(Buffer.from('hello '), 0);
      await w.write(Buffer.from('world\n'), 6);
      await w.sync();
      expect(w.size).toBe(12);
      const s1 = await storage.stat('sessions/a.events');
      expect(s1?.size).toBe(12);
      expect((await storage.read('sessions/a.events', 6, 11))?.toString()).toBe('world');
      expect((await storage.read('sessions/a.events', 10, 100))?.toString()).toBe('d\n');
      expect((await storage.read('sessions/a.events', 50, 60))?.length).toBe(0);
      expect((await w.read(0, 5)).toString()).toBe('hello');
      // Overwrite in place and grow: the stat's version moves on.
      await w.write(Buffer.from('HELLO'), 0);
      await w.write(Buffer.from('!'), 12);
      const s2 = await storage.stat('sessions/a.events');
      expect(s2?.size).toBe(13);
      expect(s2?.version).not.toBe(s1?.version);
      expect((await w.stat()).size).toBe(13);
      // Written, not made anew: the same incarnation.
      expect(s2?.incarnation).toBe(s1?.incarnation);
      expect((await storage.readAll('sessions/a.events'))?.toString()).toBe('HELLO world\n!');
      await w.truncate(5);
      expect(w.size).toBe(5);
      expect((await storage.readAll('sessions/a.events'))?.toString()).toBe('HELLO');
      await w.close();
    });

    it('a reader reads up to the size it was opened with', async () => {
      const w = await storage.openWritable('sessions/index/a.entries.jsonl', 'truncate');
      await w.write(Buffer.from('0123456789'), 0);
      const r = await storage.openReader('sessions/index/a.entries.jsonl', 6);
      expect(r.size).toBe(6);
      expect((await r.read(4, 10)).toString()).toBe('45');
      await r.close();
      const whole = await storage.openReader('sessions/index/a.entries.jsonl');
      expect(whole.size).toBe(10);
      expect((await whole.read(0, 100)).toString()).toBe('0123456789');
      await whole.close();
      await w.close();
    });

    it('write modes: create is exclusive, truncate empties, existing-or-create keeps', async () => {
      const w = await storage.openWritable('sessions/b.events', 'create');
      await w.write(Buffer.from('abc'), 0);
      await w.close();
      await expect(storage.openWritable('sessions/b.events', 'create')).rejects.toSatisfy(isExists);
      const kept = await storage.openWritable('sessions/b.events', 'existing-or-create');
      expect(kept.size).toBe(3);
      // Positional, not appending: a write at 0 replaces the first byte.
      await kept.write(Buffer.from('X'), 0);
      await kept.close();
      expect((await storage.readAll('sessions/b.events'))?.toString()).toBe('Xbc');
      const fresh = await storage.openWritable('sessions/index/b/frames.idx', 'existing-or-create');
      expect(fresh.size).toBe(0);
      await fresh.close();
      const emptied = await storage.openWritable('sessions/b.events', 'truncate');
      expect(emptied.size).toBe(0);
      await emptied.close();
      expect((await storage.stat('sessions/b.events'))?.size).toBe(0);
    });

    it('createExclusive places a whole object once, and fails with EEXIST after', async () => {
      await storage.createExclusive('sessions/n.events', Buffer.from('header\n'));
      expect((await storage.readAll('sessions/n.events'))?.toString()).toBe('header\n');
      await expect(storage.createExclusive('sessions/n.events', Buffer.from('other\n'))).rejects.toSatisfy(isExists);
      expect((await storage.readAll('sessions/n.events'))?.toString()).toBe('header\n');
      // Nothing is left beside it.
      expect(await storage.list('sessions')).toEqual(['n.events']);
      // Removed and created again: another incarnation.
      const first = await storage.stat('sessions/n.events');
      await storage.remove('sessions/n.events');
      await storage.createExclusive('sessions/n.events', Buffer.from('header\n'));
      expect((await storage.stat('sessions/n.events'))?.incarnation).not.toBe(first?.incarnation);
    });

    it('replace is whole: the old object or the new one', async () => {
      await storage.replace('sessions/index/c.index.json', Buffer.from('{"v":1}\n'));
      const s1 = await storage.stat('sessions/index/c.index.json');
      await storage.replace('sessions/index/c.index.json', Buffer.from('{"v":2,"x":1}\n'));
      expect((await storage.readAll('sessions/index/c.index.json'))?.toString()).toBe('{"v":2,"x":1}\n');
      expect((await storage.stat('sessions/index/c.index.json'))?.version).not.toBe(s1?.version);
      // No temporary object is left beside it.
      expect(await storage.list('sessions/index')).toEqual(['c.index.json']);
    });

    it('a replacement (streamed where the backend can, else collected) is invisible until committed, then whole; exclusive fails with EEXIST; a copy', async () => {
      const key = 'sessions/index/r.entries.jsonl';
      await storage.replace(key, Buffer.from('old\n'));
      const r = await openReplacement(storage, key, false);
      await r.write(Buffer.from('new '));
      await r.write(Buffer.from('lines\n'));
      expect(r.size).toBe(10);
      expect((await storage.readAll(key))?.toString()).toBe('old\n');
      await r.commit();
      expect((await storage.readAll(key))?.toString()).toBe('new lines\n');
      // Dropped: nothing changes, nothing is left beside it.
      const dropped = await openReplacement(storage, key, false);
      await dropped.write(Buffer.from('never'));
      await dropped.abort();
      expect((await storage.readAll(key))?.toString()).toBe('new lines\n');
      expect(await storage.list('sessions/index')).toEqual(['r.entries.jsonl']);
      // Exclusive: placed only where nothing is.
      const log = 'sessions/r.events';
      const first = await openReplacement(storage, log, true);
      await first.write(Buffer.from('header\n'));
      await first.commit();
      const second = await openReplacement(storage, log, true);
      await second.write(Buffer.from('other\n'));
      await expect(second.commit()).rejects.toSatisfy(isExists);
      await second.abort();
      expect((await storage.readAll(log))?.toString()).toBe('header\n');
      expect(await storage.list('sessions')).toEqual(expect.arrayContaining(['r.events']));
      expect((await storage.list('sessions')).filter((n) => n !== 'index' && n !== 'r.events')).toEqual([]);
      // A backup: a new object beside the log with its bytes, never over another.
      const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
      await storage.replace(log, big);
      const bak = 'sessions/r.events.bak-20261201T120000000Z';
      expect(await copyObject(storage, log, bak)).toBe(big.length);
      expect((await storage.readAll(bak))?.equals(big)).toBe(true);
      await expect(copyObject(storage, log, bak)).rejects.toSatisfy(isExists);
      await storage.remove(bak);
      expect(await storage.stat(bak)).toBeNull();
    });

    it('list names what is directly under a folder (sub-folders by name); remove and removeAll', async () => {
      await storage.ensureFolder('sessions/index');
      await storage.replace('sessions/x.events', Buffer.from('x'));
      await storage.replace('sessions/y.events', Buffer.from('y'));
      await storage.replace('sessions/index/x.index.json', Buffer.from('{}'));
      await storage.replace('sessions/index/x/frames.idx', Buffer.from('1'));
      await storage.replace('sessions/index/x/frames.crc2', Buffer.from('2'));
      expect((await storage.list('sessions')).sort()).toEqual(['index', 'x.events', 'y.events']);
      expect((await storage.list('sessions/index')).sort()).toEqual(['x', 'x.index.json']);
      expect((await storage.list('sessions/index/x')).sort()).toEqual(['frames.crc2', 'frames.idx']);
      await storage.remove('sessions/y.events');
      await storage.remove('sessions/never.events');
      expect(await storage.stat('sessions/y.events')).toBeNull();
      await storage.removeAll('sessions/index/x');
      expect(await storage.list('sessions/index/x')).toEqual([]);
      expect(await storage.stat('sessions/index/x.index.json')).not.toBeNull();
    });

    it('a lease has one holder at a time, and is free again once released', async () => {
      const a = await storage.lease('sessions/l.lock', 'session l');
      await expect(storage.lease('sessions/l.lock', 'session l')).rejects.toMatchObject({ code: 'session_busy' });
      const other = await storage.lease('sessions/m.lock', 'session m');
      await a.release();
      await a.release();
      const again = await storage.lease('sessions/l.lock', 'session l');
      await again.release();
      await other.release();
    });
  });
}
