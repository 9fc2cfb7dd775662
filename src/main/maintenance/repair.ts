/**
 * `repair`: plan from one full scan of the log, then (unless dry-run) back
 * the log up, cut only a clearly invalid tail, and reindex, all under the
 * writer lock.
 *
 * - The log is backed up (copy, fsync) before it is modified, and only then:
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
import { constants as fsc, promises as fsp } from 'node:fs';
import { dirname } from 'node:path';
import { PagerError } from '../core/errors.js';
import { localFiles, syncFolder } from '../../storage/local/local-backend.js';
import type { Lease } from '../../storage/backend.js';
import type { SessionPaths } from '../paths.js';
import { interruptedCreate, loadSessionState, type SessionState } from '../session-state.js';
import { analyzeLog, type LogAnalysis } from './analyze.js';
import { SidecarComparer, type SidecarComparison } from './compare.js';
import { corruptIssue, reindexSession, sessionExists, type ReindexResult } from './reindex.js';

export type RepairStep =
  | { kind: 'backup'; path: string }
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

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace('.', '');
}

export function backupPath(paths: SessionPaths, ms: number): string {
  return `${paths.events}.bak-${stamp(ms)}`;
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
export async function planRepair(paths: SessionPaths, opts: RepairOptions = {}): Promise<RepairPlan> {
  if (!(await sessionExists(paths))) throw new PagerError('session_not_found', `session ${paths.id} not found`);
  const before = await loadSessionState(paths);
  const comparer = await SidecarComparer.open(paths.entries, before.status === 'repair_required' ? Infinity : before.entriesSize);
  const analysis = await analyzeLog(paths.events, { onProgress: opts.onProgress, onEntry: (e, corrupt) => comparer.check(e, corrupt) });
  const sidecar = await comparer.finish();
  const plan: RepairPlan = { id: paths.id, steps: [], kept: [], unfixable: [], before, analysis, sidecar };
  const now = opts.now ?? Date.now;
  const interrupted = before.problems[0]?.code === 'create_interrupted' && analysis.header === null ? await interruptedCreate(paths) : null;
  if (interrupted !== null) {
    // Nothing was ever acknowledged; bytes of a cut header are still backed up, an empty file is not.
    if (interrupted.logSize > 0) plan.steps.push({ kind: 'backup', path: backupPath(paths, now()) });
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
    plan.steps.push({ kind: 'backup', path: backupPath(paths, now()) });
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

async function backupLog(src: string, dest: string): Promise<void> {
  await fsp.copyFile(src, dest, fsc.COPYFILE_EXCL);
  const fh = await fsp.open(dest, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
  await syncFolder(dirname(dest));
}

async function removeSession(paths: SessionPaths): Promise<void> {
  // The log first: without it nothing is left that could look like a session.
  await fsp.rm(paths.events, { force: true });
  await syncFolder(dirname(paths.events));
  await fsp.rm(paths.entries, { force: true });
  await fsp.rm(paths.projections, { recursive: true, force: true });
}

async function truncateLog(path: string, to: number): Promise<void> {
  const fh = await fsp.open(path, 'r+');
  try {
    await fh.truncate(to);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function repairSession(paths: SessionPaths, opts: RepairOptions = {}): Promise<RepairOutcome> {
  if (opts.dryRun) {
    const plan = await planRepair(paths, opts);
    return { plan, dryRun: true, done: [], after: plan.before, reindex: null };
  }
  if (!(await sessionExists(paths))) throw new PagerError('session_not_found', `session ${paths.id} not found`);
  const lock: Lease = await localFiles.lease(paths.lock, `session ${paths.id}`);
  try {
    const plan = await planRepair(paths, opts);
    const done: RepairStep[] = [];
    let reindex: ReindexResult | null = null;
    for (const step of plan.steps) {
      if (step.kind === 'backup') await backupLog(paths.events, step.path);
      else if (step.kind === 'truncate') await truncateLog(paths.events, step.from);
      else if (step.kind === 'remove') await removeSession(paths);
      else reindex = await reindexSession(paths, { locked: true, onProgress: opts.onProgress });
      done.push(step);
    }
    const after = await loadSessionState(paths);
    return { plan, dryRun: false, done, after, reindex };
  } finally {
    await lock.release();
  }
}
