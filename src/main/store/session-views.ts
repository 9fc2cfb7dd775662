/**
 * Session views: what the page path and the catalog know of a session, from
 * bounded reads only (session-state.ts), cached while the versions of its
 * three objects are unchanged; the in-process writer's committed metadata
 * when this store writes the session; and damage found by pages, folded in
 * so the session shows degraded.
 */
import type { ObjectStat, StorageBackend } from '../../storage/backend.js';
import { EVENTS_SUFFIX, INDEX, META_SUFFIX, SESSIONS, isValidSessionId, sessionKeys, type SessionKeys } from '../../storage/layout.js';
import { PagerError } from '../../core/errors.js';
import type { SessionMeta } from '../meta-file.js';
import { CatchUpMemo, catalogState, loadSessionState, needsRepair, type SessionState, type SessionStatus, type StateProblem } from '../session-state.js';
import type { CatalogEntry, PageVersion } from '../store-types.js';

/** What the page path needs to know of a session, from bounded reads only. */
export interface SessionView {
  paths: SessionKeys;
  status: SessionStatus;
  reasons: string[];
  nextSeq: number;
  entriesSize: number;
  indexedLength: number;
  frameCount: number;
  /** Changes whenever the session's objects may have: keys cached pages ('' when they moved while read). */
  version: string;
  /** The log's incarnation as the view's stamp read it (PageVersion); undefined when the view read none. */
  incarnation?: string;
}

/**
 * A stamp, and the stats it was made from: one stat per object per request, and every later check
 * of that request (the log's incarnation for the page's tag, loadSessionState's first look at the
 * log and the entry sidecar, whether the metadata exists) uses these rather than stating the same
 * files again. Each request still stats all three: an append or a replaced file (by any process)
 * before the request began is seen by it (test/view-freshness.test.ts).
 */
interface Stamp {
  stamp: string;
  incarnation: string;
  events: ObjectStat | null;
  entries: ObjectStat | null;
  meta: ObjectStat | null;
}

/** Versions of a session's three objects (local: sizes, mtimes and inodes): a view is reused while they are unchanged. */
async function stamp(storage: StorageBackend, paths: SessionKeys): Promise<Stamp> {
  const events = await storage.stat(paths.events);
  const entries = await storage.stat(paths.entries);
  const meta = await storage.stat(paths.meta);
  return { stamp: stampOf(paths.id, events === null ? '-' : events.version, entries === null ? '-' : entries.version, meta === null ? '-' : meta.version), incarnation: events?.incarnation ?? '', events, entries, meta };
}

/** A session's last stamp and the three versions it was made of (stampOf). */
interface StampMade {
  events: string;
  entries: string;
  meta: string;
  stamp: string;
}
/** Sessions whose last stamp is kept at most (stampOf); cleared when full, since ids come from clients. */
const STAMPS_KEPT = 4096;
const stampsMade = new Map<string, StampMade>();

/**
 * The stamp of three versions: the string made for the session's last look when they are the same
 * (a backend that keeps its version strings, local-backend.ts, hands back the very same strings,
 * so that comparison is three pointer checks), else a new one. The stamp is compared with the
 * cached view's and the kept readers' (kept-readers.ts) on every request: one made anew was a
 * joined string flattened at its first comparison.
 */
function stampOf(id: string, events: string, entries: string, meta: string): string {
  const last = stampsMade.get(id);
  if (last !== undefined && last.events === events && last.entries === entries && last.meta === meta) return last.stamp;
  const made = `${events}|${entries}|${meta}|`;
  if (last !== undefined) {
    last.events = events;
    last.entries = entries;
    last.meta = meta;
    last.stamp = made;
  } else {
    if (stampsMade.size >= STAMPS_KEPT) stampsMade.clear();
    stampsMade.set(id, { events, entries, meta, stamp: made });
  }
  return made;
}

/**
 * A PageVersion that carries the view it was answered from (pageView builds the page from it):
 * a field of the version rather than a WeakMap entry a request, whose ephemeron the collector
 * visits at every scavenge. Private: only this module reads it.
 */
class ViewedVersion implements PageVersion {
  readonly #view: SessionView;
  constructor(
    readonly nextSeq: number,
    readonly servable: boolean,
    readonly incarnation: string,
    view: SessionView,
  ) {
    this.#view = view;
  }

  static viewOf(v: PageVersion): SessionView | undefined {
    return v instanceof ViewedVersion ? v.#view : undefined;
  }
}

/**
 * The last page version made, kept alive (core/shape-keeper.ts says why): one is made a page
 * request and dropped with it, so between requests none would be left, and a full collection
 * would free its hidden class and the hidden class of the view it carries (a view whose
 * incarnation was added), and deoptimize the code that checks for them (viewNow, and the page
 * path reading the view: planResolved, the plan checks, recordsByNumber). A live instance keeps
 * both; written by a function, the variable lives in the module's context. It holds one view:
 * a few small fields.
 */
let lastVersion: ViewedVersion | null = null;

/** Keys kept per session id at most (sessionKeys makes five strings and an object a call); cleared when full. */
const KEYS_KEPT = 4096;

export class SessionViews {
  private readonly views = new Map<string, { stamp: string; state: SessionState }>();
  /** Catalog states read from metadata alone (catalogState); never used by pages. */
  private readonly catalogViews = new Map<string, { stamp: string; state: SessionState }>();
  /** Frames found corrupt by pages, per session: the session shows degraded. */
  private readonly damage = new Map<string, StateProblem[]>();
  /** Each session's keys, made once (not per request); bounded (KEYS_KEPT), since ids come from clients. */
  private readonly keys = new Map<string, SessionKeys>();
  /** Stale metadata caught up by earlier loads: the next load of such a session reads only what is new. */
  readonly catchUps = new CatchUpMemo();
  hits = 0;
  misses = 0;

  constructor(
    private readonly storage: StorageBackend,
    /** The committed metadata of this store's open writer of a session, if any. */
    private readonly committed: (id: string) => Promise<SessionMeta | undefined>,
    /** Make the storage look again at a session (a network store's reader caches what it looked up for a while). */
    private readonly refresh: (id: string) => Promise<void> = async () => undefined,
  ) {}

  /** Drop what is cached of a session (its writer closed, or was created). */
  forget(id: string): void {
    this.views.delete(id);
  }

  /**
   * The session's state and the stamp it was read under ('' when the objects moved meanwhile),
   * with the stats of that stamp (`seen`: taken by this request, before its reads).
   */
  private async loadStamped(paths: SessionKeys, taken?: Stamp): Promise<{ state: SessionState; stamp: string; incarnation?: string; seen: Stamp }> {
    const seen = taken ?? (await stamp(this.storage, paths));
    const s = seen.stamp;
    const cached = this.views.get(paths.id);
    if (cached !== undefined && cached.stamp === s) {
      this.hits++;
      return { state: cached.state, stamp: s, incarnation: seen.incarnation, seen };
    }
    this.misses++;
    const state = await loadSessionState(paths, this.storage, this.catchUps, seen);
    // Stamp again: if an object moved while we read, do not cache a mixed view.
    if ((await stamp(this.storage, paths)).stamp !== s) return { state, stamp: '', seen };
    this.views.set(paths.id, { stamp: s, state });
    return { state, stamp: s, incarnation: seen.incarnation, seen };
  }

  /**
   * A session's state for the catalog: a page's view if still fresh by its
   * stamp; else the metadata alone when the objects are as it last wrote
   * them (kept by stamp too, apart from the views pages use); else full checks.
   */
  private async catalogView(paths: SessionKeys): Promise<SessionState> {
    const seen = await stamp(this.storage, paths);
    const s = seen.stamp;
    const cached = this.views.get(paths.id) ?? this.catalogViews.get(paths.id);
    if (cached !== undefined && cached.stamp === s) {
      this.hits++;
      return cached.state;
    }
    const fast = await catalogState(paths, this.storage, seen);
    if (fast !== null) {
      if ((await stamp(this.storage, paths)).stamp === s) this.catalogViews.set(paths.id, { stamp: s, state: fast });
      return fast;
    }
    return (await this.loadStamped(paths, seen)).state;
  }

  /**
   * The page path's view of a session; `session_not_found` when it does not
   * exist. `throughSeq`: the seq a client asks a page cut at. A client that
   * learned of a seq elsewhere (from the writer's acknowledgment, another
   * reader, a follower) may ask before this process's cached view of a
   * network store shows it: then the storage is looked at again once, so
   * such a pinned page is answered (read-your-writes across processes),
   * and `invalid_request` is left to a seq that is past the end indeed.
   */
  async view(id: string, throughSeq?: number): Promise<SessionView> {
    const v = await this.viewNow(id);
    if (throughSeq === undefined || !Number.isSafeInteger(throughSeq) || throughSeq < v.nextSeq || v.status === 'repair_required') return v;
    await this.refresh(id);
    return this.viewNow(id);
  }

  private keysOf(id: string): SessionKeys {
    let k = this.keys.get(id);
    if (k === undefined) {
      if (this.keys.size >= KEYS_KEPT) this.keys.clear();
      k = sessionKeys(id);
      this.keys.set(id, k);
    }
    return k;
  }

  private async viewNow(id: string): Promise<SessionView> {
    const paths = this.keysOf(id);
    const m = await this.committed(id);
    if (m !== undefined) {
      // The in-process writer knows exactly what is committed; no reads needed.
      const reasons = m.issues.map((i) => i.message);
      return { paths, status: reasons.length ? 'degraded' : 'ok', reasons, nextSeq: m.nextSeq, entriesSize: m.entriesLength, indexedLength: m.indexedLength, frameCount: m.frameCount, version: `w${m.indexedLength}:${m.entriesLength}` };
    }
    const stamped = await this.loadStamped(paths);
    const state = this.withDamage(stamped.state);
    // No log and no metadata when this request looked (its stamp): no such session.
    if (state.status === 'repair_required' && state.problems[0]?.code === 'log_missing' && stamped.seen.meta === null) {
      throw new PagerError('session_not_found', `session ${id} not found`);
    }
    const view: SessionView = { paths, status: state.status, reasons: state.reasons, nextSeq: state.nextSeq, entriesSize: state.entriesSize, indexedLength: state.indexedLength, frameCount: state.frameCount, version: stamped.stamp };
    if (stamped.incarnation !== undefined) view.incarnation = stamped.incarnation;
    return view;
  }

  /**
   * What a page's ETag rests on: the next seq, whether pages are served, and
   * which log this is (store-types.ts PageVersion). The page then asked with
   * this version is built from the same view (pageView): one view per page
   * request, and the tag checked is the tag of the page built.
   */
  async pageVersion(id: string, throughSeq?: number): Promise<PageVersion> {
    const v = await this.view(id, throughSeq);
    const incarnation = v.incarnation ?? (await this.storage.stat(v.paths.events))?.incarnation ?? '';
    // The page then asked with this version is built from this view (pageView).
    const version = new ViewedVersion(v.nextSeq, v.status !== 'repair_required', incarnation, v);
    lastVersion = version;
    return version;
  }

  /** The view a page is built from: the one `version` was answered from, else a fresh one. */
  async pageView(id: string, throughSeq: number | undefined, version?: PageVersion): Promise<SessionView> {
    const v = version === undefined ? undefined : ViewedVersion.viewOf(version);
    return v !== undefined && v.paths.id === id ? v : this.view(id, throughSeq);
  }

  /** Remember a frame a page found corrupt (the objects say nothing of it until doctor or repair). */
  noteDamage(id: string, problem: StateProblem): void {
    let list = this.damage.get(id);
    if (list === undefined) {
      list = [];
      this.damage.set(id, list);
    }
    if (!list.some((p) => p.offset === problem.offset)) list.push(problem);
  }

  private withDamage(state: SessionState): SessionState {
    const found = this.damage.get(state.id);
    if (found === undefined || state.status === 'repair_required') return state;
    const fresh = found.filter((p) => !state.problems.some((q) => q.offset === p.offset && q.code === p.code));
    if (fresh.length === 0) return state;
    return { ...state, status: 'degraded', reasons: [...state.reasons, ...fresh.map((p) => p.message)], problems: [...state.problems, ...fresh] };
  }

  private catalogEntry(id: string, raw: SessionState): CatalogEntry {
    const state = this.withDamage(raw);
    const m = state.meta;
    return {
      id,
      status: state.status,
      reasons: state.reasons,
      title: m?.title ?? null,
      createdAt: m?.createdAt ?? null,
      updatedAt: m?.updatedAt ?? null,
      nextSeq: state.nextSeq,
      lastSeq: state.nextSeq - 1,
      eventCount: state.nextSeq,
      frameCount: state.frameCount,
      indexedLength: state.indexedLength,
      logSize: state.logSize,
      hasUserMessage: m?.hasUserMessage ?? false,
      provider: m?.provider ?? null,
      model: m?.model ?? null,
      agentPreset: m?.agentPreset ?? null,
      lastCompactionSeq: m?.lastCompactionSeq ?? null,
      tokens: m?.tokens ?? null,
      metaStale: state.metaStale,
      format: m?.format ?? null,
      header: m?.header ?? null,
    };
  }

  /** The catalog: every session with a log or a metadata sidecar, by id; never fails for one bad session. */
  async list(): Promise<CatalogEntry[]> {
    const ids = new Set<string>();
    const names = await Promise.all([this.storage.list(SESSIONS).catch(() => [] as string[]), this.storage.list(INDEX).catch(() => [] as string[])]);
    for (const n of names[0]) if (n.endsWith(EVENTS_SUFFIX)) ids.add(n.slice(0, -EVENTS_SUFFIX.length));
    for (const n of names[1]) if (n.endsWith(META_SUFFIX)) ids.add(n.slice(0, -META_SUFFIX.length));
    const sorted = [...ids].filter((id) => isValidSessionId(id));
    sorted.sort();
    const out: CatalogEntry[] = new Array(sorted.length);
    // Bounded concurrency: thousands of sessions must not open thousands of files at once.
    let next = 0;
    const work = async () => {
      while (next < sorted.length) {
        const i = next++;
        const id = sorted[i] as string;
        try {
          out[i] = this.catalogEntry(id, await this.catalogView(sessionKeys(id)));
        } catch (err) {
          // A bad session never fails the catalog.
          out[i] = this.catalogEntry(id, needsRepair(sessionKeys(id), { code: 'internal', message: `cannot be read: ${(err as Error).message}` }, null));
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(16, sorted.length) }, work));
    return out;
  }

  /** One session's catalog entry, from its objects (after its writer's last append); `session_not_found` when absent. */
  async info(id: string): Promise<CatalogEntry> {
    const paths = sessionKeys(id);
    await this.view(id);
    if ((await this.committed(id)) !== undefined) this.views.delete(id);
    return this.catalogEntry(id, (await this.loadStamped(paths)).state);
  }
}
