/**
 * The storage seam: the one interface through which every read and write of
 * a session's log, sidecars and projections goes (in the spirit of LevelDB's
 * `Env` and abstract-level's backends). The layers above name objects by key
 * (`storage/layout.ts`: `sessions/<id>.events`, ...) and never see a file
 * system; a backend maps keys to files (`local/`), to memory (`memory/`) or,
 * later, to objects of a network store.
 *
 * Every operation returns a promise, so a backend whose reads are network
 * round trips fits; a backend whose operations are cheap and synchronous
 * (the local one: page-cache reads cost less than a thread-pool hop) simply
 * resolves at once. Every backend passes the same compliance suite
 * (test/storage-compliance.test.ts), from raw operations up to pages equal
 * to the reference reader's.
 */

/** What a stat says of an object. `version` changes whenever its content may have (local: size, mtime and inode; a network store: its ETag). */
export interface ObjectStat {
  size: number;
  mtimeMs: number;
  version: string;
  /** Changes only when the object is made anew (deleted and created again, restored), never when it is written (local: inode and birth time). */
  incarnation: string;
}

/** Errors a backend raises carry these codes (the local backend's are the system's own). */
export type StorageErrorCode = 'ENOENT' | 'EEXIST' | 'EIO';

export class StorageError extends Error {
  constructor(
    readonly code: StorageErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'StorageError';
  }
}

/** Whether `err` says the object (or its folder) does not exist. */
export function isNotFound(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'ENOENT';
}

/** Whether `err` says the object exists already (an exclusive create). */
export function isExists(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'EEXIST';
}

/** Positional reads of one object, opened once (LevelDB's RandomAccessFile). */
export interface RandomReader {
  /** The object's size when it was opened. */
  readonly size: number;
  /** Bytes [pos, pos + len), fewer at the object's end. */
  read(pos: number, len: number): Promise<Buffer>;
  /** Bytes [pos, pos + dest.length) written into `dest`, fewer at the object's end: how many (optional: streams/positional-reader.ts). */
  readInto?(pos: number, dest: Uint8Array): Promise<number>;
  close(): Promise<void>;
  /**
   * Whether the key still names the object this reader opened, as it was:
   * not removed, replaced, written or resized since. A reader that can say
   * so cheaply (local: one fstat) may be kept open between pages
   * (store/kept-readers.ts); absent: it is opened for each use.
   */
  unchanged?(): Promise<boolean>;
}

/**
 * How an object is opened for writing:
 * - `create`: a new object; fails with EEXIST when it exists;
 * - `truncate`: a new or emptied object;
 * - `existing`: as it is; fails with ENOENT when missing;
 * - `existing-or-create`: as it is, created empty when missing.
 */
export type WriteMode = 'create' | 'truncate' | 'existing' | 'existing-or-create';

/** An object opened for positional writes (the log, the entry sidecar, the projections). */
export interface WritableFile {
  /** Its size now (after the writes made through this handle). */
  readonly size: number;
  /** Write all of `data` at `pos`. Not durable until `sync()`. */
  write(data: Uint8Array, pos: number): Promise<void>;
  /** Bytes [pos, pos + len) as they are now, fewer at the end. */
  read(pos: number, len: number): Promise<Buffer>;
  /** Make every write so far durable (fsync; for a new object, its name too). */
  sync(): Promise<void>;
  truncate(len: number): Promise<void>;
  stat(): Promise<ObjectStat>;
  close(): Promise<void>;
}

/**
 * A new version of one object, written in order and put in place whole by
 * `commit()` (a rebuilt sidecar, an imported log, a backup: objects too
 * large to hold in memory). Until then nothing of it is visible.
 */
export interface Replacement {
  /** Bytes written so far. */
  readonly size: number;
  /** Append `data` (not durable until commit). */
  write(data: Uint8Array): Promise<void>;
  /**
   * Put it in place, durably: readers see the old object (or none) or all of
   * this one, never part. Exclusive (openReplacement's flag): fails with
   * EEXIST, replacing nothing, when the object exists by then.
   */
  commit(): Promise<void>;
  /** Drop it; the object is left as it was. */
  abort(): Promise<void>;
}

/** An exclusive hold on a name (one writer per session, across processes). */
export interface Lease {
  release(): Promise<void>;
}

/**
 * How a page worker reaches a log's bytes without being handed them:
 * `{scheme, logs}` names a reader every worker can open by itself (the
 * local backend: positional reads of `<logs>/<id>.events`, `logs` the
 * folder of the logs as the backend resolved it when it opened, so that a
 * worker reads the very file the main thread does). A backend without one
 * (memory) reads a slice's bytes on the calling thread and hands them to
 * the worker.
 */
export interface WorkerSource {
  scheme: 'file';
  /** The folder holding the logs (`sessions/` of the data directory, or where its link pointed at open). */
  logs: string;
}

/** Writes (openWritable, replace, lease) create the folders of their key as needed. */
export interface StorageBackend {
  /** Short name for messages and metrics ('local', 'memory', 's3'). */
  readonly kind: string;
  /** Where workers read slices themselves, or null: slices are read here and handed over. */
  readonly workerSource: WorkerSource | null;

  /** Stat of an object; null when it does not exist. */
  stat(key: string): Promise<ObjectStat | null>;
  /** Open for positional reads; ENOENT when missing. `size`: the caller's trusted size (no stat). */
  openReader(key: string, size?: number): Promise<RandomReader>;
  /** One ranged read: bytes [start, end), fewer at the end; null when the object does not exist. */
  read(key: string, start: number, end: number): Promise<Buffer | null>;
  /** The whole object; null when it does not exist (small objects only: metadata, lock). */
  readAll(key: string): Promise<Buffer | null>;
  /** Names (the last key segment) of the objects directly under folder `prefix`; empty when none. */
  list(prefix: string): Promise<string[]>;
  /** Open for positional writes (creating folders as needed). */
  openWritable(key: string, mode: WriteMode): Promise<WritableFile>;
  /**
   * Create a new object holding all of `data`, durably and at once (never
   * seen empty or half-written); EEXIST when the object exists. Callers
   * serialize creates of one key (the session's lease): the backend may then
   * clear what a crashed create of that key left behind.
   */
  createExclusive(key: string, data: Uint8Array): Promise<void>;
  /** Atomically replace an object with `data`, durably: readers see the old or the new one, never half. */
  replace(key: string, data: Uint8Array): Promise<void>;
  /**
   * Begin a new version of `key`, written in order and put in place by its
   * `commit()` (`exclusive`: only if `key` does not exist then). Absent: the
   * caller collects the bytes and calls `replace` or `createExclusive`
   * (storage/replacement.ts), so the object is held in memory once.
   */
  openReplacement?(key: string, exclusive: boolean): Promise<Replacement>;
  /** Remove an object (nothing when it does not exist). */
  remove(key: string): Promise<void>;
  /** Remove every object under folder `prefix`. */
  removeAll(prefix: string): Promise<void>;
  /** Make sure folder `prefix` exists (a no-op for stores without folders). */
  ensureFolder(prefix: string): Promise<void>;
  /**
   * Take the exclusive lease `key` (one holder at a time, across processes
   * for a shared backend); a holder that is gone (a crashed process) loses
   * it. Fails with `session_busy` naming `what` while held.
   */
  lease(key: string, what: string): Promise<Lease>;
  /**
   * Forget what is cached of `key`'s state, so the next stat or read sees
   * the store as it is now (a network store's readers reuse what they
   * looked up for a short while; a follower told of an append elsewhere
   * calls this first). `at`: where that append is, as the writer's
   * `changeMark` said (a hint: a backend that cannot use it looks as
   * without). Absent: nothing is cached.
   */
  refresh?(key: string, at?: string): Promise<void>;
  /**
   * Where this process's last durable change of `key`'s session is, for
   * other processes' `refresh(key, at)` (told over the append bus): a
   * network store's readers then fetch that state at once instead of
   * looking for it (S3: the manifest number, one GET instead of a LIST and
   * a GET). Undefined: nothing to say (this process does not write it).
   */
  changeMark?(key: string): string | undefined;
  /**
   * A page of session `id` (asked with these parameters, unchecked) is
   * about to be planned. A store whose reads are round trips (S3) fetches
   * ahead, in one parallel wave with the page's first reads, what planning
   * it will read of the frame index and its projections, and may say where
   * the frame index record of the page's last seq lies: records [lo, hi]
   * (a hint: the planner uses it only once the records at its ends prove
   * it). Null or absent: nothing to say.
   */
  pageHint?(id: string, ask: { throughSeq?: number; beforeSeq?: number; maxMessages?: number }): Promise<{ lo: number; hi: number } | null>;
  /**
   * Sessions this process should open a writer for at start-up: a writer of
   * this process's predecessor (same host, same tail folder) crashed with
   * a durable tail its readers cannot see yet (a network store keeps the
   * unpublished tail local to its writer). Opening the writer recovers it
   * and publishes it. Absent: none (a local log is seen by every reader).
   */
  recoverable?(): Promise<string[]>;
  /**
   * Finish what the backend holds for this process (a network store: seal
   * and publish every session it writes, give their leases back). Absent:
   * nothing to finish. Called by whoever made the backend.
   */
  close?(): Promise<void>;
}
