/**
 * The benchmark's SQLite peer (bench/sqlite-peer.mjs) must give the same
 * page bytes as the service, or the bench compares different work: checked
 * on random logs (every edge of the packing and paging rules) and random
 * page parameters. The bench checks its own workloads again before timing.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../src/main/store.js';
import { randomLog } from './helpers/random-log.js';

describe('SQLite peer (bench)', () => {
  it('gives the service\'s bytes for random pages of random logs', async () => {
    const { openPeer, loadSession, PeerReader } = await import('../bench/sqlite-peer.mjs');
    let pages = 0;
    for (const seed of [21, 22, 23, 24]) {
      const log = await randomLog(seed, { maxPieces: 80 });
      const db = join(log.dataDir, 'peer.db');
      const store = await openStore({ dataDir: log.dataDir, workers: 1, pageCacheBytes: 0 });
      try {
        const w = openPeer(db);
        expect(loadSession(w, log.dataDir, log.id)).toBe(log.events.length);
        w.close();
        const peer = new PeerReader(db);
        const last = log.events.length - 1;
        let s = seed;
        const rand = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296);
        for (let i = 0; i < 40; i++) {
          const maxMessages = [1, 2, 5, 50][Math.floor(rand() * 4)] as number;
          const params = i === 0 ? { maxMessages } : { throughSeq: last, beforeSeq: Math.floor(rand() * (last + 2)), maxMessages };
          const mine = (await store.pageBuffer(log.id, params)).body;
          expect(peer.page(log.id, params).toString()).toBe(mine.toString());
          pages++;
        }
        peer.close();
      } finally {
        await store.close();
        log.cleanup();
        rmSync(db, { force: true });
      }
    }
    expect(pages).toBe(160);
  });
});
