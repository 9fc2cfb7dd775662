/**
 * The S3 backend (`--store s3://bucket/prefix`): sessions on an object store
 * (Ceph RGW, AWS S3), readers in any process, one writer per session. The
 * remote layout is docs/s3-layout.md; each session is a SessionVolume
 * (session-volume.ts). Keys of the layout (storage/layout.ts) are members of
 * their session's volume; a key outside the layout is refused.
 *
 * Workers cannot reach the store themselves (`workerSource` null): the
 * main thread reads a slice's bytes (ranged GETs through the block cache)
 * and hands them over with the task.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { PagerError } from '../../core/errors.js';
import { INDEX, SESSIONS, isValidSessionId, parseBackupKey } from '../layout.js';
import { StorageError, type Lease, type ObjectStat, type RandomReader, type StorageBackend, type WritableFile, type WriteMode } from '../backend.js';
import { LocalBackend } from '../local/local-backend.js';
import { processAlive, processStart } from '../local/pid-lease.js';
import { BlockCache, DEFAULT_BLOCK_BYTES, DEFAULT_CACHE_BYTES } from './block-cache.js';
import { CheckedReads } from './checked-reads.js';
import type { ObjectStore } from './object-store.js';
import { listedName, roleOfKey, sessionFolder, type MemberName } from './remote-names.js';
import { DEFAULT_CHECK_BYTES } from './segment-file.js';
import { SessionVolume, type PageAsk, type PageHint, type VolumeConfig } from './session-volume.js';
import { DEFAULT_SPARSE_EVERY } from './sparse-index.js';
import { underPrefix, type S3Location } from './store-url.js';

export interface S3BackendOptions {
  objects: ObjectStore;
  location: S3Location;
  /** Local folder of the writers' unsealed tails (durable before an append is acknowledged). */
  tailDir: string;
  leaseMs?: number;
  freshMs?: number;
  segmentBytes?: number;
  maxSegmentBytes?: number;
  sealAgeMs?: number;
  inlineBytes?: number;
  wholeIndexBytes?: number;
  blockBytes?: number;
  cacheBytes?: number;
  /** Chunk size of the check tables of the segments and tail objects this writer makes. */
  checkBytes?: number;
  /** Frame index records per entry of the manifests' sparse index (sparse-index.ts). */
  sparseEvery?: number;
  /** Told when a read finds a segment or tail object damaged (default: a line on stderr). */
  onDamage?: (object: string, why: string) => void;
  /** Whether a process id is alive (default: signal 0); tests stand a crashed writer in with it. */
  pidAlive?: (pid: number) => boolean;
  /** When a process started (default: /proc, pid-lease.ts `processStart`; null: unknown); tests stand a reused pid in with it. */
  pidStart?: (pid: number) => string | null;
}

export const S3_DEFAULTS = {
  leaseMs: 30_000,
  freshMs: 100,
  segmentBytes: 8 * 1024 * 1024,
  maxSegmentBytes: 64 * 1024 * 1024,
  sealAgeMs: 60_000,
  inlineBytes: 8 * 1024,
  wholeIndexBytes: 4 * 1024 * 1024,
};


/** `{start}` of process `pid` when it can be told. */
function startOf(pid: number, start: (pid: number) => string | null): { start?: string } {
  const s = start(pid);
  return s === null ? {} : { start: s };
}

class S3Writable implements WritableFile {
  private closed = false;
  constructor(
    private readonly vol: SessionVolume,
    private readonly member: MemberName,
    private end: number,
  ) {}

  get size(): number {
    return this.end;
  }

  private check(): void {
    if (this.closed) throw new StorageError('EIO', `${this.member} of session ${this.vol.id} is closed`);
  }

  async write(data: Uint8Array, pos: number): Promise<void> {
    this.check();
    await this.vol.write(this.member, data, pos);
    this.end = Math.max(this.end, pos + data.length);
  }

  async read(pos: number, len: number): Promise<Buffer> {
    return (await this.vol.read(this.member, pos, pos + len)) ?? Buffer.alloc(0);
  }

  async sync(): Promise<void> {
    this.check();
    await this.vol.sync(this.member);
  }

  async truncate(len: number): Promise<void> {
    this.check();
    await this.vol.truncate(this.member, len);
    this.end = len;
  }

  async stat(): Promise<ObjectStat> {
    const s = await this.vol.stat(this.member);
    if (s === null) throw new StorageError('ENOENT', `no such object: ${this.member} of session ${this.vol.id}`);
    return s;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A plain write (no metadata replace after it) reaches readers here at the latest.
    if (this.vol.owned) await this.vol.publish().catch(() => undefined);
  }
}

export class S3Backend implements StorageBackend {
  readonly kind = 's3';
  readonly workerSource = null;
  readonly cache: BlockCache;
  /** Verifies every ranged read of a segment or tail object (checked-reads.ts); `damaged` counts the chunks that failed. */
  readonly checked: CheckedReads;
  private readonly volumes = new Map<string, SessionVolume>();
  private readonly cfg: Omit<VolumeConfig, 'folder'>;
  private closed = false;

  constructor(private readonly opts: S3BackendOptions) {
    const onDamage = opts.onDamage ?? ((object: string, why: string) => process.stderr.write(`session-pager: ${object} is damaged on the store (${why}); its bytes are not served\n`));
    this.checked = new CheckedReads(opts.objects, undefined, onDamage);
    this.cache = new BlockCache((name, start, end, check) => this.checked.get(name, start, end, check), opts.blockBytes ?? DEFAULT_BLOCK_BYTES, opts.cacheBytes ?? DEFAULT_CACHE_BYTES);
    const local = new LocalBackend(opts.tailDir);
    this.cfg = {
      objects: opts.objects,
      cache: this.cache,
      local,
      me: { id: randomUUID(), host: hostname(), pid: process.pid, ...startOf(process.pid, opts.pidStart ?? processStart), tail: local.root as string },
      leaseMs: opts.leaseMs ?? S3_DEFAULTS.leaseMs,
      freshMs: opts.freshMs ?? S3_DEFAULTS.freshMs,
      segmentBytes: opts.segmentBytes ?? S3_DEFAULTS.segmentBytes,
      maxSegmentBytes: opts.maxSegmentBytes ?? S3_DEFAULTS.maxSegmentBytes,
      sealAgeMs: opts.sealAgeMs ?? S3_DEFAULTS.sealAgeMs,
      inlineBytes: opts.inlineBytes ?? S3_DEFAULTS.inlineBytes,
      wholeIndexBytes: opts.wholeIndexBytes ?? S3_DEFAULTS.wholeIndexBytes,
      checkBytes: opts.checkBytes ?? DEFAULT_CHECK_BYTES,
      strictFetch: (name, start, end, check) => this.checked.get(name, start, end, check, true),
      sparseEvery: opts.sparseEvery ?? DEFAULT_SPARSE_EVERY,
      runs: (w) => {
        if (!(opts.pidAlive ?? processAlive)(w.pid)) return false;
        if (w.start === undefined) return true;
        const now = (opts.pidStart ?? processStart)(w.pid);
        return now === null || now === w.start;
      },
    };
  }

  get location(): S3Location {
    return this.opts.location;
  }

  private volume(id: string): SessionVolume {
    let v = this.volumes.get(id);
    if (v === undefined) {
      v = new SessionVolume(id, { ...this.cfg, folder: underPrefix(this.opts.location, sessionFolder(id)) });
      this.volumes.set(id, v);
    }
    return v;
  }

  private member(key: string): { vol: SessionVolume; member: MemberName } {
    const r = roleOfKey(key);
    if (r === null || 'lock' in r) throw new StorageError('EIO', `not a session object's key: ${key}`);
    return { vol: this.volume(r.id), member: r.member };
  }

  /**
   * A backup of a session's log (repair's, before it cuts the log) is no
   * member: one plain, immutable object `sessions/<id>/backup/<stamp>.events`
   * (docs/s3-layout.md). Null: `key` is no backup's.
   */
  private backupName(key: string): string | null {
    const b = parseBackupKey(key);
    return b === null ? null : underPrefix(this.opts.location, `${sessionFolder(b.id)}backup/${b.stamp}.events`);
  }

  private async backupBytes(name: string): Promise<Buffer | null> {
    try {
      return await this.opts.objects.getAll(name);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'ENOENT') return null;
      throw err;
    }
  }

  /** Writes make this process the session's writer (its lease from `lease()`, or unleased). */
  private async writer(key: string): Promise<{ vol: SessionVolume; member: MemberName }> {
    if (this.closed) throw new StorageError('EIO', 'S3 backend is closed');
    const m = this.member(key);
    await m.vol.claim(`session ${m.vol.id}`, false);
    return m;
  }

  async stat(key: string): Promise<ObjectStat | null> {
    const bak = this.backupName(key);
    if (bak !== null) {
      const b = await this.backupBytes(bak);
      return b === null ? null : { size: b.length, mtimeMs: 0, version: `${bak}:${b.length}`, incarnation: bak };
    }
    const { vol, member } = this.member(key);
    return vol.stat(member);
  }

  async openReader(key: string, size?: number): Promise<RandomReader> {
    const bak = this.backupName(key);
    if (bak !== null) {
      const b = await this.backupBytes(bak);
      if (b === null) throw new StorageError('ENOENT', `no such object: ${key}`);
      const limit = Math.min(size ?? b.length, b.length);
      return { size: limit, read: async (pos: number, len: number) => b.subarray(Math.min(pos, limit), Math.min(pos + len, limit)), close: async () => undefined };
    }
    const { vol, member } = this.member(key);
    // Opened for reads: by the manifest at hand (a page opens its index after its view's stat looked), no look.
    const s = await vol.statAtHand(member);
    if (s === null) throw new StorageError('ENOENT', `no such object: ${key}`);
    const limit = size ?? s.size;
    return {
      size: limit,
      read: async (pos: number, len: number) => (await vol.read(member, pos, Math.min(pos + len, limit))) ?? Buffer.alloc(0),
      close: async () => undefined,
    };
  }

  async read(key: string, start: number, end: number): Promise<Buffer | null> {
    const bak = this.backupName(key);
    if (bak !== null) return (await this.backupBytes(bak))?.subarray(start, end) ?? null;
    const { vol, member } = this.member(key);
    return vol.read(member, start, end);
  }

  async readAll(key: string): Promise<Buffer | null> {
    const bak = this.backupName(key);
    if (bak !== null) return this.backupBytes(bak);
    const { vol, member } = this.member(key);
    const s = await vol.stat(member);
    return s === null ? null : vol.read(member, 0, s.size);
  }

  /** The sessions with a folder on the store, and those this process writes. */
  private async sessionIds(): Promise<string[]> {
    const root = underPrefix(this.opts.location, `${SESSIONS}/`);
    const listed = await this.opts.objects.list(root, { delimiter: '/' });
    const ids = new Set(listed.folders.map((f) => f.slice(root.length, -1)).filter(isValidSessionId));
    for (const [id, v] of this.volumes) if (v.owned) ids.add(id);
    return [...ids];
  }

  async list(prefix: string): Promise<string[]> {
    const folder = prefix.replace(/\/+$/, '');
    let ids: string[];
    if (folder === SESSIONS || folder === INDEX) ids = await this.sessionIds();
    else if (folder.startsWith(`${INDEX}/`) && isValidSessionId(folder.slice(INDEX.length + 1))) ids = [folder.slice(INDEX.length + 1)];
    else return [];
    const out = new Set<string>();
    // The catalog's cost: one manifest look per session, 16 at a time.
    for (let i = 0; i < ids.length; i += 16) {
      const batch = ids.slice(i, i + 16);
      const members = await Promise.all(batch.map((id) => this.volume(id).members()));
      batch.forEach((id, j) => {
        for (const m of members[j] as MemberName[]) {
          const n = listedName(folder, id, m);
          if (n !== null) out.add(n);
        }
      });
    }
    return [...out];
  }

  async openWritable(key: string, mode: WriteMode): Promise<WritableFile> {
    const { vol, member } = this.member(key);
    if (mode === 'existing' && (await vol.stat(member)) === null) throw new StorageError('ENOENT', `no such object: ${key}`);
    await this.writer(key);
    const exists = (await vol.stat(member)) !== null;
    if (mode === 'create' && exists) throw new StorageError('EEXIST', `object exists: ${key}`);
    const o = await vol.open(member, mode !== 'existing', mode === 'truncate');
    if (o === null) throw new StorageError('ENOENT', `no such object: ${key}`);
    return new S3Writable(vol, member, o.size);
  }

  async createExclusive(key: string, data: Uint8Array): Promise<void> {
    const bak = this.backupName(key);
    if (bak !== null) return this.opts.objects.put(bak, data, { ifAbsent: true });
    const { vol, member } = await this.writer(key);
    await vol.replace(member, data, true);
  }

  async replace(key: string, data: Uint8Array): Promise<void> {
    const bak = this.backupName(key);
    if (bak !== null) return this.opts.objects.put(bak, data);
    const { vol, member } = await this.writer(key);
    await vol.replace(member, data, false);
  }

  async remove(key: string): Promise<void> {
    const bak = this.backupName(key);
    if (bak !== null) return this.opts.objects.remove([bak]);
    const { vol, member } = this.member(key);
    if ((await vol.stat(member)) === null) return;
    await this.writer(key);
    await vol.remove([member]);
  }

  async removeAll(prefix: string): Promise<void> {
    const folder = prefix.replace(/\/+$/, '');
    if (!folder.startsWith(`${INDEX}/`) || !isValidSessionId(folder.slice(INDEX.length + 1))) throw new StorageError('EIO', `removeAll of ${prefix}: only a session's projections folder`);
    const vol = this.volume(folder.slice(INDEX.length + 1));
    const names = (await vol.members()).filter((m) => m.startsWith('p/'));
    if (names.length === 0) return;
    await vol.claim(`session ${vol.id}`, false);
    await vol.remove(names);
  }

  async ensureFolder(): Promise<void> {
    // No folders on an object store.
  }

  async lease(key: string, what: string): Promise<Lease> {
    const r = roleOfKey(key);
    if (r === null || !('lock' in r)) throw new StorageError('EIO', `not a session lease's key: ${key}`);
    if (this.closed) throw new PagerError('session_busy', `${what}: the store is closing`);
    const vol = this.volume(r.id);
    await vol.claim(what, true);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        vol.unlease();
        // A clean shutdown of the writer: seal, publish, give the session back.
        await vol.release();
      },
    };
  }

  /**
   * Drop the cached state of `key`'s session so the next look sees the
   * store as it is now. `at` (`m<n>`, another process's changeMark): GET
   * manifest n directly, without the LIST.
   */
  async refresh(key: string, at?: string): Promise<void> {
    const r = roleOfKey(key);
    if (r === null) return;
    const n = at === undefined ? null : /^m(\d{1,15})$/.exec(at);
    if (n !== null && n !== undefined) await this.volume(r.id).latestAt(Number(n[1]));
    else await this.volume(r.id).latest(true);
  }

  /**
   * A page of session `id` is about to be served: fetch ahead, in parallel
   * with the page's first reads, the frame index records planning it will
   * read (the manifest's sparse index says which), and say where the record
   * of its last seq lies (session-volume.ts `pageHint`).
   */
  async pageHint(id: string, ask: PageAsk): Promise<PageHint | null> {
    if (!isValidSessionId(id)) return null;
    return this.volume(id).pageHint(ask);
  }

  /** `m<n>`: the manifest this process's writer of `key`'s session made last (its last acknowledged change is in it). */
  changeMark(key: string): string | undefined {
    const r = roleOfKey(key);
    const n = r === null ? null : (this.volumes.get(r.id)?.ownedManifest ?? null);
    return n === null ? undefined : `m${n}`;
  }

  /**
   * Delete the orphaned segments and tail objects of session `id` (uploaded
   * by writers of earlier epochs than the latest manifest's, named by no
   * stored manifest: session-volume.ts `collectOrphans`). A writer does this
   * on every take-over by itself (`orphanSweep`); this is the same step for
   * maintenance. Returns the names deleted.
   */
  async collectOrphans(id: string): Promise<string[]> {
    if (!isValidSessionId(id)) throw new StorageError('EIO', `not a session id: ${id}`);
    const vol = this.volume(id);
    const m = await vol.latest(true);
    return m === null ? [] : vol.collectOrphans(m.epoch);
  }

  /**
   * Sessions a crashed writer of this host left a local tail of in this
   * tail folder (its `<id>/epoch` file) while the latest manifest still
   * names that dead writer with that epoch: opening their writer (the
   * store does at start-up) recovers the tail and publishes it, so readers
   * see a durable-but-unacknowledged append without waiting for the next.
   */
  recoverable(): Promise<string[]> {
    // What this process's predecessor left: looked for once (a later store on this backend finds its writers open).
    if (this.recovering !== null) return Promise.resolve([]);
    this.recovering = this.findRecoverable();
    return this.recovering;
  }

  private recovering: Promise<string[]> | null = null;

  private async findRecoverable(): Promise<string[]> {
    // The tail folder's session folders (through its LocalBackend: no file system here).
    const ids = (await this.cfg.local.list('').catch(() => [] as string[])).filter(isValidSessionId);
    const out: string[] = [];
    for (const id of ids) {
      if (this.volumes.get(id)?.owned === true) continue;
      const epoch = Number((await this.cfg.local.readAll(`${id}/epoch`))?.toString() ?? 'NaN');
      if (!Number.isSafeInteger(epoch)) continue;
      const m = await this.volume(id)
        .latest(true)
        .catch(() => null);
      const w = m?.writer;
      if (m == null || w == null || m.epoch !== epoch || w.id === this.cfg.me.id) continue;
      if (w.host === this.cfg.me.host && w.tail === this.cfg.me.tail && !this.cfg.runs(w)) out.push(id);
    }
    return out;
  }

  /** The orphan collection this process's writer of `id` began at its take-over (null: none). */
  orphanSweep(id: string): Promise<string[]> | null {
    return this.volumes.get(id)?.orphanSweep ?? null;
  }

  /** Seal and give back every session this process writes (a clean shutdown). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.volumes.values()].map((v) => v.release().catch(() => undefined)));
    this.cache.clear();
  }
}
