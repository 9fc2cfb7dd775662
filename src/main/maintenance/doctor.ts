/**
 * `doctor`: diagnose sessions, reading only. The quick check is exactly the
 * normal path's (`loadSessionState`, bounded reads), plus first-frame
 * discovery for sessions whose sidecars are unusable. `--deep` adds one full
 * scan of the log (`analyzeLog`: checksums, row rules, seq continuity) and
 * compares the entry sidecar with it line by line.
 */
import type { SessionPaths } from '../paths.js';
import { isValidSessionId } from '../paths.js';
import type { StorageBackend } from '../../storage/backend.js';
import { EVENTS_SUFFIX, INDEX, META_SUFFIX, SESSIONS, projectionKey, sessionKeys } from '../../storage/layout.js';
import { localFiles, storageAt, type StorageTarget } from '../../storage/local/local-backend.js';
import { loadSessionState, type SessionState, type SessionStatus, type StateProblem } from '../session-state.js';
import { analyzeLog } from './analyze.js';
import { SidecarComparer } from './compare.js';
import { discoverSession } from './discover.js';
import { corruptIssue } from './reindex.js';
import { ProjectionChecker, type ProjectionFiles } from './projection-check.js';

/** The session's projection files, read only (ranged reads through the seam; nothing is created). */
function projectionFiles(storage: StorageBackend, keys: Pick<SessionPaths, 'projections'>): ProjectionFiles {
  return {
    size: async (name) => (await storage.stat(projectionKey(keys, name)))?.size ?? null,
    read: async (name, position, length) => (await storage.read(projectionKey(keys, name), position, position + length)) ?? Buffer.alloc(0),
  };
}

export type Severity = SessionStatus;

export interface DoctorIssue {
  code: string;
  severity: Severity;
  message: string;
  /** Byte offset: in the log, or in the entry sidecar for `entries_*` codes. */
  offset?: number;
  fromSeq?: number;
  toSeq?: number;
}

export type SidecarState = 'fresh' | 'stale' | 'missing' | 'broken';

export interface DoctorReport {
  id: string;
  status: SessionStatus;
  /** fresh: metadata fingerprint matches the log; stale: trusted but behind (caught up in memory, or the log was touched); missing/broken: unusable. */
  sidecars: SidecarState;
  deep: boolean;
  createdAt: number | null;
  /** Logical events (next seq): from the sidecars, or from the scan with --deep. */
  eventCount: number | null;
  /** Frames, header included. */
  frameCount: number | null;
  logSize: number;
  /** Log bytes the entry sidecar covers (served). */
  indexedLength: number | null;
  /** End of the last frame known good: the last indexed frame, or with --deep the last frame that decoded. */
  lastGoodOffset: number | null;
  issues: DoctorIssue[];
}

export interface DoctorOptions {
  deep?: boolean;
  /** Deep scan progress: log bytes scanned of `total`, for session `id`. */
  onProgress?: (bytes: number, total: number, id: string) => void;
}

const RANK: Record<SessionStatus, number> = { ok: 0, degraded: 1, repair_required: 2 };

export function worst(a: SessionStatus, b: SessionStatus): SessionStatus {
  return RANK[a] >= RANK[b] ? a : b;
}

function fromProblem(p: StateProblem, severity: Severity): DoctorIssue {
  const i: DoctorIssue = { code: p.code, severity, message: p.message };
  if (p.offset !== undefined) i.offset = p.offset;
  if (p.fromSeq !== undefined) i.fromSeq = p.fromSeq;
  if (p.toSeq !== undefined) i.toSeq = p.toSeq;
  return i;
}

function sidecarState(s: SessionState): SidecarState {
  if (s.status === 'repair_required') {
    const code = s.problems[0]?.code;
    return code === 'entries_missing' || code === 'meta_missing' || code === 'create_interrupted' ? 'missing' : 'broken';
  }
  return s.fingerprintFresh ? 'fresh' : 'stale';
}

/** Diagnose one session (`paths`: its keys in `storage`; default: local files, the keys paths). Never writes. */
export async function diagnoseSession(paths: SessionPaths, opts: DoctorOptions = {}, storage: StorageBackend = localFiles): Promise<DoctorReport> {
  const state = await loadSessionState(paths, storage);
  const repairNeeded = state.status === 'repair_required';
  const report: DoctorReport = {
    id: paths.id,
    status: state.status,
    sidecars: sidecarState(state),
    deep: Boolean(opts.deep),
    createdAt: state.meta?.createdAt ?? null,
    eventCount: repairNeeded ? null : state.nextSeq,
    frameCount: repairNeeded ? null : state.frameCount,
    logSize: state.logSize,
    indexedLength: repairNeeded ? null : state.indexedLength,
    lastGoodOffset: repairNeeded ? null : state.indexedLength,
    issues: state.problems.map((p) => fromProblem(p, p.code === 'unindexed_tail' || p.code === 'corrupt_frame' || p.code === 'recorded_issue' ? 'degraded' : state.status)),
  };
  if (repairNeeded) {
    const d = await discoverSession(paths, storage);
    report.createdAt = d.createdAt;
    const code = state.problems[0]?.code;
    if (d.reason !== undefined && code !== 'log_missing' && code !== 'create_interrupted') {
      report.issues.push({ code: 'header_invalid', severity: 'repair_required', message: d.reason, offset: 0 });
    }
  }
  if (!opts.deep || state.problems[0]?.code === 'log_missing') return report;

  // Deep: one full scan, compared with the entry sidecar line by line.
  // The sidecar's trusted lines (a partial last line a crash left is reported, not compared).
  const comparer = await SidecarComparer.open(storage, paths.entries, repairNeeded ? Infinity : state.entriesSize);
  const progress = opts.onProgress;
  const onProgress = progress ? (b: number): void => progress(b, state.logSize, paths.id) : undefined;
  // And the projections, against the same frames (those the sidecar indexes).
  const projections = await ProjectionChecker.open(projectionFiles(storage, paths));
  const a = await analyzeLog(
    paths.events,
    {
      onProgress,
      onEntry: async (e, corrupt) => {
        if (e.offset < state.indexedLength) await projections.check(e, corrupt);
        await comparer.check(e, corrupt);
      },
    },
    storage,
  );
  const cmp = await comparer.finish();
  const issues = report.issues.filter((i) => i.code !== 'unindexed_tail' && i.code !== 'corrupt_frame' && i.code !== 'header_invalid');
  const add = (i: DoctorIssue): void => {
    issues.push(i);
  };
  report.eventCount = a.eventCount;
  report.frameCount = a.frameCount;
  report.lastGoodOffset = a.lastGoodOffset;
  if (a.header === null) {
    // An interrupted create has no header yet by nature: its own issue says so.
    if (state.problems[0]?.code !== 'create_interrupted') add({ code: 'header_invalid', severity: 'repair_required', message: a.headerFault ?? 'no header frame', offset: 0 });
  } else {
    const recorded = new Set((state.meta?.issues ?? []).map((i) => i.offset));
    for (const c of a.corrupt) {
      const msg = corruptIssue(c).message + (recorded.has(c.offset) ? '' : ' (not recorded in the metadata: run repair)');
      add({ code: 'corrupt_frame', severity: 'degraded', message: msg, offset: c.offset, fromSeq: c.fromSeq, toSeq: c.toSeq });
    }
    if (a.tail !== null) {
      const what = a.tail.clearlyInvalid ? 'repair cuts it' : 'repair keeps it for a human';
      add({ code: `tail_${a.tail.kind}`, severity: 'degraded', message: `invalid tail of ${a.logSize - a.tail.offset} bytes at offset ${a.tail.offset} is not served (${what}): ${a.tail.message}`, offset: a.tail.offset, fromSeq: a.tail.seq });
    }
    if (cmp.present && !repairNeeded) {
      if (cmp.mismatch !== null) {
        add({ code: cmp.extraLines > 0 ? 'entries_past_valid_log' : 'entries_disagree', severity: 'repair_required', message: cmp.mismatch.message, offset: cmp.mismatch.offset });
      } else if (cmp.prefix && !cmp.exact) {
        const from = state.indexedLength;
        add({ code: 'unindexed_frames', severity: 'degraded', message: `${cmp.scanned - cmp.matched} valid frame(s) past offset ${from} are not indexed yet (the writer indexes them when it opens the session; reindex does too)`, offset: from, fromSeq: state.nextSeq, toSeq: a.eventCount });
      } else if (!cmp.exact) {
        add({ code: 'entries_disagree', severity: 'repair_required', message: 'the entry sidecar does not list the frames of the log', offset: 0 });
      }
    }
  }
  for (const p of await projections.finish()) {
    add({ code: 'projection_invalid', severity: 'degraded', message: `projection ${p.file} fails verification: ${p.message} (pages do not use what they cannot prove; reindex rebuilds it)` });
  }
  report.issues = issues;
  report.status = issues.reduce<SessionStatus>((s, i) => worst(s, i.severity), repairNeeded ? 'repair_required' : 'ok');
  return report;
}

/**
 * Session ids of a store, sorted: every `sessions/<id>.events`, plus ids
 * that only have a metadata sidecar left (their log is missing: doctor
 * reports them rather than forgetting them).
 */
export async function listSessionIds(target: StorageTarget): Promise<string[]> {
  const storage = storageAt(target);
  const ids = new Set<string>();
  const scan = async (folder: string, suffix: string): Promise<void> => {
    for (const n of await storage.list(folder)) {
      if (!n.endsWith(suffix)) continue;
      const id = n.slice(0, -suffix.length);
      if (isValidSessionId(id)) ids.add(id);
    }
  };
  await scan(SESSIONS, EVENTS_SUFFIX);
  await scan(INDEX, META_SUFFIX);
  return [...ids].sort();
}

/** Whether anything of session `id` is stored (its log or a sidecar). */
export async function sessionStored(target: StorageTarget, id: string): Promise<boolean> {
  const storage = storageAt(target);
  const k = sessionKeys(id);
  const found = await Promise.all([k.events, k.meta, k.entries].map((key) => storage.stat(key)));
  return found.some((s) => s !== null);
}

/** `target`: a store's backend, or a local data directory. */
export async function diagnose(target: StorageTarget, id: string | undefined, opts: DoctorOptions = {}): Promise<DoctorReport[]> {
  const storage = storageAt(target);
  const ids = id === undefined ? await listSessionIds(storage) : [id];
  const out: DoctorReport[] = [];
  for (const sid of ids) out.push(await diagnoseSession(sessionKeys(sid), opts, storage));
  return out;
}
