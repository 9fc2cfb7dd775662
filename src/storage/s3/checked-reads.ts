/**
 * Ranged reads of segment and tail objects, verified against what the
 * writer wrote (docs/s3-layout.md, "Verified reads"): the manifest names,
 * per object, where its check table is and that table's CRC-32; the table
 * holds the CRC-32 of every chunk of the object. A read is widened to whole
 * chunks, fetched together with the object's table (one GET each, in
 * parallel: no round trip added; a table is fetched once per object and
 * kept, bounded), and every chunk is compared with its CRC.
 *
 * A chunk that fails is fetched once more (a fault on the way); if it
 * fails again the object is damaged, and its bytes are given as NUL bytes:
 * never the wrong bytes. No frame of a log can hold a NUL (it is neither
 * JSON nor an SPF2 header, and a binary frame's payload fails its CRC), nor
 * can a line of the sidecars or a projection record pass its checks, so
 * the layers above treat the damage as they treat a damaged local file
 * (SPEC section 3): a page covering a damaged frame fails with
 * `corrupt_range` naming its seq range and the session shows degraded;
 * pages elsewhere are still served. `damaged` counts such chunks.
 */
import { StorageError } from '../backend.js';
import type { ObjectStore } from './object-store.js';
import { badChunks, checkTableBytes, chunkAt, type ObjectCheck } from './segment-file.js';
import { crc32 } from 'node:zlib';

export const DEFAULT_TABLE_CACHE_BYTES = 16 * 1024 * 1024;

/** A strict read (a writer's, whose bytes it would publish again) found damage: no bytes are given. */
export class DamagedObject extends StorageError {
  constructor(
    readonly object: string,
    readonly why: string,
  ) {
    super('EIO', `${object} is damaged on the store (${why})`);
    this.name = 'DamagedObject';
  }
}

export class CheckedReads {
  /** Tables by object name (verified, or null: the table itself is damaged), least recently used first. */
  private readonly tables = new Map<string, { table: Promise<Buffer | null>; len: number }>();
  private tableBytes = 0;
  /** Chunks found damaged (after a second fetch), since start. */
  damaged = 0;

  constructor(
    private readonly objects: ObjectStore,
    private readonly maxTableBytes = DEFAULT_TABLE_CACHE_BYTES,
    /** Told of each damaged object read (name, what failed). */
    private readonly onDamage: (name: string, why: string) => void = () => undefined,
  ) {}

  /**
   * Bytes [start, end) of object `name` (end within its checked bytes),
   * verified by `check`. `strict`: damage throws DamagedObject instead of
   * reading as NULs (a writer copying the bytes into what it publishes next
   * would give the NULs fresh checksums: the damage made good for readers).
   */
  async get(name: string, start: number, end: number, check: ObjectCheck | undefined, strict = false): Promise<Buffer> {
    if (check === undefined) throw new StorageError('EIO', `${name}: no check known for this object (a manifest names every object's)`);
    const to = Math.min(end, check.at);
    if (to <= start) return Buffer.alloc(0);
    const a = chunkAt(check, start).start;
    const b = chunkAt(check, to - 1).end;
    const [first, table] = await Promise.all([this.objects.get(name, a, b), this.table(name, check)]);
    let data = first;
    let bad = table === null ? null : badChunks(data, a, b - a, table, check);
    if (bad === null || bad.length > 0) {
      // Once more: a fault on the way is not damage.
      data = await this.objects.get(name, a, b);
      const again = table === null ? await this.table(name, check, true) : table;
      bad = again === null ? null : badChunks(data, a, b - a, again, check);
    }
    if (bad === null || bad.length > 0) {
      const out = Buffer.alloc(b - a);
      if (bad !== null) {
        data.copy(out, 0, 0, Math.min(data.length, out.length));
        for (const [x, y] of bad) out.fill(0, x - a, y - a);
      }
      this.damaged += bad === null ? badChunks(Buffer.alloc(0), a, b - a, Buffer.alloc(0), check).length : bad.length;
      const why = bad === null ? 'its check table fails its CRC' : `bytes ${bad.map(([x, y]) => `[${x}, ${y})`).join(', ')} fail their CRC`;
      this.onDamage(name, why);
      if (strict) throw new DamagedObject(name, why);
      data = out;
    }
    return data.subarray(start - a, to - a);
  }

  /** The object's verified check table, or null when it fails its CRC (twice). */
  private table(name: string, check: ObjectCheck, again = false): Promise<Buffer | null> {
    const key = `${name}#${check.at}:${check.crc}`;
    const hit = this.tables.get(key);
    if (hit !== undefined && !again) {
      this.tables.delete(key);
      this.tables.set(key, hit);
      return hit.table;
    }
    const len = checkTableBytes(check);
    const fetchOnce = async () => {
      const t = await this.objects.get(name, check.at, check.at + len);
      return t.length === len && crc32(t) === check.crc ? t : null;
    };
    const p = (async () => (await fetchOnce()) ?? (await fetchOnce()))();
    const entry = { table: p, len };
    p.catch(() => {
      if (this.tables.get(key) === entry) this.drop(key);
    });
    if (hit !== undefined) this.drop(key);
    this.tables.set(key, entry);
    this.tableBytes += len;
    for (const k of this.tables.keys()) {
      if (this.tableBytes <= this.maxTableBytes || k === key) break;
      this.drop(k);
    }
    return p;
  }

  private drop(key: string): void {
    const e = this.tables.get(key);
    if (e === undefined) return;
    this.tables.delete(key);
    this.tableBytes -= e.len;
  }
}
