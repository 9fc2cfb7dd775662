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
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionWriter } from '../src/main/session-writer.js';
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
