/**
 * The local backend: a session store in a data directory of the local file
 * system (SPEC section 3 as it stands), today's behaviour and speed.
 *
 * Reads, stats and writes are synchronous positional calls on purpose: they
 * are small (a sidecar line, a 64 KiB block, a frame batch) and normally
 * served by the page cache in microseconds, while an async call costs a
 * libuv thread-pool round trip (~70 µs measured here; a binary search makes
 * ~20 reads a page). Only what waits for the disk (fsync) goes to the pool.
 */
import { closeSync, constants as fsConstants, fdatasync, fstatSync, ftruncateSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, realpathSync, renameSync, rmSync, statSync, writeSync, fsync, type Stats } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import type { Lease, ObjectStat, RandomReader, Replacement, StorageBackend, WorkerSource, WritableFile, WriteMode } from '../backend.js';
import { SESSIONS } from '../layout.js';
import { takePidLease } from './pid-lease.js';

const fdatasyncP = promisify(fdatasync);
const fsyncP = promisify(fsync);

/**
 * The last Stats the read paths got, kept alive on purpose. V8 holds the
 * hidden classes a Stats object goes through as its constructor fills it in
 * (one per field) only weakly; when no Stats object is alive at a full
 * collection they die, and every optimized function that embeds them (Node's
 * Stats constructor, statSync, fstatSync, our stat and stamp...) is thrown
 * away ("reason: weak objects" in --trace-deopt) and compiled again: under
 * load, after every full collection. One live Stats keeps them. The last
 * one rather than one made at start-up: it has the classes in use now, even
 * if a field's representation changed since.
 */
const statsShape: { last?: Stats } = {};

/** `s`, kept as statsShape.last. */
function kept(s: Stats): Stats {
  statsShape.last = s;
  return s;
}

function objectStat(s: Stats): ObjectStat {
  // Inode and birth time: a file made anew (even at a reused inode) is another incarnation.
  return { size: s.size, mtimeMs: s.mtimeMs, version: `${s.size}:${s.mtimeMs}:${s.ino}`, incarnation: `${s.ino}:${s.birthtimeMs}` };
}

/** Bytes [pos, pos + len) of an open file, fewer at its end. */
export function readAt(fd: number, pos: number, len: number): Buffer {
  const buf = Buffer.allocUnsafe(Math.max(0, len));
  const got = readIntoAt(fd, pos, buf);
  return got === buf.length ? buf : buf.subarray(0, got);
}

/** Bytes [pos, pos + dest.length) of an open file written into `dest`, fewer at its end: how many. */
export function readIntoAt(fd: number, pos: number, dest: Uint8Array): number {
  let got = 0;
  while (got < dest.length) {
    const n = readSync(fd, dest, got, dest.length - got, pos + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/** Write all of `buf` at `position` of `fd` (writeSync may write less than asked). */
export function writeAllAt(fd: number, buf: Uint8Array, position: number): void {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, position + done);
}

/** A new file holding `data`, synced to disk before it is given a name readers see. */
async function writeSyncedFile(path: string, data: Uint8Array, flags: 'w' | 'wx'): Promise<void> {
  const fd = openSync(path, flags);
  try {
    writeAllAt(fd, data, 0);
    await fsyncP(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync a folder, so a name created or renamed in it is durable. */
export async function syncFolder(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await fsyncP(fd);
  } finally {
    closeSync(fd);
  }
}

class LocalReader implements RandomReader {
  constructor(
    private readonly fd: number,
    readonly size: number,
    /** The file's change time when opened (null: opened with a trusted size, no fstat; unchanged() cannot tell). */
    private readonly ctimeMs: number | null,
  ) {}

  async read(pos: number, len: number): Promise<Buffer> {
    return readAt(this.fd, pos, Math.min(len, this.size - pos));
  }

  async readInto(pos: number, dest: Uint8Array): Promise<number> {
    return readIntoAt(this.fd, pos, dest.subarray(0, Math.max(0, Math.min(dest.length, this.size - pos))));
  }

  async close(): Promise<void> {
    closeSync(this.fd);
  }

  /**
   * The file as opened: still linked (a removed file, or one a rename
   * replaced, has no name left), same size, and its change time unmoved
   * (a write, a truncate, or a link added or dropped, moves it: so does a
   * rename over one of two hard links).
   */
  async unchanged(): Promise<boolean> {
    if (this.ctimeMs === null) return false;
    const s = kept(fstatSync(this.fd));
    return s.nlink > 0 && s.size === this.size && s.ctimeMs === this.ctimeMs;
  }
}

class LocalWritable implements WritableFile {
  private end: number;
  /** A new file's name is made durable with its first sync. */
  private nameDirty: boolean;

  constructor(
    private readonly fd: number,
    private readonly path: string,
    created: boolean,
  ) {
    this.end = fstatSync(fd).size;
    this.nameDirty = created;
  }

  get size(): number {
    return this.end;
  }

  async write(data: Uint8Array, pos: number): Promise<void> {
    writeAllAt(this.fd, data, pos);
    if (pos + data.length > this.end) this.end = pos + data.length;
  }

  async read(pos: number, len: number): Promise<Buffer> {
    return readAt(this.fd, pos, len);
  }

  async sync(): Promise<void> {
    // Data and the file's size: what an append needs to be durable.
    await fdatasyncP(this.fd);
    if (this.nameDirty) {
      await syncFolder(dirname(this.path));
      this.nameDirty = false;
    }
  }

  async truncate(len: number): Promise<void> {
    ftruncateSync(this.fd, len);
    this.end = len;
  }

  async stat(): Promise<ObjectStat> {
    return objectStat(fstatSync(this.fd));
  }

  async close(): Promise<void> {
    closeSync(this.fd);
  }
}

/**
 * A new version of a file written under a temp name beside it
 * (`.<name>.<pid>.<time>.tmp`: a dot first, so nothing lists it), fsynced,
 * then renamed over it, or for an exclusive one hard-linked into place
 * (link() fails when the name exists), and the folder fsynced.
 */
class LocalReplacement implements Replacement {
  private fd: number | null;
  size = 0;

  constructor(
    private readonly path: string,
    private readonly tmp: string,
    private readonly exclusive: boolean,
  ) {
    this.fd = openSync(tmp, 'wx');
  }

  private open(): number {
    if (this.fd === null) throw new Error(`replacement of ${this.path} is finished`);
    return this.fd;
  }

  async write(data: Uint8Array): Promise<void> {
    writeAllAt(this.open(), data, this.size);
    this.size += data.length;
  }

  async commit(): Promise<void> {
    const fd = this.open();
    try {
      await fsyncP(fd);
      closeSync(fd);
      this.fd = null;
      if (this.exclusive) linkSync(this.tmp, this.path);
      else renameSync(this.tmp, this.path);
    } finally {
      await this.abort();
    }
    await syncFolder(dirname(this.path));
  }

  async abort(): Promise<void> {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    rmSync(this.tmp, { force: true });
  }
}

let replacements = 0;

const CREATE_SUFFIX = '.creating';

/** Whether `n` is the temp name of a create of `name` (see createExclusive). */
function isCreateTemp(n: string, name: string): boolean {
  const prefix = `.${name}.`;
  return n.startsWith(prefix) && n.endsWith(CREATE_SUFFIX) && /^\d+\.\d+$/.test(n.slice(prefix.length, -CREATE_SUFFIX.length));
}

/**
 * Files opened to be written never through a symbolic link (O_NOFOLLOW: ELOOP), nor in a folder
 * under the data directory that is one (writablePath): a link planted in sessions/ (a log, an
 * entry sidecar, a projection's folder) pointing outside the data directory had appends, and
 * repair's cuts, written into the file it named (found by hand: a session whose log was a link
 * was adopted by repair, then appended through). The data directory itself may be a link, and so
 * may its `sessions/` folder (see sessionsFolderAt).
 */
const { O_CREAT, O_EXCL, O_NOFOLLOW, O_RDWR, O_TRUNC } = fsConstants;
const FLAGS: Record<WriteMode, number> = {
  create: O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW,
  truncate: O_CREAT | O_TRUNC | O_RDWR | O_NOFOLLOW,
  existing: O_RDWR | O_NOFOLLOW,
  'existing-or-create': O_RDWR | O_NOFOLLOW,
};

/**
 * The folder `sessions/` of a data directory names, when it is a symbolic link to a folder: the
 * link's target, resolved now (null when it is not a link, or not one to a folder). Operators put
 * `sessions/` on another disk with a link; the store follows it once, when it opens, and the
 * target is then the root of every key under `sessions/`, held below it to the same rules as the
 * data directory (no write through a link inside it). A link made, moved or dropped later is not
 * followed by a store already open (docs/decisions.md, "A linked sessions/ folder").
 */
function sessionsFolderAt(root: string): string | null {
  const at = join(root, SESSIONS);
  if (lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink() !== true) return null;
  try {
    const real = realpathSync(at);
    return statSync(real).isDirectory() ? real : null;
  } catch {
    // Dangling (the other disk not mounted) or a loop: not followed; writes refuse it (ELOOP).
    return null;
  }
}

/** Keys whose paths and last stats a backend keeps at most (LocalBackend.path, LocalBackend.stat). */
const PATHS_KEPT = 4096;

/** A key's last stat: the numbers objectStat's strings are made of, and those strings. */
interface StatSeen {
  size: number;
  mtimeMs: number;
  ino: number;
  birthtimeMs: number;
  version: string;
  incarnation: string;
}

export class LocalBackend implements StorageBackend {
  readonly kind = 'local';
  readonly workerSource: WorkerSource | null;
  /** The data directory; null: keys are paths themselves (absolute, or relative to the working directory). */
  readonly root: string | null;
  /** Where keys under `sessions/` live when that folder was a link at open (sessionsFolderAt); else null. */
  readonly sessionsRoot: string | null;

  constructor(root?: string) {
    this.root = root === undefined ? null : resolve(root);
    this.sessionsRoot = this.root === null ? null : sessionsFolderAt(this.root);
    // Workers open the log as `<logs>/<id>.events` (log-range.ts), `logs` the folder this backend
    // reads the logs from itself: a sessions/ link moved while the store is open does not send
    // the workers to another folder than the main thread's (test/data-dir-links.test.ts).
    this.workerSource = this.root === null ? null : { scheme: 'file', logs: this.path(SESSIONS) };
  }

  /**
   * Each key's file, made once: a page request stats its session's three files by key, and
   * `join`'s normalization of the same strings was ~0.5-1% of the main thread's CPU at 16
   * connections. Bounded (keys name sessions, which come from clients): cleared when full.
   */
  private readonly paths = new Map<string, string>();

  /** The file behind a key. */
  path(key: string): string {
    let p = this.paths.get(key);
    if (p === undefined) {
      if (this.paths.size >= PATHS_KEPT) this.paths.clear();
      p = this.pathOf(key);
      this.paths.set(key, p);
    }
    return p;
  }

  private pathOf(key: string): string {
    if (this.root === null) return key;
    if (this.sessionsRoot !== null && key.startsWith(SESSIONS) && (key.length === SESSIONS.length || key[SESSIONS.length] === '/')) {
      return join(this.sessionsRoot, key.slice(SESSIONS.length));
    }
    return join(this.root, key);
  }

  /**
   * Each key's last stat as numbers and the strings made of them. A page request stats its
   * session's three files, and their version and incarnation strings (five numbers each, two of
   * them fractional, to text and joined) were made anew every time: while a file's numbers are
   * the same its strings are the ones made before (the same string objects, so the session's
   * stamp of them is too: session-views.ts). The stat itself is taken on every call. Bounded as
   * `paths`.
   */
  private readonly statsSeen = new Map<string, StatSeen>();

  async stat(key: string): Promise<ObjectStat | null> {
    const s = statSync(this.path(key), { throwIfNoEntry: false });
    if (s === undefined) return null;
    kept(s);
    const seen = this.statsSeen.get(key);
    if (seen !== undefined && seen.size === s.size && seen.mtimeMs === s.mtimeMs && seen.ino === s.ino && seen.birthtimeMs === s.birthtimeMs) {
      return { size: s.size, mtimeMs: s.mtimeMs, version: seen.version, incarnation: seen.incarnation };
    }
    const o = objectStat(s);
    if (this.statsSeen.size >= PATHS_KEPT) this.statsSeen.clear();
    this.statsSeen.set(key, { size: s.size, mtimeMs: s.mtimeMs, ino: s.ino, birthtimeMs: s.birthtimeMs, version: o.version, incarnation: o.incarnation });
    return o;
  }

  async openReader(key: string, size?: number): Promise<RandomReader> {
    const fd = openSync(this.path(key), 'r');
    try {
      if (size !== undefined) return new LocalReader(fd, size, null);
      const s = kept(fstatSync(fd));
      return new LocalReader(fd, s.size, s.ctimeMs);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  async read(key: string, start: number, end: number): Promise<Buffer | null> {
    let fd: number;
    try {
      fd = openSync(this.path(key), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    try {
      return readAt(fd, start, end - start);
    } finally {
      closeSync(fd);
    }
  }

  async readAll(key: string): Promise<Buffer | null> {
    try {
      return readFileSync(this.path(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async list(prefix: string): Promise<string[]> {
    try {
      return readdirSync(this.path(prefix));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
      throw err;
    }
  }

  async openWritable(key: string, mode: WriteMode): Promise<WritableFile> {
    const path = this.path(key);
    if (mode !== 'existing') mkdirSync(dirname(path), { recursive: true });
    this.refuseLinkedFolders(path);
    if (mode === 'existing-or-create') {
      // Not 'a+': on Linux positional writes to a file opened for appending go to its end.
      try {
        return new LocalWritable(openSync(path, FLAGS.existing), path, false);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      try {
        return new LocalWritable(openSync(path, FLAGS.create), path, true);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        return new LocalWritable(openSync(path, FLAGS.existing), path, false);
      }
    }
    return new LocalWritable(openSync(path, FLAGS[mode]), path, mode !== 'existing');
  }

  /**
   * ELOOP when a folder between the data directory (or, for a key under `sessions/`, the folder
   * that link named at open) and `path` is a symbolic link (see FLAGS).
   */
  private refuseLinkedFolders(path: string): void {
    if (this.root === null) return;
    let base = this.root;
    if (this.sessionsRoot !== null) {
      const inSessions = relative(this.sessionsRoot, dirname(path));
      if (!inSessions.startsWith('..') && !isAbsolute(inSessions)) base = this.sessionsRoot;
    }
    const rel = relative(base, dirname(path));
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return;
    let dir = base;
    for (const part of rel.split(sep)) {
      dir = join(dir, part);
      if (lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink() === true) {
        throw Object.assign(new Error(`ELOOP: a folder of the data directory is a symbolic link, not written through`), { code: 'ELOOP' });
      }
    }
  }

  /**
   * Written and fsynced under a temp name beside it (`.<name>.<pid>.<time>.creating`:
   * a dot first, no `.events` at the end, so nothing lists it), then hard-linked
   * into place: link() fails when the name exists, and the object appears whole.
   */
  async createExclusive(key: string, data: Uint8Array): Promise<void> {
    const path = this.path(key);
    const dir = dirname(path);
    mkdirSync(dir, { recursive: true });
    this.refuseLinkedFolders(path);
    const name = basename(path);
    // Temp files of crashed creates of this key: no one else creates it meanwhile (the caller's lease).
    for (const n of readdirSync(dir)) if (isCreateTemp(n, name)) rmSync(join(dir, n), { force: true });
    const tmp = join(dir, `.${name}.${process.pid}.${Date.now()}${CREATE_SUFFIX}`);
    try {
      await writeSyncedFile(tmp, data, 'wx');
      linkSync(tmp, path);
    } finally {
      rmSync(tmp, { force: true });
    }
    await syncFolder(dir);
  }

  async replace(key: string, data: Uint8Array): Promise<void> {
    const path = this.path(key);
    const dir = dirname(path);
    mkdirSync(dir, { recursive: true });
    this.refuseLinkedFolders(path);
    const tmp = join(dir, `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
    try {
      await writeSyncedFile(tmp, data, 'w');
      renameSync(tmp, path);
    } catch (err) {
      // A write that failed (a full disk: ENOSPC, EDQUOT, EFBIG) left the temp file with part of
      // the data: one more for every failed metadata write, holding the space it took, as no one
      // lists or removes these names.
      rmSync(tmp, { force: true });
      throw err;
    }
    await syncFolder(dir);
  }

  async openReplacement(key: string, exclusive: boolean): Promise<Replacement> {
    const path = this.path(key);
    const dir = dirname(path);
    mkdirSync(dir, { recursive: true });
    this.refuseLinkedFolders(path);
    return new LocalReplacement(path, join(dir, `.${basename(path)}.${process.pid}.${Date.now()}-${++replacements}.tmp`), exclusive);
  }

  async remove(key: string): Promise<void> {
    // (rm removes a link itself, never what it names; a linked folder on the way is refused.)
    this.refuseLinkedFolders(this.path(key));
    rmSync(this.path(key), { force: true });
  }

  async removeAll(prefix: string): Promise<void> {
    this.refuseLinkedFolders(this.path(prefix));
    rmSync(this.path(prefix), { recursive: true, force: true });
  }

  async ensureFolder(prefix: string): Promise<void> {
    mkdirSync(this.path(prefix), { recursive: true });
  }

  async lease(key: string, what: string): Promise<Lease> {
    mkdirSync(dirname(this.path(key)), { recursive: true });
    return takePidLease(this.path(key), what);
  }
}

/** Files named by their paths (absolute, or relative to the working directory): for callers that hold paths, not a data directory. */
export const localFiles = new LocalBackend();

/** Where a store's sessions are: a backend, or (a string) the local data directory of one. */
export type StorageTarget = StorageBackend | string;

export function storageAt(target: StorageTarget): StorageBackend {
  return typeof target === 'string' ? new LocalBackend(target) : target;
}
