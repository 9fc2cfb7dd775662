/**
 * A reader's view of which manifest is a session's latest (docs/s3-layout.md,
 * "Manifests"): one LIST and one GET per look, at most one look in flight,
 * and an answer reused for `freshMs` so a burst of pages costs one round
 * trip, not one each. The volume (session-volume.ts) asks it; its writer
 * tells it of the manifests it makes itself (`adopt`).
 */
import { StorageError } from '../backend.js';
import { decodeManifest, type Manifest } from './manifest.js';
import { ObjectNotFound, type ObjectStore } from './object-store.js';
import { manifestName, manifestNumber } from './remote-names.js';

export interface LookConfig {
  objects: ObjectStore;
  /** Remote folder of this session's objects, ending in '/'. */
  folder: string;
  /** An answer is reused this long before the next look. */
  freshMs: number;
}

export class ManifestLooks {
  /** The newest manifest seen (null: none yet). */
  manifest: Manifest | null = null;
  /** performance.now() when `manifest` was last checked against the store (-Infinity: never). */
  private checkedAt = Number.NEGATIVE_INFINITY;
  /** The look at the store in flight (`id`: its number in the order looks began). */
  private look: { id: number; done: Promise<Manifest | null> } | null = null;
  private looksStarted = 0;
  /** The highest-numbered look that has ended (its answer, or its error, is in). */
  private looksEnded = 0;

  constructor(
    readonly id: string,
    private readonly cfg: LookConfig,
  ) {}

  /**
   * The latest manifest (null: the session has none), at most `freshMs` old;
   * `force`: from a look that began after this call (a caller told of an
   * append, or asked for a seq it has not seen, must not get an answer
   * looked up before). A look in flight is as fresh as any answer for
   * everyone else, so a page asked just after an append's message waits
   * for the look the message started instead of taking the older manifest.
   */
  async latest(force = false): Promise<Manifest | null> {
    const need = force ? this.looksStarted + 1 : 0;
    if (force) this.checkedAt = Number.NEGATIVE_INFINITY;
    for (;;) {
      const look = this.look;
      if (look !== null) {
        if (look.id >= need) return look.done;
        await look.done.catch(() => undefined);
        continue;
      }
      if (force ? this.looksEnded >= need : performance.now() - this.checkedAt < this.cfg.freshMs) return this.manifest;
      break;
    }
    const id = ++this.looksStarted;
    const done = this.findLatest()
      .then((m) => {
        if (m !== null && (this.manifest === null || m.n >= this.manifest.n)) this.manifest = m;
        // Fresh from when the look ended: on a slow store, a look's own round trip does not use up the window.
        this.checkedAt = performance.now();
        return this.manifest;
      })
      .finally(() => {
        this.looksEnded = Math.max(this.looksEnded, id);
        if (this.look?.id === id) this.look = null;
      });
    this.look = { id, done };
    return done;
  }

  /**
   * Told that manifest `n` exists (another process's message): GET it at
   * once, one round trip instead of a LIST and a GET, and reuse it for the
   * freshness window. One deleted already (newer ones exist) or damaged:
   * a full look.
   */
  async at(n: number): Promise<Manifest | null> {
    if (this.manifest !== null && this.manifest.n >= n) return this.latest();
    let m: Manifest;
    try {
      m = decodeManifest(await this.cfg.objects.getAll(`${this.cfg.folder}${manifestName(n)}`), n, this.id);
    } catch {
      return this.latest(true);
    }
    if (this.manifest === null || m.n > this.manifest.n) this.manifest = m;
    this.checkedAt = performance.now();
    return this.manifest;
  }

  /** A manifest this process has just stored (its writer's): the latest, fresh from now. */
  adopt(m: Manifest): void {
    this.manifest = m;
    this.checkedAt = performance.now();
  }

  /** One LIST (after the manifest known) and one GET of the newest (a deleted one: list again). */
  private async findLatest(): Promise<Manifest | null> {
    const dir = `${this.cfg.folder}manifest/`;
    for (let attempt = 0; attempt < 5; attempt++) {
      const known = this.manifest?.n;
      const listed = await this.cfg.objects.list(dir, known === undefined ? {} : { startAfter: `${this.cfg.folder}${manifestName(known)}` });
      let best = -1;
      for (const name of listed.names) {
        const n = manifestNumber(name.slice(this.cfg.folder.length));
        if (n !== null && n > best) best = n;
      }
      if (best === -1) return this.manifest;
      try {
        return decodeManifest(await this.cfg.objects.getAll(`${this.cfg.folder}${manifestName(best)}`), best, this.id);
      } catch (err) {
        if (!(err instanceof ObjectNotFound)) throw err;
      }
    }
    throw new StorageError('EIO', `session ${this.id}: manifests kept changing while read`);
  }
}
