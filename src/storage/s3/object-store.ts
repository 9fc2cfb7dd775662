/**
 * The few object-store calls an S3 store makes (GET of a byte range, PUT
 * whole, optionally only if absent, LIST by prefix, DELETE), behind one
 * small interface: the S3 client implements it over HTTP (s3-client.ts),
 * MemoryObjectStore in memory (unit tests of the volume logic, with an
 * optional delay per call to count round trips). Every call is counted,
 * with its start and end, so tests can tell how many sequential round
 * trips a page took (`roundTrips`).
 */

export class ObjectNotFound extends Error {
  readonly code = 'ENOENT';
  constructor(name: string) {
    super(`no such object: ${name}`);
    this.name = 'ObjectNotFound';
  }
}

/** A PUT with If-None-Match: * found the name taken (HTTP 412). */
export class ObjectExists extends Error {
  readonly code = 'EEXIST';
  constructor(name: string) {
    super(`object exists: ${name}`);
    this.name = 'ObjectExists';
  }
}

export interface ListResult {
  names: string[];
  /** Folders (with a delimiter): names ending in it. */
  folders: string[];
}

export interface ObjectStore {
  /** Bytes [start, end) of `name` (fewer at its end); ObjectNotFound when missing. */
  get(name: string, start: number, end: number): Promise<Buffer>;
  /** The whole object; ObjectNotFound when missing. */
  getAll(name: string): Promise<Buffer>;
  /** Write `data` as `name`; `ifAbsent`: ObjectExists when the name is taken. */
  put(name: string, data: Uint8Array, opts?: { ifAbsent?: boolean }): Promise<void>;
  /** Names under `prefix`, ascending, after `startAfter`; with `delimiter`, one level only. */
  list(prefix: string, opts?: { startAfter?: string; delimiter?: string }): Promise<ListResult>;
  /** Remove (nothing when missing). */
  remove(names: string[]): Promise<void>;
}

/** One call's timing (ms, performance.now()). */
export interface CallRecord {
  op: 'get' | 'put' | 'list' | 'remove';
  name: string;
  start: number;
  end: number;
  /** Bytes moved (a GET's body, a PUT's). */
  bytes: number;
  /** A ranged GET's range start. */
  from?: number;
}

/**
 * The longest chain of calls each begun after the previous one ended: the
 * sequential round trips the calls cost (calls in flight together count once).
 */
export function roundTrips(calls: readonly CallRecord[]): number {
  const sorted = [...calls].sort((a, b) => a.end - b.end);
  const depth: number[] = [];
  let best = 0;
  for (let i = 0; i < sorted.length; i++) {
    const c = sorted[i] as CallRecord;
    let d = 1;
    for (let j = 0; j < i; j++) if ((sorted[j] as CallRecord).end <= c.start) d = Math.max(d, (depth[j] as number) + 1);
    depth.push(d);
    best = Math.max(best, d);
  }
  return best;
}

/** Wraps a store and records every call (for tests and the benchmark). */
export class RecordingStore implements ObjectStore {
  calls: CallRecord[] = [];
  constructor(private readonly inner: ObjectStore) {}

  private async rec<T>(op: CallRecord['op'], name: string, f: () => Promise<T>, size: (r: T) => number = () => 0, from?: number): Promise<T> {
    const start = performance.now();
    let bytes = 0;
    try {
      const r = await f();
      bytes = size(r);
      return r;
    } finally {
      this.calls.push({ op, name, start, end: performance.now(), bytes, ...(from !== undefined ? { from } : {}) });
    }
  }

  get(name: string, start: number, end: number): Promise<Buffer> {
    return this.rec('get', name, () => this.inner.get(name, start, end), (b) => b.length, start);
  }
  getAll(name: string): Promise<Buffer> {
    return this.rec('get', name, () => this.inner.getAll(name), (b) => b.length, 0);
  }
  put(name: string, data: Uint8Array, opts?: { ifAbsent?: boolean }): Promise<void> {
    return this.rec('put', name, () => this.inner.put(name, data, opts), () => data.length);
  }
  list(prefix: string, opts?: { startAfter?: string; delimiter?: string }): Promise<ListResult> {
    return this.rec('list', prefix, () => this.inner.list(prefix, opts));
  }
  remove(names: string[]): Promise<void> {
    return this.rec('remove', names[0] ?? '', () => this.inner.remove(names));
  }
}

/** An object store in memory; `delayMs` per call stands for a network round trip. */
export class MemoryObjectStore implements ObjectStore {
  readonly objects = new Map<string, Buffer>();
  constructor(private readonly delayMs = 0) {}

  private wait(): Promise<void> {
    return this.delayMs > 0 ? new Promise((r) => setTimeout(r, this.delayMs)) : Promise.resolve();
  }

  async get(name: string, start: number, end: number): Promise<Buffer> {
    await this.wait();
    const o = this.objects.get(name);
    if (o === undefined) throw new ObjectNotFound(name);
    return Buffer.from(o.subarray(start, end));
  }

  async getAll(name: string): Promise<Buffer> {
    await this.wait();
    const o = this.objects.get(name);
    if (o === undefined) throw new ObjectNotFound(name);
    return Buffer.from(o);
  }

  async put(name: string, data: Uint8Array, opts: { ifAbsent?: boolean } = {}): Promise<void> {
    await this.wait();
    if (opts.ifAbsent === true && this.objects.has(name)) throw new ObjectExists(name);
    this.objects.set(name, Buffer.from(data));
  }

  async list(prefix: string, opts: { startAfter?: string; delimiter?: string } = {}): Promise<ListResult> {
    await this.wait();
    const names: string[] = [];
    const folders = new Set<string>();
    for (const k of [...this.objects.keys()].sort()) {
      if (!k.startsWith(prefix) || (opts.startAfter !== undefined && k <= opts.startAfter)) continue;
      const rest = k.slice(prefix.length);
      const d = opts.delimiter === undefined ? -1 : rest.indexOf(opts.delimiter);
      if (d === -1) names.push(k);
      else folders.add(prefix + rest.slice(0, d + (opts.delimiter as string).length));
    }
    return { names, folders: [...folders] };
  }

  async remove(names: string[]): Promise<void> {
    await this.wait();
    for (const n of names) this.objects.delete(n);
  }
}
