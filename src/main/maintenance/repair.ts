/**
 * `repair`: plan from one full scan of the log, then (unless dry-run) back
 * the log up, cut only a clearly invalid tail, and reindex, all under the
 * writer lock, through the storage seam (any backend).
 *
 * - The log is backed up (a copy as a new object beside it, durable, never
 *   overwriting one: storage/replacement.ts) before it is modified, and only then:
 *   rebuilding sidecars alone never needs a backup (they are derived).
 * - Cut: the tail `analyzeLog` calls clearly invalid (a torn frame, an
 *   oversized length, undecodable last frames, garbage with no frame after).
 *   A corrupt frame in the middle is kept (the session stays degraded); a
 *   seq gap or garbage followed by what may be frames is left for a human.
 * - Reindex when the log was cut, or the sidecars do not agree with the scan
 *   (missing, malformed, stale, not matching line by line, metadata issues
 *   differing from the corrupt ranges found).
 * - An interrupted create (no metadata, the log at most a header frame cut
 *   short) is removed, after a backup of its bytes: the id is free again. One
 *   with a complete header frame is reindexed into an empty session.
 * - Nothing to do when none of that applies: a second run changes nothing
 *   and makes no second backup.
 */
import { PagerError } from '../../core/errors.js';
import { localFiles } from '../../storage/local/local-backend.js';
import type { Lease, StorageBackend } from '../../storage/backend.js';
import { backupKey } from '../../storage/layout.js';
import { copyObject } from '../../storage/replacement.js';
import type { SessionPaths } from '../paths.js';
import { interruptedCreate, loadSessionState, type SessionState } from '../session-state.js';
import { analyzeLog, type LogAnalysis } from './analyze.js';
import { SidecarComparer, type SidecarComparison } from './compare.js';
import { corruptIssue, reindexSession, sessionExists, type ReindexResult } from './reindex.js';

export type RepairStep =
  /** `key`: the backup's key in the session's storage (local: a file beside the log). */
  | { kind: 'backup'; key: string }
  | { kind: 'truncate'; from: number; to: number; bytes: number; reason: string }
  | { kind: 'reindex'; reason: string }
  /** An interrupted create with no complete header (interrupted-create.ts): the log and what it left go, the id is free. */
  | { kind: 'remove'; reason: string };

export interface RepairPlan {
  id: string;
  steps: RepairStep[];
  /** What repair keeps as it is and why (kept corrupt frames, a tail for a human). */
  kept: string[];
  /** Problems repair cannot fix. */
  unfixable: string[];
  /** State before repair. */
  before: SessionState;
  analysis: LogAnalysis;
  sidecar: SidecarComparison;
}

export interface RepairOutcome {
  plan: RepairPlan;
  dryRun: boolean;
  /** Steps carried out (empty on dry run or when there was nothing to do). */
  done: RepairStep[];
  /** State after repair (before, on dry run). */
  after: SessionState;
  reindex: ReindexResult | null;
}

export interface RepairOptions {
  dryRun?: boolean;
  onProgress?: (bytes: number) => void;
  /** Clock for the backup name, for tests. */
  now?: () => number;
}


/** Why the sidecars do not match what a reindex would write, or null when they do. */
function sidecarsDiffer(state: SessionState, a: LogAnalysis, cmp: SidecarComparison): string | null {
  if (state.status === 'repair_required') return state.reasons[0] ?? 'session needs repair';
  if (!cmp.exact) {
    if (cmp.mismatch !== null) return cmp.mismatch.message;
    if (cmp.prefix) return `the log has ${cmp.scanned - cmp.matched} valid frame(s) past the entry sidecar`;
    return 'the entry sidecar does not list every frame';
  }
  const m = state.meta;
  if (m === null) return 'metadata sidecar is unusable';
  if (m.nextSeq !== a.eventCount || m.frameCount !== a.frameCount || m.indexedLength !== a.indexedEnd) return 'metadata counts differ from the log';
  const want = a.corrupt.map((c) => JSON.stringify(corruptIssue(c))).join('\n');
  const have = m.issues.map((i) => JSON.stringify(i)).join('\n');
  if (want !== have) return 'metadata issues differ from the corrupt frames found';
  if (state.metaStale) return 'metadata sidecar is stale';
  if (!state.fingerprintFresh) return "the log's size or mtime differs from the metadata fingerprint";
  return null;
}

/** Scan the log and the sidecars and decide what repair would do. Writes nothing. */
export async function planRepair(paths: SessionPaths, opts: RepairOptions = {}, storage: StorageBackend = localFiles): Promise<RepairPlan> {
  if (!(await sessionExists(paths, storage))) throw new PagerError('session_not_found', `session ${paths.id} not found`);
  const before = await loadSessionState(paths, storage);
  const comparer = await SidecarComparer.open(storage, paths.entries, before.status === 'repair_required' ? Infinity : before.entriesSize);
  const analysis = await analyzeLog(paths.events, { onProgress: opts.onProgress, onEntry: (e, corrupt) => comparer.check(e, corrupt) }, storage);
  const sidecar = await comparer.finish();
  const plan: RepairPlan = { id: paths.id, steps: [], kept: [], unfixable: [], before, analysis, sidecar };
  const now = opts.now ?? Date.now;
  const interrupted = before.problems[0]?.code === 'create_interrupted' && analysis.header === null ? await interruptedCreate(paths, storage) : null;
  if (interrupted !== null) {
    // Nothing was ever acknowledged; bytes of a cut header are still backed up, an empty file is not.
    if (interrupted.logSize > 0) plan.steps.push({ kind: 'backup', key: backupKey(paths, now()) });
    plan.steps.push({ kind: 'remove', reason: interrupted.message });
    return plan;
  }
  if (analysis.header === null) {
    plan.unfixable.push(analysis.headerFault ?? 'the log has no header frame');
    return plan;
  }
  const tail = analysis.tail;
  let cut = false;
  if (tail !== null && tail.clearlyInvalid) {
    plan.steps.push({ kind: 'backup', key: backupKey(paths, now()) });
    plan.steps.push({ kind: 'truncate', from: tail.offset, to: analysis.logSize, bytes: analysis.logSize - tail.offset, reason: `${tail.kind}: ${tail.message}` });
    cut = true;
  } else if (tail !== null) {
    plan.unfixable.push(`tail at offset ${tail.offset} kept (${tail.kind}): ${tail.message}`);
  }
  for (const c of analysis.corrupt) plan.kept.push(corruptIssue(c).message);
  const differ = cut ? 'the log was cut' : sidecarsDiffer(before, analysis, sidecar);
  if (differ !== null) plan.steps.push({ kind: 'reindex', reason: differ });
  return plan;
}

async function removeSession(paths: SessionPaths, storage: StorageBackend): Promise<void> {
  // The log first: without it nothing is left that could look like a session.
  await storage.remove(paths.events);
  await storage.remove(paths.entries);
  await storage.removeAll(paths.projections);
}

async function truncateLog(paths: SessionPaths, to: number, storage: StorageBackend): Promise<void> {
  const log = await storage.openWritable(paths.events, 'existing');
  try {
    await log.truncate(to);
    await log.sync();
  } finally {
    await log.close();
  }
}

/** `paths`: the session's keys in `storage` (default: local files, the keys paths). */
export async function repairSession(paths: SessionPaths, opts: RepairOptions = {}, storage: StorageBackend = localFiles): Promise<RepairOutcome> {
  if (opts.dryRun) {
    const plan = await planRepair(paths, opts, storage);
    return { plan, dryRun: true, done: [], after: plan.before, reindex: null };
  }
  if (!(await sessionExists(paths, storage))) throw new PagerError('session_not_found', `session ${paths.id} not found`);
  const lock: Lease = await storage.lease(paths.lock, `session ${paths.id}`);
  try {
    const plan = await planRepair(paths, opts, storage);
    const done: RepairStep[] = [];
    let reindex: ReindexResult | null = null;
    for (const step of plan.steps) {
      // A step that fails stops repair there: the log is never cut without its backup in place.
      if (step.kind === 'backup') await copyObject(storage, paths.events, step.key);
      else if (step.kind === 'truncate') await truncateLog(paths, step.from, storage);
      else if (step.kind === 'remove') await removeSession(paths, storage);
      else reindex = await reindexSession(paths, { locked: true, onProgress: opts.onProgress }, storage);
      done.push(step);
    }
    const after = await loadSessionState(paths, storage);
    return { plan, dryRun: false, done, after, reindex };
  } finally {
    await lock.release();
  }
}
