/**
 * A data directory that cannot take more bytes (a full disk: ENOSPC, a quota,
 * a file size limit): whatever fails, nothing acknowledged is lost, nothing
 * is acknowledged that is not durable, no answer says an append failed that
 * happened, and what the failure leaves behind is nothing (no temp files, no
 * half-made session, no open descriptors). Found by hand on a 600 KB tmpfs
 * (docs/reliability.md, "A full disk"); here the failures are injected
 * (a backend whose metadata writes fail) or made by the process's file size
 * limit (`ulimit -f 0`: every write fails with EFBIG, as on a full disk).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { META_RETRY_MIN_MS, SessionWriter } from '../src/main/session-writer.js';
import { CATCH_UP_MAX_BYTES } from '../src/main/session-state.js';
import { readMeta } from '../src/main/meta-file.js';
import { openStore } from '../src/main/store.js';
import { toPagerError } from '../src/main/server/errors.js';
import { LocalBackend } from '../src/storage/local/local-backend.js';

const dist = resolve(import.meta.dirname, '..', 'dist');
const header = { type: 'session', version: 1, id: 's', createdAt: 1700000000000 };
const ev = (seq: number) => ({ type: 'custom/x', seq, time: 1700000000000 + seq, data: { n: seq } });

/** A local backend whose metadata sidecar writes fail as on a full disk while `full` is set. */
class FullForMetadata extends LocalBackend {
  full = false;
  override async replace(key: string, data: Uint8Array): Promise<void> {
    if (this.full && key.endsWith('.index.json')) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    return super.replace(key, data);
  }
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sp-full-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('a full disk', () => {
  it('an append whose metadata cannot be written is durable, so it is acknowledged, and served as such by a process that reads it after a crash', async () => {
    const backend = new FullForMetadata(dir);
    const w = await SessionWriter.create(backend, 's', header);
    await w.append([ev(0)]);
    backend.full = true;
    // Its frames and entry lines are fsynced before the metadata is written. It was answered
    // with the ENOSPC (500) while it was kept and served: the client's retry got seq_conflict.
    const r = await w.append([ev(1), ev(2)]);
    expect(r).toMatchObject({ fromSeq: 1, nextSeq: 3 });
    // The writer's process dies here (no close). Another reads the session: stale metadata,
    // caught up from the entry sidecar.
    const store = await openStore({ dataDir: dir, workers: 1, warmUp: { jit: false, pagePath: false } });
    try {
      const s = await store.info('s');
      expect(s).toMatchObject({ status: 'ok', nextSeq: 3 });
      const page = await store.page('s', {});
      expect(page.records.map((x) => ('event' in x ? x.event.seq : -1))).toEqual([0, 1, 2]);
    } finally {
      await store.close();
    }
    // Space again: the next append writes the metadata, and the close too.
    backend.full = false;
    expect(await w.append([ev(3)])).toMatchObject({ nextSeq: 4 });
    await w.close();
  });

  it('while the metadata cannot be written, appends are acknowledged only as far as readers can catch it up: the session never reads repair_required', async () => {
    const backend = new FullForMetadata(dir);
    const store = await openStore({ storage: backend, workers: 1, warmUp: { jit: false, pagePath: false } });
    try {
      await store.create('s', {});
      backend.full = true;
      // 4 MiB a batch: the sidecar on storage falls behind by that much each time.
      const big = (seq: number) => ({ type: 'custom/x', seq, time: 1700000000000 + seq, data: { s: 'x'.repeat(1024 * 1024) } });
      const batch = (from: number) => [0, 1, 2, 3].map((i) => big(from + i));
      let next = 0;
      let refused: unknown = null;
      for (let i = 0; i < 2 + CATCH_UP_MAX_BYTES / (4 * 1024 * 1024) && refused === null; i++) {
        try {
          next = (await store.append('s', batch(next))).nextSeq;
        } catch (err) {
          refused = err;
        }
      }
      // What this process and any other say of it: servable, every acknowledged event.
      // Before: past 64 MiB behind, repair_required ("over the catch-up bound; run reindex")
      // in the catalog and GET /v1/sessions/:id, while appends went on being acknowledged.
      const info = await store.info('s');
      expect({ status: info.status, nextSeq: info.nextSeq, metaStale: info.metaStale }).toEqual({ status: 'ok', nextSeq: next, metaStale: true });
      expect((await store.list()).map((x) => [x.status, x.nextSeq])).toEqual([['ok', next]]);
      // The append that would have taken it past the bound is refused as a full disk, nothing of it written.
      expect(refused).toMatchObject({ code: 'ENOSPC' });
      expect(next).toBeGreaterThan(0);
      const log = statSync(join(dir, 'sessions', 's.events')).size;
      await expect(store.append('s', batch(next))).rejects.toMatchObject({ code: 'ENOSPC' });
      expect(statSync(join(dir, 'sessions', 's.events')).size).toBe(log);
      // Space again: the next append writes the metadata first, and goes through.
      backend.full = false;
      expect(await store.append('s', batch(next))).toMatchObject({ fromSeq: next, nextSeq: next + 4 });
      const meta = await readMeta(backend, 'sessions/index/s.index.json');
      expect(typeof meta === 'string' ? meta : meta.nextSeq).toBe(next + 4);
    } finally {
      backend.full = false;
      await store.close();
    }
  }, 120_000);

  it('a metadata write that failed is made again on its own once space is back, with no append to carry it', async () => {
    const backend = new FullForMetadata(dir);
    const w = await SessionWriter.create(backend, 's', header);
    try {
      backend.full = true;
      await w.append([ev(0), ev(1)]);
      expect(w.metadataBehind).toMatchObject({ cause: expect.stringContaining('ENOSPC') });
      const onDisk = async () => {
        const m = await readMeta(backend, 'sessions/index/s.index.json');
        return typeof m === 'string' ? m : m.nextSeq;
      };
      expect(await onDisk()).toBe(0);
      backend.full = false;
      // Before: stale until the next append or the close (readers caught it up each time they read).
      // (The file is renamed into place before the write returns, which syncs its folder: wait for the writer's word.)
      for (let i = 0; i < 200 && w.metadataBehind !== null; i++) await new Promise((r) => setTimeout(r, META_RETRY_MIN_MS / 10));
      expect(w.metadataBehind).toBe(null);
      expect(await onDisk()).toBe(2);
    } finally {
      await w.close();
    }
  });

  it('an idle writer whose metadata cannot be written closes without taking the process down, its lock released', async () => {
    const backend = new FullForMetadata(dir);
    const store = await openStore({ storage: backend, workers: 1, writerIdleMs: 50, warmUp: { jit: false, pagePath: false } });
    const rejections: unknown[] = [];
    const onRejection = (e: unknown) => rejections.push(e);
    process.on('unhandledRejection', onRejection);
    try {
      await store.create('s', {});
      backend.full = true;
      expect(await store.append('s', [ev(0)])).toMatchObject({ nextSeq: 1 });
      // The idle close writes the metadata, which fails. Before: an unhandled rejection (the
      // serve process exits on it) from the idle timer's close.
      for (let i = 0; i < 100 && existsSync(join(dir, 'sessions', 's.lock')); i++) await new Promise((r) => setTimeout(r, 20));
      expect(existsSync(join(dir, 'sessions', 's.lock'))).toBe(false);
      await new Promise((r) => setImmediate(r));
      expect(rejections).toEqual([]);
      expect(await store.info('s')).toMatchObject({ status: 'ok', nextSeq: 1 });
      backend.full = false;
      expect(await store.append('s', [ev(1)])).toMatchObject({ nextSeq: 2 });
    } finally {
      process.off('unhandledRejection', onRejection);
      backend.full = false;
      await store.close();
    }
  });

  it('a create whose metadata cannot be written leaves nothing: not listed, the id free', async () => {
    const backend = new FullForMetadata(dir);
    await (await SessionWriter.create(backend, 'other', { ...header, id: 'other' })).close();
    backend.full = true;
    await expect(SessionWriter.create(backend, 's', header)).rejects.toMatchObject({ code: 'ENOSPC' });
    // It left the log and its entry sidecar: listed repair_required, never acknowledged.
    expect(readdirSync(join(dir, 'sessions')).filter((n) => n.startsWith('s.'))).toEqual([]);
    expect(readdirSync(join(dir, 'sessions', 'index')).filter((n) => n.startsWith('s.') || n === 's')).toEqual([]);
    const store = await openStore({ dataDir: dir, workers: 1, warmUp: { jit: false, pagePath: false } });
    try {
      expect((await store.list()).map((x) => x.id)).toEqual(['other']);
    } finally {
      await store.close();
    }
    backend.full = false;
    await (await SessionWriter.create(backend, 's', header)).close();
  });

  /** Runs `code` (an ES module) with every file write failing (EFBIG: `ulimit -f 0`); its stdout. */
  function underFullDisk(code: string): string {
    // Output through a pipe (a file would refuse it too); Node ignores SIGXFSZ, so writes fail with EFBIG.
    return execFileSync('sh', ['-c', 'ulimit -f 0 && exec "$0" --input-type=module -e "$1"', process.execPath, code], { encoding: 'utf8' });
  }

  it('a metadata write that fails leaves no temp file behind', () => {
    expect(existsSync(join(dist, 'storage', 'local', 'local-backend.js')), 'dist/ is built by `npm test`').toBe(true);
    const out = underFullDisk(`
      import { readdirSync } from 'node:fs';
      const { LocalBackend } = await import(${JSON.stringify(join(dist, 'storage', 'local', 'local-backend.js'))});
      const b = new LocalBackend(${JSON.stringify(dir)});
      const codes = [];
      for (let i = 0; i < 5; i++) await b.replace('sessions/index/s.index.json', Buffer.alloc(4096, 1)).catch((e) => codes.push(e.code));
      console.log(JSON.stringify({ codes, left: readdirSync(${JSON.stringify(join(dir, 'sessions', 'index'))}) }));`);
    // Each failed write left its temp file, with the part of the data it took.
    expect(JSON.parse(out)).toEqual({ codes: ['EFBIG', 'EFBIG', 'EFBIG', 'EFBIG', 'EFBIG'], left: [] });
  });

  it('a writer lock that cannot be written is not taken, leaves no lock file and no open descriptor', () => {
    const out = underFullDisk(`
      import { existsSync, mkdirSync, readdirSync } from 'node:fs';
      const { takePidLease } = await import(${JSON.stringify(join(dist, 'storage', 'local', 'pid-lease.js'))});
      mkdirSync(${JSON.stringify(join(dir, 'sessions'))}, { recursive: true });
      const lock = ${JSON.stringify(join(dir, 'sessions', 's.lock'))};
      const fds = () => readdirSync('/proc/self/fd').length;
      const before = fds();
      const codes = [];
      for (let i = 0; i < 20; i++) await takePidLease(lock, 'session s').catch((e) => codes.push(e.code));
      console.log(JSON.stringify({ codes: [...new Set(codes)], n: codes.length, leaked: fds() - before, lockLeft: existsSync(lock) }));`);
    // Each refused append (its writer's lease) kept a descriptor open until a full collection.
    expect(JSON.parse(out)).toEqual({ codes: ['EFBIG'], n: 20, leaked: 0, lockLeft: false });
  });

  it('says what failed: a storage error is answered as such, without the server paths in its message', () => {
    const pe = toPagerError(Object.assign(new Error("ENOSPC: no space left on device, open '/srv/data/sessions/index/.s.index.json.1.2.tmp'"), { code: 'ENOSPC' }));
    expect(pe.statusCode).toBe(500);
    expect(pe.toJSON()).toEqual({ error: { code: 'internal', message: "the server's storage failed: no space left on the device (ENOSPC); this request was not carried out", errno: 'ENOSPC' } });
    expect(toPagerError(Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' })).message).toContain('read-only (EROFS)');
    // Anything else stays "internal error".
    expect(toPagerError(new Error('boom')).message).toBe('internal error');
  });
});
