/**
 * The in-memory backend: a whole session store in this process's memory,
 * for tests and synthetic sessions. Same contract as the local backend
 * (the compliance suite runs both), nothing durable beyond the process.
 * Page workers cannot see this memory: slices are read on the calling
 * thread and handed to them (`workerSource` null).
 */
import { PagerError } from '../../core/errors.js';
import { StorageError, type Lease, type ObjectStat, type RandomReader, type StorageBackend, type WritableFile, type WriteMode } from '../backend.js';

/** One object: its bytes in a buffer that grows by doubling, and what a stat says. */
interface MemObject {
  /** Set when the object is made (versions counter): its incarnation. */
  born: number;
  buf: Buffer;
  size: number;
  mtimeMs: number;
  version: number;
}

/** Changes on every write anywhere: a version is never reused, so stamps never repeat. */
let versions = 0;

function touch(o: MemObject): void {
  o.mtimeMs = Date.now();
  o.version = ++versions;
}

function bytesOf(o: MemObject, pos: number, len: number): Buffer {
  const start = Math.max(0, Math.min(pos, o.size));
  const end = Math.max(start, Math.min(o.size, pos + Math.max(0, len)));
  // A copy: the caller may keep it while the object is written on.
  return Buffer.from(o.buf.subarray(start, end));
}

function notFound(key: string): StorageError {
  return new StorageError('ENOENT', `no such object: ${key}`);
}

function statOf(o: MemObject): ObjectStat {
  return { size: o.size, mtimeMs: o.mtimeMs, version: `m${o.version}`, incarnation: `b${o.born}` };
}

function writeInto(o: MemObject, data: Uint8Array, pos: number): void {
  const end = pos + data.length;
  if (end > o.buf.length) {
    const grown = Buffer.alloc(Math.max(end, o.buf.length * 2, 256));
    o.buf.copy(grown, 0, 0, o.size);
    o.buf = grown;
  }
  // Writing past the end leaves zeros between, as a file does.
  if (pos > o.size) o.buf.fill(0, o.size, pos);
  o.buf.set(data, pos);
  if (end > o.size) o.size = end;
  touch(o);
}

class MemoryWritable implements WritableFile {
  private closed = false;
  constructor(
    private readonly key: string,
    private readonly o: MemObject,
  ) {}

  get size(): number {
    return this.o.size;
  }

  private check(): void {
    // Removed or replaced while open, writes still go to this object, as to an unlinked file.
    if (this.closed) throw new StorageError('EIO', `${this.key} is closed`);
  }

  async write(data: Uint8Array, pos: number): Promise<void> {
    this.check();
    writeInto(this.o, data, pos);
  }

  async read(pos: number, len: number): Promise<Buffer> {
    return bytesOf(this.o, pos, len);
  }

  async sync(): Promise<void> {
    this.check();
  }

  async truncate(len: number): Promise<void> {
    this.check();
    if (len < this.o.size) this.o.size = len;
    else writeInto(this.o, Buffer.alloc(len - this.o.size), this.o.size);
    touch(this.o);
  }

  async stat(): Promise<ObjectStat> {
    return statOf(this.o);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

export class MemoryBackend implements StorageBackend {
  readonly kind = 'memory';
  readonly workerSource = null;
  private readonly objects = new Map<string, MemObject>();
  private readonly leases = new Set<string>();

  async stat(key: string): Promise<ObjectStat | null> {
    const o = this.objects.get(key);
    return o === undefined ? null : statOf(o);
  }

  async openReader(key: string, size?: number): Promise<RandomReader> {
    const o = this.objects.get(key);
    if (o === undefined) throw notFound(key);
    const limit = size ?? o.size;
    return {
      size: limit,
      read: async (pos: number, len: number) => bytesOf(o, pos, Math.min(len, limit - pos)),
      close: async () => undefined,
    };
  }

  async read(key: string, start: number, end: number): Promise<Buffer | null> {
    const o = this.objects.get(key);
    return o === undefined ? null : bytesOf(o, start, end - start);
  }

  async readAll(key: string): Promise<Buffer | null> {
    const o = this.objects.get(key);
    return o === undefined ? null : bytesOf(o, 0, o.size);
  }

  async list(prefix: string): Promise<string[]> {
    const at = prefix.endsWith('/') ? prefix : `${prefix}/`;
    const names = new Set<string>();
    for (const key of this.objects.keys()) {
      if (!key.startsWith(at)) continue;
      // A deeper key names a folder here, as readdir lists one.
      names.add(key.slice(at.length).split('/')[0] as string);
    }
    return [...names];
  }

  async openWritable(key: string, mode: WriteMode): Promise<WritableFile> {
    let o = this.objects.get(key);
    if (mode === 'create' && o !== undefined) throw new StorageError('EEXIST', `object exists: ${key}`);
    if (mode === 'existing' && o === undefined) throw notFound(key);
    if (o === undefined || mode === 'truncate') {
      o = { born: ++versions, buf: Buffer.alloc(0), size: 0, mtimeMs: 0, version: 0 };
      touch(o);
      this.objects.set(key, o);
    }
    return new MemoryWritable(key, o);
  }

  async createExclusive(key: string, data: Uint8Array): Promise<void> {
    if (this.objects.has(key)) throw new StorageError('EEXIST', `object exists: ${key}`);
    await this.replace(key, data);
  }

  async replace(key: string, data: Uint8Array): Promise<void> {
    const o: MemObject = { born: ++versions, buf: Buffer.from(data), size: data.length, mtimeMs: 0, version: 0 };
    touch(o);
    this.objects.set(key, o);
  }

  async remove(key: string): Promise<void> {
    this.objects.delete(key);
  }

  async removeAll(prefix: string): Promise<void> {
    const at = prefix.endsWith('/') ? prefix : `${prefix}/`;
    for (const key of [...this.objects.keys()]) if (key === prefix || key.startsWith(at)) this.objects.delete(key);
  }

  async ensureFolder(): Promise<void> {
    // No folders: a key's prefix exists as soon as an object under it does.
  }

  async lease(key: string, what: string): Promise<Lease> {
    if (this.leases.has(key)) throw new PagerError('session_busy', `${what} is being written by this process`, { pid: process.pid });
    this.leases.add(key);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        this.leases.delete(key);
      },
    };
  }
}
