/**
 * Reads of a session's members from the store (docs/s3-layout.md): a
 * member is a list of extents (pieces of segments and tail objects, or
 * inline bytes), every object's bytes verified by its check
 * (checked-reads.ts) through the block cache, and the prefetches that let
 * a cold page's first reads share one round trip.
 */
import { PagerError } from '../../core/errors.js';
import type { BlockCache, RangeFetch } from './block-cache.js';
import { DamagedObject } from './checked-reads.js';
import { piecesOf, type Extent, type Manifest, type MemberState } from './manifest.js';
import type { MemberName } from './remote-names.js';
import type { ObjectCheck } from './segment-file.js';

export interface RemoteReadConfig {
  cache: BlockCache;
  /** Remote folder of this session's objects, ending in '/'. */
  folder: string;
  /** A verified read that throws on damage (DamagedObject) instead of reading it as NULs: what a writer copies to publish again. */
  strictFetch: RangeFetch;
  /** Index members (entries, projections) up to this size are fetched whole on first touch. */
  wholeIndexBytes: number;
}

/** The checks of the objects extents name: a manifest's, or a writer's own. */
export type Checks = Readonly<Record<string, ObjectCheck>> | ReadonlyMap<string, ObjectCheck>;

function checkOf(checks: Checks, o: string): ObjectCheck | undefined {
  return checks instanceof Map ? checks.get(o) : (checks as Readonly<Record<string, ObjectCheck>>)[o];
}

export class RemoteReads {
  constructor(
    readonly id: string,
    private readonly cfg: RemoteReadConfig,
  ) {}

  /**
   * Bytes [start, end) of a member's extents, each object's verified by its
   * check. `copy`: what the writer reads to write it again (into its local
   * tail, published anew): read past the block cache, and damage is
   * refused (`repair_required`) instead of reading as NULs, which the next
   * publish would give fresh checksums.
   */
  async read(extents: readonly Extent[], checks: Checks, start: number, end: number, copy?: MemberName): Promise<Buffer> {
    const pieces = piecesOf(extents, start, end);
    const out = Buffer.allocUnsafe(Math.max(0, end - start));
    let filled = 0;
    const strict = async (p: { o: string; at: number; len: number; pos: number }) => {
      try {
        return await this.cfg.strictFetch(`${this.cfg.folder}${p.o}`, p.at, p.at + p.len, checkOf(checks, p.o));
      } catch (err) {
        if (!(err instanceof DamagedObject)) throw err;
        const from = start + p.pos;
        throw new PagerError('repair_required', `session ${this.id}: bytes [${from}, ${from + p.len}) of ${copy} are damaged on the store (${p.o}: ${err.why}); a writer does not write them again (that would publish the damage as good bytes)`, { member: copy, object: p.o });
      }
    };
    await Promise.all(
      pieces.map(async (p) => {
        const bytes = 'data' in p ? p.data : copy !== undefined ? await strict(p) : await this.cfg.cache.read(`${this.cfg.folder}${p.o}`, p.at, p.len, p.lo, p.hi, checkOf(checks, p.o));
        bytes.copy(out, p.pos);
        filled = Math.max(filled, p.pos + bytes.length);
      }),
    );
    return filled === out.length ? out : out.subarray(0, filled);
  }

  /** Start fetching bytes [start, end) of a member's extents into the block cache (not waited for). */
  prefetch(extents: readonly Extent[], checks: Checks, start: number, end: number): void {
    for (const p of piecesOf(extents, start, end)) if (!('data' in p)) this.cfg.cache.prefetch(`${this.cfg.folder}${p.o}`, p.at, p.len, p.lo, p.hi, checkOf(checks, p.o));
  }

  /**
   * A cold reader's first look: what a page reads first, fetched in the
   * background beside the caller's own next reads, so a cold page's index
   * and edge reads cost one round trip together, not one per probe: the
   * first and last block of every member (the sidecar's first and last
   * lines, the log's header and last frame, the projections' ends), each
   * a GET of its own (small, so the planner need not wait for more), then
   * every index member of at most `wholeIndexBytes` whole.
   */
  prefetchIndex(m: Manifest): void {
    const B = this.cfg.cache.blockBytes;
    const members = Object.entries(m.members) as [MemberName, MemberState][];
    for (const [, s] of members) {
      if (s.size === 0) continue;
      this.read(s.extents, m.checks, 0, Math.min(B, s.size)).catch(() => undefined);
      if (s.size > B) this.read(s.extents, m.checks, Math.max(0, s.size - B), s.size).catch(() => undefined);
    }
    for (const [name, s] of members) {
      if (name !== 'events' && name !== 'meta' && s.size > 2 * B && s.size <= this.cfg.wholeIndexBytes) this.read(s.extents, m.checks, 0, s.size).catch(() => undefined);
    }
  }

  /** A first read of a small index member takes it whole (a binary search then costs one round trip): the range to fetch for [start, end). */
  wholeIndex(member: MemberName, s: MemberState, start: number, end: number): [number, number] {
    if (member !== 'events' && s.size <= this.cfg.wholeIndexBytes) return [0, s.size];
    return [start, end];
  }
}
