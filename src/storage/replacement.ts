/**
 * Writing a whole object in order and putting it in place at once, on any
 * backend (StorageBackend.openReplacement): a backend that can stream it
 * (local files: a temp file beside it, fsynced, then renamed or linked into
 * place) does; for any other the bytes are collected here and handed to
 * `replace` or `createExclusive` at commit, so the object is held in memory
 * once. And a copy of one object to a new one (repair's backup), in blocks.
 */
import type { Replacement, StorageBackend } from './backend.js';

const COPY_BLOCK = 1024 * 1024;

class CollectedReplacement implements Replacement {
  private parts: Buffer[] = [];
  private done = false;
  size = 0;

  constructor(
    private readonly storage: StorageBackend,
    private readonly key: string,
    private readonly exclusive: boolean,
  ) {}

  async write(data: Uint8Array): Promise<void> {
    if (this.done) throw new Error(`replacement of ${this.key} is finished`);
    // Copied: callers reuse their buffers.
    this.parts.push(Buffer.from(data));
    this.size += data.length;
  }

  async commit(): Promise<void> {
    if (this.done) throw new Error(`replacement of ${this.key} is finished`);
    this.done = true;
    const data = Buffer.concat(this.parts, this.size);
    this.parts = [];
    if (this.exclusive) await this.storage.createExclusive(this.key, data);
    else await this.storage.replace(this.key, data);
  }

  async abort(): Promise<void> {
    this.done = true;
    this.parts = [];
  }
}

/** A new version of `key` on `storage`, streamed where the backend can, else collected. */
export function openReplacement(storage: StorageBackend, key: string, exclusive: boolean): Promise<Replacement> {
  if (storage.openReplacement !== undefined) return storage.openReplacement(key, exclusive);
  return Promise.resolve(new CollectedReplacement(storage, key, exclusive));
}

/**
 * A new object `dest` holding `src`'s bytes as they are now, durably; EEXIST
 * when `dest` exists (nothing is overwritten). Reads one block at a time.
 */
export async function copyObject(storage: StorageBackend, src: string, dest: string): Promise<number> {
  const reader = await storage.openReader(src);
  let out: Replacement | null = null;
  try {
    out = await openReplacement(storage, dest, true);
    for (let pos = 0; pos < reader.size; ) {
      const b = await reader.read(pos, Math.min(COPY_BLOCK, reader.size - pos));
      if (b.length === 0) throw new Error(`${src} ended at ${pos} of ${reader.size} bytes while it was copied`);
      await out.write(b);
      pos += b.length;
    }
    const r = out;
    out = null;
    await r.commit();
    return reader.size;
  } finally {
    await out?.abort();
    await reader.close();
  }
}
