/**
 * One session on an S3 store (docs/s3-layout.md): its members (the log, the
 * sidecars, the projections) as the latest manifest describes them
 * (manifest-looks.ts finds it, remote-reads.ts reads through the block
 * cache); and, while this process writes the session, the writer's side:
 * the unsealed tail of every member in local files (durable before an
 * append is acknowledged), published for readers on every acknowledged
 * change (a new manifest naming small inline pieces or a tail object),
 * sealed into immutable segments cut at frame boundaries by size, by age
 * and on release, and the lease: the epoch of the manifests this writer
 * makes. A second writer cannot make the next manifest number (its PUT
 * with If-None-Match fails), so it is told `session_busy` and never
 * interleaves. What earlier epochs left behind is collected by orphans.ts.
 */
import { PagerError } from '../../core/errors.js';
import { StorageError, type ObjectStat, type WritableFile } from '../backend.js';
import type { LocalBackend } from '../local/local-backend.js';
import type { BlockCache, RangeFetch } from './block-cache.js';
import { encodeManifest, extentsBefore, extentsFrom, objectsNamed, sealedEnd, type Extent, type Manifest, type MemberState, type WriterId } from './manifest.js';
import { ManifestLooks } from './manifest-looks.js';
import { ObjectExists, ObjectNotFound, type ObjectStore } from './object-store.js';
import { collectOrphans } from './orphans.js';
import { RemoteReads } from './remote-reads.js';
import { manifestName, segmentName, tailName, type MemberName } from './remote-names.js';
import { sealCut } from './seal-cut.js';
import { encodeSegment, type ObjectCheck, type SectionInput } from './segment-file.js';
import { cutSparse, extendSparse, pageRecords, SPARSE_OF, sparsePrefix, type SparseIndex } from './sparse-index.js';
import { INDEX_RECORD_BYTES } from '../../streams/frame-index-file.js';
import { CRC_FILE_NAME, CRC_RECORD_BYTES } from '../../streams/frame-crc-file.js';
import { META_FILE_NAME, META_RECORD_BYTES } from '../../streams/frame-meta-file.js';
import { DEFAULT_MAX_MESSAGES, MAX_MAX_MESSAGES } from '../../core/page-rule.js';

export interface VolumeConfig {
  objects: ObjectStore;
  cache: BlockCache;
  /** Remote folder of this session's objects, ending in '/'. */
  folder: string;
  /** Local tail files, under `<id>/` (a LocalBackend rooted at the tail folder). */
  local: LocalBackend;
  me: WriterId;
  leaseMs: number;
  /** Readers reuse a manifest this long before looking for a newer one. */
  freshMs: number;
  /** A tail this large (log bytes) is sealed into a segment... */
  segmentBytes: number;
  /** ...of at most this many log bytes (at least one frame). */
  maxSegmentBytes: number;
  /** An unsealed write older than this is sealed (ms). */
  sealAgeMs: number;
  /** A publish whose new bytes are at most this goes inline in the manifest. */
  inlineBytes: number;
  /** Index members (entries, projections) up to this size are fetched whole on first touch. */
  wholeIndexBytes: number;
  /** Chunk size of the check tables of the objects this writer makes. */
  checkBytes: number;
  /** A verified read that throws on damage (DamagedObject) instead of reading it as NULs: what a writer copies to publish again. */
  strictFetch: RangeFetch;
  /** Records of the frame index per entry of the manifest's sparse index (sparse-index.ts). */
  sparseEvery: number;
  /** Whether a writer of this host still runs: its pid alive and, when its start time is known, started then (a crashed writer's lease is taken over at once on its own host, also when its pid was reused). */
  runs(w: WriterId): boolean;
}

/** A member while this process owns the session: sealed remote extents, then the local tail. */
interface Owned {
  size: number;
  mtimeMs: number;
  born: string;
  w: string;
  /** Where the sealed part ends. */
  base: number;
  /** Where the local file's bytes start (<= base: a sealed part stays local until the file is cut). */
  fileBase: number;
  /** While the local file is being cut after a seal, writes wait for it. */
  gate: Promise<void> | null;
  /** Extents covering [0, base): sealed segments. */
  sealed: Extent[];
  /** Extents readers were last told for [base, base + their length). */
  published: Extent[];
  /** Lowest offset changed since the last publish (Infinity: none). */
  dirtyFrom: number;
  /** Counts writes and cuts (a publish forgets `dirtyFrom` only if none came while it ran). */
  writes: number;
  /** Lowest offset changed since a seal began (Infinity: none). */
  lowWrite: number;
  gen: number;
  file: WritableFile;
}

interface Owner {
  epoch: number;
  /** The last manifest number this writer made. */
  n: number;
  serial: number;
  leased: boolean;
  members: Map<MemberName, Owned>;
  /** performance.now() of the last publish's start. */
  renewedAt: number;
  /** When the oldest unsealed log byte was written (Date.now()), or null. */
  oldestUnsealed: number | null;
  fenced: PagerError | null;
  timer: NodeJS.Timeout;
  /** Manifest numbers this writer made and has not yet deleted. */
  oldManifests: number[];
  /** The check of every object this writer's members name (or has just uploaded). */
  checks: Map<string, ObjectCheck>;
  /** The sparse index of the frame index as far as it is whole (null: no frame index). */
  sparse: SparseIndex | null;
}

/** What a page is asked for, as far as which records it reads goes. */
export interface PageAsk {
  throughSeq?: number;
  beforeSeq?: number;
  maxMessages?: number;
}

/** Where the record of a page's last seq lies in the frame index (a hint: FrameIndexFile.findBySeq proves it). */
export interface PageHint {
  lo: number;
  hi: number;
}

/** Projections read record for record with the frame index, and their record sizes. */
const RECORD_MEMBERS: [MemberName, number][] = [
  [SPARSE_OF, INDEX_RECORD_BYTES],
  [`p/${CRC_FILE_NAME}`, CRC_RECORD_BYTES],
  [`p/${META_FILE_NAME}`, META_RECORD_BYTES],
];

const LOCAL_RE = /^(.+)@(\d+)@(\d+)$/;

function memberFile(member: MemberName): string {
  return encodeURIComponent(member);
}

function memberOfFile(name: string): MemberName {
  return decodeURIComponent(name) as MemberName;
}

export class SessionVolume {
  private readonly looks: ManifestLooks;
  private readonly remote: RemoteReads;
  private owner: Owner | null = null;
  /** Serializes publishes, seals, claims and releases. */
  private chain: Promise<unknown> = Promise.resolve();
  private prefetched = false;
  /** Counter for `born` and `w` values made by this process. */
  private counter = 0;
  /** The orphan collection this writer began when it took the session over (null: none yet). */
  orphanSweep: Promise<string[]> | null = null;

  constructor(
    readonly id: string,
    private readonly cfg: VolumeConfig,
  ) {
    this.looks = new ManifestLooks(id, cfg);
    this.remote = new RemoteReads(id, cfg);
  }

  /** The newest manifest this process has seen or made. */
  private get manifest(): Manifest | null {
    return this.looks.manifest;
  }

  get owned(): boolean {
    return this.owner !== null;
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.chain.then(f);
    this.chain = run.catch(() => undefined);
    return run;
  }

  // ---------------------------------------------------------------- reading

  /**
   * The latest manifest (null: the session has none), as ManifestLooks
   * says; a cold reader's first answer starts the prefetch of what its
   * first page reads.
   */
  async latest(force = false): Promise<Manifest | null> {
    const m = await this.looks.latest(force);
    if (!this.prefetched && m !== null && this.owner === null) {
      this.prefetched = true;
      this.remote.prefetchIndex(m);
    }
    return m;
  }

  /** The number of the last manifest this process's writer made (null: it does not write the session). */
  get ownedManifest(): number | null {
    return this.owner?.n ?? null;
  }

  /** Told that manifest `n` exists (another process's message; ManifestLooks.at). Its own writer knows. */
  async latestAt(n: number): Promise<Manifest | null> {
    if (this.owner !== null) return this.manifest;
    return this.looks.at(n);
  }

  /**
   * Told a page is coming (before it looks at the session): once the
   * latest manifest is known (the look the page's own first stat shares),
   * fetch at once, in parallel, the records of the frame index, frames.crc2
   * and frames.meta that planning it will read, as the manifest's sparse
   * index says (sparse-index.ts); resolves to where the record of its last
   * seq lies, for the planner's search. Null: nothing to say (no sparse
   * index, this process writes the session, the page is the tail).
   */
  async pageHint(ask: PageAsk): Promise<PageHint | null> {
    if (this.owner !== null) return null;
    const m = await this.latest();
    const sp = m?.sparse;
    const idx = sp === undefined ? undefined : m?.members[sp.of];
    if (m === null || sp === undefined || idx === undefined || idx.born !== sp.born) return null;
    const int = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
    const through = int(ask.throughSeq) ? ask.throughSeq + 1 : Number.POSITIVE_INFINITY;
    const before = int(ask.beforeSeq) ? ask.beforeSeq : Number.POSITIVE_INFINITY;
    const end = Math.min(through, before);
    const max = int(ask.maxMessages) ? Math.min(Math.max(1, ask.maxMessages), MAX_MAX_MESSAGES) : DEFAULT_MAX_MESSAGES;
    const got = pageRecords(sp, Math.floor(idx.size / INDEX_RECORD_BYTES), end === Number.POSITIVE_INFINITY ? undefined : end, max);
    if (got === null) return null;
    for (const [member, bytes] of RECORD_MEMBERS) {
      const s = m.members[member];
      if (s !== undefined) this.remote.prefetch(s.extents, m.checks, got.from * bytes, Math.min(s.size, (got.to + 1) * bytes));
    }
    return got.find;
  }

  /** A member as readers see it, or null when it does not exist. */
  async memberState(member: MemberName): Promise<MemberState | null> {
    if (this.owner !== null) {
      const o = this.owner.members.get(member);
      return o === undefined ? null : { size: o.size, mtimeMs: o.mtimeMs, born: o.born, w: o.w, extents: [] };
    }
    return (await this.latest())?.members[member] ?? null;
  }

  /** A member's stat by the manifest at hand when it names the member (no look at the store, however old), else as `stat`. */
  async statAtHand(member: MemberName): Promise<ObjectStat | null> {
    const s = this.owner === null ? this.manifest?.members[member] : undefined;
    if (s === undefined) return this.stat(member);
    return { size: s.size, mtimeMs: s.mtimeMs, version: `${s.born}:${s.w}`, incarnation: s.born };
  }

  async stat(member: MemberName): Promise<ObjectStat | null> {
    const s = await this.memberState(member);
    return s === null ? null : { size: s.size, mtimeMs: s.mtimeMs, version: `${s.born}:${s.w}`, incarnation: s.born };
  }

  async members(): Promise<MemberName[]> {
    if (this.owner !== null) return [...this.owner.members.keys()];
    return Object.keys((await this.latest())?.members ?? {}) as MemberName[];
  }

  /** Bytes [start, end) of a member (fewer at its end); null when it does not exist. */
  async read(member: MemberName, start: number, end: number): Promise<Buffer | null> {
    for (let attempt = 0; ; attempt++) {
      const o = this.owner?.members.get(member);
      if (this.owner !== null) {
        if (o === undefined) return null;
        return this.readOwned(o, start, end);
      }
      // Bytes the manifest at hand holds are read by it, however old it is: a read never waits for a look
      // (only a stat does, for how far the session goes), so a page outliving the freshness window
      // does not stop mid-way for a LIST. A range past them (or a retry) looks.
      const known = attempt === 0 ? this.manifest?.members[member] : undefined;
      const m = known !== undefined && end <= known.size ? this.manifest : await this.latest(attempt > 0);
      const s = m?.members[member];
      if (m === null || s === undefined) return null;
      const to = Math.min(end, s.size);
      if (to <= start) return Buffer.alloc(0);
      try {
        if (attempt === 0) {
          const [a, b] = this.remote.wholeIndex(member, s, start, to);
          if (a !== start || b !== to) void this.remote.read(s.extents, m.checks, a, b).catch(() => undefined);
        }
        return await this.remote.read(s.extents, m.checks, start, to);
      } catch (err) {
        // A tail object dropped by a newer manifest: read that one.
        if (err instanceof ObjectNotFound && attempt < 3) continue;
        throw err;
      }
    }
  }

  private async readOwned(o: Owned, start: number, end: number): Promise<Buffer> {
    const to = Math.min(end, o.size);
    if (to <= start) return Buffer.alloc(0);
    while (o.gate !== null) await o.gate;
    if (start >= o.fileBase) return o.file.read(start - o.fileBase, to - start);
    const remote = await this.remote.read(o.sealed, this.ownerOrThrow().checks, start, Math.min(to, o.fileBase));
    if (to <= o.fileBase) return remote;
    return Buffer.concat([remote, await o.file.read(0, to - o.fileBase)]);
  }

  // ---------------------------------------------------------------- owning

  private busy(what: string, m: Manifest): PagerError {
    const w = m.writer as WriterId;
    const self = w.id === this.cfg.me.id;
    return new PagerError('session_busy', `${what} is being written by process ${w.pid} on ${w.host}${self ? ' (this process)' : ''} (epoch ${m.epoch})`, { pid: w.pid, host: w.host, epoch: m.epoch });
  }

  /**
   * Become the session's writer (idempotent for this process): read the
   * latest manifest, refuse while another writer's lease is live, then
   * make the next manifest with the next epoch. `leased`: the writer's
   * lease proper, which this process grants once at a time.
   */
  claim(what: string, leased: boolean): Promise<void> {
    if (this.owner !== null) {
      if (this.owner.fenced !== null) return Promise.reject(this.owner.fenced);
      if (leased) {
        if (this.owner.leased) return Promise.reject(new PagerError('session_busy', `${what} is being written by this process`, { pid: process.pid }));
        this.owner.leased = true;
      }
      return Promise.resolve();
    }
    return this.serial(async () => {
      if (this.owner !== null) return this.claim(what, leased);
      for (let attempt = 0; attempt < 3; attempt++) {
        const m = await this.latest(true);
        if (m?.writer != null && m.writer.id !== this.cfg.me.id) {
          const w = m.writer;
          const crashedHere = w.host === this.cfg.me.host && w.tail === this.cfg.me.tail && !this.cfg.runs(w);
          const lapsed = Date.now() - m.time > 2 * m.leaseMs;
          if (!crashedHere && !lapsed) throw this.busy(what, m);
        }
        try {
          await this.takeOver(m, leased);
          return;
        } catch (err) {
          if (!(err instanceof ObjectExists)) throw err;
          // Another writer made that number first: look again.
        }
      }
      throw new PagerError('session_busy', `${what}: could not take the writer lease (manifests kept changing)`);
    });
  }

  private async takeOver(m: Manifest | null, leased: boolean): Promise<void> {
    const epoch = (m?.epoch ?? 0) + 1;
    const dir = `${this.id}`;
    // Our own unpublished tail, from a crash of this writer's folder: only if no one wrote after it.
    const localEpoch = Number((await this.cfg.local.readAll(`${dir}/epoch`))?.toString() ?? 'NaN');
    const recover = m !== null && m.writer !== null && m.writer.tail === this.cfg.me.tail && m.writer.host === this.cfg.me.host && localEpoch === m.epoch;
    const localFiles = new Map<MemberName, { gen: number; base: number; name: string }>();
    for (const name of await this.cfg.local.list(dir)) {
      const x = LOCAL_RE.exec(name);
      if (x === null) continue;
      const member = memberOfFile(x[1] as string);
      const gen = Number(x[2]);
      const base = Number(x[3]);
      const prev = localFiles.get(member);
      if (!recover || (prev !== undefined && prev.gen > gen)) {
        await this.cfg.local.remove(`${dir}/${name}`);
        continue;
      }
      if (prev !== undefined) await this.cfg.local.remove(`${dir}/${prev.name}`);
      localFiles.set(member, { gen, base, name });
    }
    await this.cfg.local.replace(`${dir}/epoch`, Buffer.from(String(epoch)));
    const members = new Map<MemberName, Owned>();
    const names = new Set<MemberName>([...(Object.keys(m?.members ?? {}) as MemberName[]), ...localFiles.keys()]);
    for (const member of names) {
      const s = m?.members[member];
      const lf = localFiles.get(member);
      if (recover && lf === undefined) continue; // Removed here, not yet published.
      let base = s === undefined ? 0 : sealedEnd(s.extents);
      let file: WritableFile;
      let size: number;
      if (lf !== undefined) {
        // The local file holds [lf.base, ...); bytes between the sealed end and it come from the store.
        const f = await this.cfg.local.openWritable(`${dir}/${lf.name}`, 'existing');
        if (lf.base > base && s !== undefined) {
          const gap = await this.remote.read(s.extents, m?.checks ?? {}, base, lf.base, member);
          const rest = await f.read(0, f.size);
          await f.close();
          file = await this.writeLocal(member, lf.gen + 1, base, Buffer.concat([gap, rest]));
          await this.cfg.local.remove(`${dir}/${lf.name}`);
          size = base + gap.length + rest.length;
        } else {
          base = lf.base;
          file = f;
          size = lf.base + f.size;
        }
      } else {
        const s2 = s as MemberState;
        const bytes = await this.remote.read(s2.extents, m?.checks ?? {}, base, s2.size, member);
        file = await this.writeLocal(member, 1, base, bytes);
        size = s2.size;
      }
      const sealedExt = s === undefined ? [] : extentsBefore(s.extents, base);
      members.set(member, {
        size,
        mtimeMs: s?.mtimeMs ?? Date.now(),
        born: s?.born ?? this.born(epoch),
        w: `${epoch}.${++this.counter}`,
        base,
        fileBase: base,
        gate: null,
        sealed: sealedExt,
        published: [],
        dirtyFrom: base,
        writes: 0,
        lowWrite: Number.POSITIVE_INFINITY,
        gen: lf?.gen ?? 1,
        file,
      });
    }
    const owner: Owner = {
      epoch,
      n: m?.n ?? 0,
      serial: 0,
      leased,
      members,
      renewedAt: performance.now(),
      oldestUnsealed: null,
      fenced: null,
      timer: setInterval(() => this.tick(), Math.max(50, Math.min(this.cfg.leaseMs / 3, this.cfg.sealAgeMs / 2))),
      oldManifests: m === null ? [] : [m.n],
      checks: new Map(Object.entries(m?.checks ?? {})),
      sparse: null,
    };
    // The last writer's sparse index, as far as what it described is still the member's.
    const idx = members.get(SPARSE_OF);
    const was = m?.sparse;
    if (idx !== undefined && was !== undefined && was.born === idx.born && was.every === this.cfg.sparseEvery) {
      const whole = Math.floor(Math.min(idx.size, m?.members[SPARSE_OF]?.size ?? 0) / (was.every * INDEX_RECORD_BYTES));
      owner.sparse = sparsePrefix(was, whole);
    }
    owner.timer.unref();
    for (const o of members.values()) if (o.size > o.base) owner.oldestUnsealed = Date.now();
    this.owner = owner;
    try {
      await this.publishNow(false);
    } catch (err) {
      clearInterval(owner.timer);
      for (const o of members.values()) await o.file.close().catch(() => undefined);
      this.owner = null;
      throw err instanceof PagerError && err.code === 'session_busy' ? new ObjectExists(manifestName(owner.n + 1)) : err;
    }
    // Our first manifest is stored: what earlier epochs uploaded and no manifest names is garbage now.
    this.orphanSweep = this.collectOrphans(epoch).catch(() => []);
  }

  private born(epoch: number): string {
    return `${epoch}.${this.cfg.me.id.slice(0, 8)}.${++this.counter}`;
  }

  private async writeLocal(member: MemberName, gen: number, base: number, bytes: Buffer): Promise<WritableFile> {
    const key = `${this.id}/${memberFile(member)}@${gen}@${base}`;
    await this.cfg.local.replace(key, bytes);
    return this.cfg.local.openWritable(key, 'existing');
  }

  private ownerOrThrow(): Owner {
    const o = this.owner;
    if (o === null) throw new StorageError('EIO', `session ${this.id} is not written by this process`);
    if (o.fenced !== null) throw o.fenced;
    return o;
  }

  /** A member's state for writing (created empty when `create`). */
  async open(member: MemberName, create: boolean, truncate: boolean): Promise<Owned | null> {
    const owner = this.ownerOrThrow();
    let o = owner.members.get(member);
    if (o === undefined) {
      if (!create) return null;
      o = await this.newMember(member, Buffer.alloc(0));
    } else if (truncate) {
      await this.truncate(member, 0);
    }
    return o;
  }

  private async newMember(member: MemberName, data: Buffer): Promise<Owned> {
    const owner = this.ownerOrThrow();
    const old = owner.members.get(member);
    const gen = (old?.gen ?? 0) + 1;
    const file = await this.writeLocal(member, gen, 0, data);
    if (old !== undefined) await this.dropLocal(member, old);
    const o: Owned = { size: data.length, mtimeMs: Date.now(), born: this.born(owner.epoch), w: `${owner.epoch}.${++this.counter}`, base: 0, fileBase: 0, gate: null, sealed: [], published: [], dirtyFrom: 0, writes: 0, lowWrite: 0, gen, file };
    owner.members.set(member, o);
    if (data.length > 0) owner.oldestUnsealed ??= Date.now();
    return o;
  }

  private async dropLocal(member: MemberName, o: Owned): Promise<void> {
    await o.file.close().catch(() => undefined);
    await this.cfg.local.remove(`${this.id}/${memberFile(member)}@${o.gen}@${o.fileBase}`);
  }

  private touch(o: Owned, pos: number): void {
    o.writes++;
    const owner = this.ownerOrThrow();
    o.mtimeMs = Date.now();
    o.w = `${owner.epoch}.${++this.counter}`;
    o.dirtyFrom = Math.min(o.dirtyFrom, pos);
    o.lowWrite = Math.min(o.lowWrite, pos);
    owner.oldestUnsealed ??= Date.now();
  }

  /**
   * A write or cut at `at` inside the sealed part: those segments' bytes are
   * no longer the member's (the local tail takes them back). Bytes [at,
   * overwritten) are about to be written over or cut (a truncate: all of
   * them), so only those after are read back.
   */
  private async unseal(member: MemberName, o: Owned, at: number, overwritten: number): Promise<void> {
    if (at < o.fileBase) {
      const keep = Math.min(Math.max(at, overwritten), o.fileBase);
      const back = Buffer.concat([Buffer.alloc(keep - at), await this.remote.read(o.sealed, this.ownerOrThrow().checks, keep, o.fileBase, member)]);
      const rest = await o.file.read(0, o.size - o.fileBase);
      const old = { ...o };
      o.file = await this.writeLocal(member, o.gen + 1, at, Buffer.concat([back, rest]));
      o.gen += 1;
      await this.dropLocal(member, old);
      o.fileBase = at;
    }
    o.sealed = extentsBefore(o.sealed, at);
    o.published = [];
    o.base = at;
    o.dirtyFrom = Math.min(o.dirtyFrom, at);
  }

  async write(member: MemberName, data: Uint8Array, pos: number): Promise<void> {
    const o = this.ownerOrThrow().members.get(member);
    if (o === undefined) throw new StorageError('ENOENT', `no such object: ${member} of session ${this.id}`);
    if (data.length === 0) return;
    while (o.gate !== null) await o.gate;
    if (pos < o.base) await this.unseal(member, o, pos, pos + data.length);
    if (pos > o.size) {
      // Past the end: zeros between, as a file has.
      await o.file.write(Buffer.alloc(pos - o.size), o.size - o.fileBase);
    }
    await o.file.write(data, pos - o.fileBase);
    this.touch(o, Math.min(pos, o.size));
    if (member === SPARSE_OF) this.sparseCut(Math.min(pos, o.size));
    o.size = Math.max(o.size, pos + data.length);
  }

  /** The frame index changed from byte `pos` on: its sparse index keeps only the entries wholly before. */
  private sparseCut(pos: number): void {
    const sp = this.owner?.sparse;
    if (sp != null) cutSparse(sp, pos);
  }

  /** The sparse index of the frame index as it is now, its new whole entries summarized (from the local tail, as a rule). */
  private async sparseNow(owner: Owner): Promise<SparseIndex | null> {
    const o = owner.members.get(SPARSE_OF);
    if (o === undefined) {
      owner.sparse = null;
      return null;
    }
    if (owner.sparse === null || owner.sparse.born !== o.born) owner.sparse = { of: SPARSE_OF, born: o.born, every: this.cfg.sparseEvery, seq: [], msgs: [], group: [] };
    const sp = owner.sparse;
    const stride = sp.every * INDEX_RECORD_BYTES;
    const whole = Math.floor(o.size / stride);
    if (whole > sp.seq.length) {
      const have = sp.seq.length;
      const bytes = await this.readOwned(o, have * stride, whole * stride);
      // Cut or rewritten while read: summarized at the next publish.
      if (owner.sparse === sp && sp.seq.length === have && bytes.length === (whole - have) * stride) extendSparse(sp, bytes);
    }
    return sparsePrefix(sp, sp.seq.length);
  }

  async truncate(member: MemberName, len: number): Promise<void> {
    const o = this.ownerOrThrow().members.get(member);
    if (o === undefined) throw new StorageError('ENOENT', `no such object: ${member} of session ${this.id}`);
    while (o.gate !== null) await o.gate;
    if (len < o.base) await this.unseal(member, o, len, Number.POSITIVE_INFINITY);
    if (len > o.size) await o.file.write(Buffer.alloc(len - o.size), o.size - o.fileBase);
    else await o.file.truncate(len - o.fileBase);
    this.touch(o, Math.min(len, o.size));
    if (member === SPARSE_OF) this.sparseCut(Math.min(len, o.size));
    o.size = len;
  }

  /** Make a member's local tail durable (before an append is acknowledged). */
  async sync(member: MemberName): Promise<void> {
    const o = this.ownerOrThrow().members.get(member);
    if (o === undefined) return;
    while (o.gate !== null) await o.gate;
    await o.file.sync();
  }

  /** A member replaced whole (durable locally), then published. */
  async replace(member: MemberName, data: Uint8Array, exclusive: boolean): Promise<void> {
    const owner = this.ownerOrThrow();
    if (exclusive && owner.members.has(member)) throw new StorageError('EEXIST', `object exists: ${member} of session ${this.id}`);
    await this.newMember(member, Buffer.from(data));
    await this.publish();
  }

  async remove(members: MemberName[]): Promise<void> {
    const owner = this.ownerOrThrow();
    let any = false;
    for (const m of members) {
      const o = owner.members.get(m);
      if (o === undefined) continue;
      owner.members.delete(m);
      await this.dropLocal(m, o);
      any = true;
    }
    if (any) await this.publish();
  }

  // ---------------------------------------------------------------- publishing

  /** Tell readers: a new manifest naming every member as this writer has it. */
  publish(): Promise<void> {
    return this.serial(() => this.publishNow(false));
  }

  private async publishNow(release: boolean): Promise<void> {
    const owner = this.ownerOrThrow();
    const started = performance.now();
    if (started - owner.renewedAt >= this.cfg.leaseMs) {
      // Unrenewed for a lease period (cut off from the store): another writer may have taken over and
      // made (and, keeping its last three, deleted) the number we would make next, so its PUT would
      // not fence us. Look first.
      const newest = await this.latest(true);
      if (newest !== null && newest.n > owner.n) {
        owner.fenced = new PagerError('session_busy', `session ${this.id} was taken over by another writer (epoch ${newest.epoch} > ${owner.epoch}); this writer is fenced`, { epoch: newest.epoch });
        throw owner.fenced;
      }
    }
    // A log tail of a segment's size is sealed first (in this manifest), never shipped as a tail object.
    const ev = owner.members.get('events');
    if (ev !== undefined && ev.size - ev.base >= this.cfg.segmentBytes) await this.sealSegments(this.cfg.segmentBytes);
    const sparse = await this.sparseNow(owner);
    const sections: SectionInput[] = [];
    // What each member is at this moment (writes go on while the publish awaits: the manifest describes this state).
    const plan: { member: MemberName; o: Owned; keep: Extent[]; from: number; len: number; size: number; mtimeMs: number; w: string; writes: number; base: number }[] = [];
    let inline = 0;
    for (const [member, o] of owner.members) {
      // What readers have for [base, from) stays; [from, size) is new.
      let keep = o.dirtyFrom === Number.POSITIVE_INFINITY ? o.published : extentsBefore(o.published, Math.max(0, o.dirtyFrom - o.base));
      // Too many pieces: publish the member's whole tail afresh as one.
      if (keep.length > 24) keep = [];
      const from = o.base + keep.reduce((a, e) => a + e.len, 0);
      const len = o.size - from;
      plan.push({ member, o, keep, from, len, size: o.size, mtimeMs: o.mtimeMs, w: o.w, writes: o.writes, base: o.base });
      for (const e of keep) if ('d' in e) inline += e.len;
      if (len > 0) sections.push({ member, start: from, data: await this.readOwned(o, from, o.size) });
    }
    const fresh = sections.reduce((a, s) => a + s.data.length, 0);
    const toInline = fresh <= this.cfg.inlineBytes && inline + fresh <= 8 * this.cfg.inlineBytes;
    let tailObj: string | null = null;
    const at = new Map<MemberName, number>();
    if (!toInline && fresh > 0) {
      tailObj = tailName(owner.epoch, owner.serial++);
      const seg = encodeSegment(this.id, owner.epoch, 'tail', sections, this.cfg.checkBytes);
      for (const s of seg.header.sections) at.set(s.member, s.at);
      owner.checks.set(tailObj, seg.check);
      await this.cfg.objects.put(`${this.cfg.folder}${tailObj}`, seg.bytes, { ifAbsent: true });
    }
    const published = new Map<MemberName, Extent[]>();
    const members: Manifest['members'] = {};
    for (const p of plan) {
      const ext = [...p.keep];
      if (p.len > 0) {
        if (tailObj === null) ext.push({ d: Buffer.from((sections.find((s) => s.member === p.member) as SectionInput).data).toString('base64'), len: p.len });
        else ext.push({ o: tailObj, at: at.get(p.member) as number, len: p.len });
      }
      published.set(p.member, ext);
      members[p.member] = { size: p.size, mtimeMs: p.mtimeMs, born: p.o.born, w: p.w, extents: [...p.o.sealed, ...ext] };
    }
    const checks: Manifest['checks'] = {};
    for (const o of objectsNamed({ members })) {
      const c = owner.checks.get(o);
      if (c === undefined) throw new StorageError('EIO', `session ${this.id}: no check of ${o} (a writer keeps one per object it names)`);
      checks[o] = c;
    }
    const m: Manifest = { v: 1, session: this.id, n: owner.n + 1, epoch: owner.epoch, writer: release ? null : this.cfg.me, leaseMs: this.cfg.leaseMs, time: Date.now(), serial: owner.serial, members, checks };
    // Only entries wholly within the frame index as this manifest describes it.
    const idxSize = members[SPARSE_OF]?.size ?? 0;
    if (sparse !== null && sparse.born === members[SPARSE_OF]?.born) {
      const whole = Math.min(sparse.seq.length, Math.floor(idxSize / (sparse.every * INDEX_RECORD_BYTES)));
      if (whole > 0) m.sparse = sparsePrefix(sparse, whole);
    }
    try {
      await this.cfg.objects.put(`${this.cfg.folder}${manifestName(m.n)}`, encodeManifest(m), { ifAbsent: true });
    } catch (err) {
      if (!(err instanceof ObjectExists)) throw err;
      // Another writer made this number: fenced for good. Nothing of ours is ever published again.
      const newer = await this.latest(true).catch(() => null);
      owner.fenced = new PagerError('session_busy', `session ${this.id} was taken over by another writer (epoch ${newer?.epoch ?? '?'} > ${owner.epoch}); this writer is fenced`, { epoch: newer?.epoch ?? null });
      if (tailObj !== null) await this.cfg.objects.remove([`${this.cfg.folder}${tailObj}`]).catch(() => undefined);
      throw owner.fenced;
    }
    const before = this.manifest;
    owner.n = m.n;
    owner.renewedAt = started;
    for (const p of plan) {
      // Written meanwhile: the next publish takes it from where it was dirty before (a superset of what
      // changed); cut or unsealed meanwhile (its base moved), from its base.
      p.o.published = p.o.base === p.base ? (published.get(p.member) as Extent[]) : [];
      if (p.o.writes === p.writes) p.o.dirtyFrom = Number.POSITIVE_INFINITY;
    }
    this.looks.adopt(m);
    if (!release) await this.cutLocal(owner);
    // What no manifest of ours names any more (tail objects superseded, segments of removed members) and old manifests go.
    const named = objectsNamed(m);
    const gone = before === null ? [] : [...objectsNamed(before)].filter((o) => !named.has(o)).map((o) => `${this.cfg.folder}${o}`);
    // Checks of objects no manifest names (and none being sealed: the chain runs one step at a time) are done with.
    for (const o of [...owner.checks.keys()]) if (!named.has(o)) owner.checks.delete(o);
    owner.oldManifests.push(m.n);
    while (owner.oldManifests.length > 3) gone.push(`${this.cfg.folder}${manifestName(owner.oldManifests.shift() as number)}`);
    if (gone.length > 0) void this.cfg.objects.remove(gone).catch(() => undefined);
  }

  // ---------------------------------------------------------------- garbage

  /** What earlier epochs uploaded and no manifest names, deleted (orphans.ts). */
  collectOrphans(epoch: number): Promise<string[]> {
    return collectOrphans(this.cfg.objects, this.cfg.folder, this.id, epoch, () => [...(this.owner?.checks.keys() ?? []), ...(this.manifest === null ? [] : objectsNamed(this.manifest))]);
  }

  // ---------------------------------------------------------------- sealing

  /**
   * Upload the log's tail as segments while it is `atLeast` bytes or more
   * (0: all of it, at frame boundaries). The segments are the members'
   * sealed part from now on; the next manifest names them (nothing reads
   * them before), and only after that manifest are the local files cut.
   */
  private async sealSegments(atLeast: number): Promise<void> {
    const owner = this.ownerOrThrow();
    for (let round = 0; round < 10_000; round++) if (!(await this.uploadSegment(owner, atLeast))) break;
    const ev = owner.members.get('events');
    owner.oldestUnsealed = ev !== undefined && ev.size > ev.base ? Date.now() : null;
  }

  private async uploadSegment(owner: Owner, atLeast: number): Promise<boolean> {
    const ev = owner.members.get('events');
    const en = owner.members.get('entries');
    if (ev === undefined || en === undefined) return false;
    if (ev.size - ev.base < Math.max(1, atLeast)) return false;
    const cut = sealCut(await this.readOwned(en, en.base, en.size), en.base, ev.base, ev.size, this.cfg.maxSegmentBytes);
    if (cut.frames === 0) return false;
    const cuts = new Map<MemberName, number>([
      ['events', cut.events],
      ['entries', cut.entries],
    ]);
    // The projections' records of the same frames: everything written to them so far (the writer keeps them in step).
    const last = ev.size === cut.events;
    for (const [member, o] of owner.members) if (member.startsWith('p/') && last && o.size > o.base) cuts.set(member, o.size);
    const sections: SectionInput[] = [];
    for (const [member, end] of cuts) {
      const o = owner.members.get(member) as Owned;
      o.lowWrite = Number.POSITIVE_INFINITY;
      sections.push({ member, start: o.base, data: await this.readOwned(o, o.base, end) });
    }
    const name = segmentName(owner.epoch, owner.serial++);
    const seg = encodeSegment(this.id, owner.epoch, 'segment', sections, this.cfg.checkBytes);
    owner.checks.set(name, seg.check);
    await this.cfg.objects.put(`${this.cfg.folder}${name}`, seg.bytes, { ifAbsent: true });
    for (const s of seg.header.sections) {
      const o = owner.members.get(s.member);
      // Written below the cut meanwhile (a repair, a test's damage): this seal is void.
      if (o === undefined || o.lowWrite < s.start + s.len || o.base !== s.start) {
        await this.cfg.objects.remove([`${this.cfg.folder}${name}`]).catch(() => undefined);
        return false;
      }
    }
    for (const s of seg.header.sections) {
      const o = owner.members.get(s.member) as Owned;
      o.sealed = [...o.sealed, { o: name, at: s.at, len: s.len }];
      o.published = extentsFrom(o.published, s.len);
      o.base += s.len;
    }
    return true;
  }

  /** After a manifest named the segments: the local tail files lose what they hold (writes wait meanwhile). */
  private async cutLocal(owner: Owner): Promise<void> {
    for (const [member, o] of owner.members) {
      if (o.gate !== null || o.base <= o.fileBase) continue;
      o.gate = (async () => {
        const rest = await o.file.read(o.base - o.fileBase, o.size - o.base);
        const old = { ...o };
        const file = await this.writeLocal(member, o.gen + 1, o.base, rest);
        o.file = file;
        o.gen += 1;
        o.fileBase = o.base;
        await this.dropLocal(member, old);
      })().finally(() => {
        o.gate = null;
      });
      await o.gate;
    }
  }

  /** The writer's timer: renew the lease, publish what a plain write left unpublished, seal by age. */
  private tick(): void {
    const owner = this.owner;
    if (owner === null || owner.fenced !== null) return;
    void this.serial(async () => {
      if (this.owner !== owner || owner.fenced !== null) return;
      const aged = owner.oldestUnsealed !== null && Date.now() - owner.oldestUnsealed >= this.cfg.sealAgeMs;
      if (aged) await this.sealSegments(0);
      const dirty = aged || [...owner.members.values()].some((o) => o.dirtyFrom !== Number.POSITIVE_INFINITY);
      if (dirty || performance.now() - owner.renewedAt >= this.cfg.leaseMs / 3) await this.publishNow(false);
    }).catch(() => undefined);
  }

  /** The writer's lease given back (only the lease; the process may still write unleased). */
  unlease(): void {
    if (this.owner !== null) this.owner.leased = false;
  }

  /** Stop writing: seal everything, publish with no writer, forget the local tail. */
  release(): Promise<void> {
    return this.serial(async () => {
      const owner = this.owner;
      if (owner === null) return;
      clearInterval(owner.timer);
      if (owner.fenced === null) {
        await this.sealSegments(0);
        await this.publishNow(true);
      }
      for (const [member, o] of owner.members) await this.dropLocal(member, o);
      await this.cfg.local.remove(`${this.id}/epoch`);
      this.owner = null;
    });
  }
}
