/**
 * The crash fault suite (issue 16): a real server process is SIGKILLed at
 * random moments while clients create sessions and append batches, again and
 * again. After every kill:
 *
 * - doctor --deep and repair --dry-run agree on every session (a tail doctor
 *   says repair cuts is exactly what repair would cut, and nothing else);
 * - on the restarted server, every acknowledged event is there, exactly, and
 *   only events that were sent follow it; every page walked from the tail
 *   equals the reference reader's page of the log;
 * - a create that was not acknowledged left either nothing, a session, or an
 *   interrupted create, and PUT succeeds on its id;
 * - appends continue on every session (the next trial's load): the first
 *   append after a kill may be told seq_conflict (complete frames of a cut
 *   write the writer indexed on open: only events that were sent) or
 *   repair_required (a write cut inside a frame: doctor said repair cuts
 *   it; the suite repairs and carries on), and counts both.
 *
 * A random kill moment almost never lands inside a write (a write is one
 * system call), so about half the trials also end with a torn write made on
 * purpose: a writer in its own process (test/helpers/torn-append-child.mjs)
 * that SIGKILLs itself after writing only part of an append's frames or of
 * its entry lines. Its outcome is known exactly and asserted: what is served
 * (nothing of that write, or the frames of its whole entry lines), what
 * doctor says, what the first append is told (repair_required for a torn
 * frame, seq_conflict naming the end of the complete frames otherwise),
 * where repair cuts, and what is kept.
 *
 * CI runs 24 trials, every time. What keeps a trial cheap without checking
 * less: the server starts without its warm-ups (it must answer, not be
 * fast), and a check after a kill walks the pages back only over what the
 * last check did not prove (checkPages: the log's bytes it proved are
 * hashed, and are the same bytes), one page inside that proven prefix as
 * well; the last check of every session walks it whole. The long mode is
 * the same file by hand:
 *
 *   SESSION_PAGER_CRASH_TRIALS=1000 npx vitest run test/crash-faults.test.ts
 *
 * SESSION_PAGER_CRASH_SEED replays a run (the seed is printed on failure).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { unpack } from 'msgpackr';
import { afterAll, describe, expect, it } from 'vitest';
import { expandRecords } from '../src/core/chunk-codec.js';
import type { Page, SessionEvent } from '../src/core/types.js';
import { mulberry32 } from '../src/main/gen/prng.js';
import { diagnose, listSessionIds } from '../src/main/maintenance/doctor.js';
import { planRepair, repairSession } from '../src/main/maintenance/repair.js';
import { sessionPaths } from '../src/main/paths.js';
import { decodeWholeLog, referencePage } from '../src/main/reference-reader.js';
import { loadSessionState } from '../src/main/session-state.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { SHEDDING_OFF } from './helpers/server-process.js';
import { makeEvents, sleep, until } from './server-helpers.js';

const ROOT = resolve(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'session-pager.js');
const TORN_CHILD = join(ROOT, 'test', 'helpers', 'torn-append-child.mjs');
const TOKEN = 'crash-token-123456';
/**
 * Trials: 24 in CI, every run (a trial is ~2 s on a quiet 2-core machine: the server's start,
 * the checks of what the kill left, the load, a torn write every other trial, doctor and repair;
 * docs/reliability.md has the split); the long mode is a count given by hand.
 */
const TRIALS = Number(process.env.SESSION_PAGER_CRASH_TRIALS ?? 24);
const SEED = Number(process.env.SESSION_PAGER_CRASH_SEED ?? Date.now() % 1_000_000_007);
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** What the clients know of a session: events acknowledged, and sent at all (acknowledged or not). */
interface Model {
  id: string;
  format: 'jsonl' | 'binary';
  /** The PUT was answered 201 (else it was cut by the kill). */
  createAcked: boolean;
  acked: number;
  sent: number;
  busy: boolean;
  /** Written to since its last check. */
  dirty: boolean;
  /**
   * Most events any request ever sent (never rewound): frames of a cut write stay in the log
   * unindexed until a writer opens the session and indexes them, maybe trials later.
   */
  maxSent: number;
  /** A torn write made on purpose (injectTornWrite) whose outcome the first append after it must show. */
  torn?: TornOutcome;
  /** What its last check proved (checkPages). */
  checked?: Checked;
}

/** What a torn write must lead to, computed from the bytes it wrote. */
interface TornOutcome {
  target: 'log' | 'entries';
  /** Next seq pages serve until a writer opens the session. */
  servedSeq: number;
  /** expectedSeq of the seq_conflict the first append gets, or null: it gets repair_required (a torn frame). */
  expectedSeq: number | null;
  /** Where repair cuts the log (the end of the write's complete frames), when a frame is torn. */
  cutAt: number | null;
  /** Next seq after that repair: the complete frames before the cut are kept. */
  keptSeq: number;
}

interface Figures {
  trials: number;
  creates: number;
  createsAcked: number;
  createsRetaken: number;
  appendsAcked: number;
  eventsAcked: number;
  unackedSeen: number;
  pagesChecked: number;
  tornTailsRepaired: number;
  tailsIndexedByWriter: number;
  tornWritesInjected: number;
  tornFramesInjected: number;
  partialEntryLinesInjected: number;
  lost: number;
  /** Sessions doctor --deep and repair --dry-run were run on and agreed (a session is skipped in a trial that left its files as they were). */
  sessionsDoctored: number;
  /** Where the run's seconds went, by part of a trial: what to cut when the CI budget is tight. */
  secondsBy: { start: number; checks: number; load: number; torn: number; doctor: number; final: number };
}

/** Adds the seconds since `t` to `figures.secondsBy[part]`; returns now. */
function spent(figures: Figures, part: keyof Figures['secondsBy'], t: number): number {
  const now = performance.now();
  figures.secondsBy[part] = Math.round((figures.secondsBy[part] + (now - t) / 1000) * 100) / 100;
  return now;
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The server on `dataDir`, load sheds and warm-ups off (SESSION_PAGER_JIT_WARMUP: the worker's ~1 s of CPU competed with every trial's start and load). */
async function startServer(dataDir: string): Promise<{ url: string; child: ChildProcess; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--data', dataDir, '--port', '0', '--workers', '1', '--log-level', 'fatal'], {
    // No load sheds (SHEDDING_OFF): a trial's append or page shed 503 on a loaded machine is not what is tested.
    env: { ...process.env, ...SHEDDING_OFF, SESSION_PAGER_TOKEN: TOKEN, SESSION_PAGER_PAGE_WARMUP: '0', SESSION_PAGER_JIT_WARMUP: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const exited = new Promise((r) => child.on('exit', r));
  void exited.then(() => children.delete(child));
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const url = await until('the banner', () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1], 60_000);
  return { url, child, exited };
}

async function call(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url + path, {
      method,
      headers: body === undefined ? AUTH : { ...AUTH, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const json = text.length > 0 ? JSON.parse(text) : null;
    // Shed (event-loop lag on a loaded machine): nothing was done; retry after Retry-After, as a client would.
    if (res.status === 503 && json?.error?.code === 'overloaded' && attempt < 30) {
      await sleep(1000 * Number(res.headers.get('retry-after') ?? 1));
      continue;
    }
    return { status: res.status, json };
  }
}

/**
 * expect(got).toEqual(want), the cheap way first: node's strict deep equality is many times
 * faster than the matcher on pages of thousands of records and never passes what the matcher
 * would fail; only when it says no (a difference, or just an undefined-valued key the matcher
 * ignores) does the matcher decide, with its diff.
 */
function expectEqual(got: unknown, want: unknown, what?: string): void {
  if (!isDeepStrictEqual(got, want)) expect(got, what).toEqual(want);
}

/**
 * What the last check proved of a session: its events [0, seq) exactly as sent, from the log's
 * first `logBytes` bytes (the indexed length then), whose hash is `logHash`. The log is canonical
 * and append-only: while those bytes are unchanged, so are those events, and a later check need
 * only walk the pages back over what follows them.
 */
interface Checked {
  seq: number;
  logBytes: number;
  logHash: string;
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/**
 * The session as the restarted server serves it: every acknowledged event is there and only
 * events that were sent follow; the pages walked from the tail (pinned) each equal the reference
 * reader's page of the log's indexed bytes, and their events are exactly those sent. The walk
 * stops once it passes the last check's proven prefix (`m.checked`) when the log's bytes up to
 * it are unchanged (one more page, at a random cut inside that prefix, checked as well); it walks
 * to seq 0 otherwise, and always when `full`.
 */
async function checkPages(url: string, dataDir: string, m: Model, figures: Figures, full = false): Promise<number> {
  const info = await call(url, 'GET', `/v1/sessions/${m.id}`);
  expect(info.status, `${m.id}: ${JSON.stringify(info.json)}`).toBe(200);
  expect(info.json.status, `${m.id}: ${JSON.stringify(info.json.reasons)}`).not.toBe('repair_required');
  const next = info.json.nextSeq as number;
  const indexed = info.json.indexedLength as number;
  // Every acknowledged event is there; only events that were sent follow.
  expect(next, m.id).toBeGreaterThanOrEqual(m.acked);
  expect(next, m.id).toBeLessThanOrEqual(m.maxSent);
  if (next > m.acked) figures.unackedSeen += next - m.acked;
  const log = readFileSync(sessionPaths(dataDir, m.id).events);
  const ref = decodeWholeLog(log, indexed);
  const c = m.checked;
  const proven = !full && c !== undefined && c.seq <= next && c.logBytes <= indexed && sha256(log.subarray(0, c.logBytes)) === c.logHash ? c.seq : 0;
  const page = async (params: { beforeSeq: number; maxMessages: number }): Promise<Page> => {
    const q = `throughSeq=${next - 1}&beforeSeq=${params.beforeSeq}&maxMessages=${params.maxMessages}`;
    const res = await call(url, 'GET', `/v1/sessions/${m.id}/page?${q}`);
    expect(res.status, `${m.id} ${q}: ${JSON.stringify(res.json)}`).toBe(200);
    expectEqual(res.json as Page, referencePage(ref, m.id, { throughSeq: next - 1, ...params }), `${m.id} ${q}`);
    figures.pagesChecked++;
    return res.json as Page;
  };
  const events: SessionEvent[] = [];
  let before = next;
  const maxMessages = 10 + (next % 90);
  // `before > proven`: a page that ends at the proven seq would only re-read what is proven.
  while (before > 0 && (before > proven || proven === 0)) {
    const p = await page({ beforeSeq: before, maxMessages });
    events.unshift(...expandRecords(p.records));
    before = p.fromSeq;
  }
  expectEqual(events, makeEvents(before, next - before), m.id);
  if (proven > 0) {
    // Pages inside the proven prefix are still the server's to get right: one at a random cut.
    const p = await page({ beforeSeq: 1 + ((next * 7919) % proven), maxMessages });
    expectEqual(expandRecords(p.records), makeEvents(p.fromSeq, p.toSeq - p.fromSeq), m.id);
  }
  m.checked = { seq: next, logBytes: indexed, logHash: sha256(log.subarray(0, indexed)) };
  return next;
}

/** Length of the whole frame at `at` when it ends by `end` (JSONL: a line; binary: 16-byte SPF2 header + payload), else null. */
function wholeFrameLength(buf: Buffer, at: number, end: number): number | null {
  if (at >= end) return null;
  if (buf[at] === 0x7b) {
    const nl = buf.indexOf(0x0a, at);
    return nl !== -1 && nl < end ? nl + 1 - at : null;
  }
  if (at + 16 > end) return null;
  const len = 16 + buf.readUInt32LE(at + 8);
  return at + len <= end ? len : null;
}

/** Logical events one whole frame holds (a packed row holds dt.length + 1). */
function eventsOfFrame(frame: Buffer): number {
  const r = (frame[0] === 0x7b ? JSON.parse(frame.toString('utf8')) : unpack(frame.subarray(16))) as { seq0?: number; data: { dt?: unknown[] } };
  return r.seq0 !== undefined ? (r.data.dt as unknown[]).length + 1 : 1;
}

/**
 * With the server down: an append of `n` events to `m` by a writer that SIGKILLs itself part-way
 * through its write of the log or of the entry lines; records the exact outcome on the model and
 * checks what doctor says of it at once. False when the session cannot take it now (it needs repair).
 */
async function injectTornWrite(dataDir: string, m: Model, target: 'log' | 'entries', fraction: number, n: number): Promise<boolean> {
  const p = sessionPaths(dataDir, m.id);
  // Where a writer stands: opening indexes the complete frames a kill left, as the server's writer would.
  let from: number;
  try {
    const w = await SessionWriter.open(dataDir, m.id);
    from = w.nextSeq;
    await w.close();
  } catch (err) {
    if ((err as { code?: string }).code === 'repair_required') return false;
    throw err;
  }
  const child = spawn(process.execPath, [TORN_CHILD, dataDir, m.id, target, String(fraction)], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_code, signal) => r(signal)));
  child.stdin.end(JSON.stringify(makeEvents(from, n)));
  const signal = await exited;
  children.delete(child);
  expect(signal, `torn writer: ${out} ${err}`).toBe('SIGKILL');
  const torn = JSON.parse(out.trim().split('\n')[0] as string) as { target: string; pos: number; cut: number; length: number };
  expect(torn.target).toBe(target);
  expect(torn.cut).toBeGreaterThan(0);
  expect(torn.cut).toBeLessThan(torn.length);
  m.acked = from;
  m.sent = from + n;
  m.maxSent = Math.max(m.maxSent, m.sent);
  m.dirty = true;
  if (target === 'log') {
    // The whole frames among the bytes written are unindexed; a frame cut short is a torn tail.
    const log = readFileSync(p.events);
    expect(log.length).toBe(torn.pos + torn.cut);
    let at = torn.pos;
    let kept = 0;
    for (let len = wholeFrameLength(log, at, log.length); len !== null; len = wholeFrameLength(log, at, log.length)) {
      kept += eventsOfFrame(log.subarray(at, at + len));
      at += len;
    }
    const cutShort = at < log.length;
    m.torn = { target, servedSeq: from, expectedSeq: cutShort ? null : from + kept, cutAt: cutShort ? at : null, keptSeq: from + kept };
  } else {
    // The frames are whole; the entry lines written whole index some of them, the last line is cut.
    const text = readFileSync(p.entries).subarray(torn.pos, torn.pos + torn.cut).toString('utf8');
    expect(text.endsWith('\n')).toBe(false);
    const whole = text.split('\n').slice(0, -1).reduce((k, l) => k + (JSON.parse(l) as { count: number }).count, 0);
    m.torn = { target, servedSeq: from + whole, expectedSeq: from + n, cutAt: null, keptSeq: from + n };
  }
  // Exactly what a reader and doctor see of it.
  const s = await loadSessionState(p);
  expect(s.status, `${m.id}: ${s.reasons.join('; ')}`).toBe('degraded');
  expect(s.nextSeq, m.id).toBe(m.torn.servedSeq);
  expect(s.problems.map((x) => x.code), m.id).toEqual(target === 'entries' ? ['entries_partial_tail', 'unindexed_tail'] : ['unindexed_tail']);
  const [report] = await diagnose(dataDir, m.id, { deep: true });
  const codes = report!.issues.map((i) => i.code).sort();
  if (m.torn.cutAt !== null) {
    const tail = report!.issues.find((i) => i.code.startsWith('tail_'));
    expect(tail?.offset, `${m.id}: ${JSON.stringify(report!.issues)}`).toBe(m.torn.cutAt);
    expect(tail?.message, m.id).toContain('(repair cuts it)');
  } else {
    expect(codes, `${m.id}: ${JSON.stringify(report!.issues)}`).toEqual(target === 'entries' ? ['entries_partial_tail', 'unindexed_frames'] : ['unindexed_frames']);
  }
  return true;
}

/**
 * What a session's files are now (each file's inode, size, mtime and ctime, projections
 * included): the same fingerprint means the same bytes doctor and repair saw last time.
 */
function fingerprint(dataDir: string, id: string): string {
  const p = sessionPaths(dataDir, id);
  const files = [p.events, p.meta, p.entries];
  try {
    for (const n of readdirSync(p.projections).sort()) files.push(join(p.projections, n));
  } catch {
    // no projections
  }
  return files
    .map((f) => {
      try {
        const st = statSync(f, { bigint: true });
        return `${f}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
      } catch {
        return `${f}:-`;
      }
    })
    .join('|');
}

/**
 * doctor --deep and repair --dry-run, on every session: they must agree. `agreed` holds the
 * fingerprint of each session when they last agreed on it: a session whose files have not
 * changed since (no trial wrote to it, no kill cut a write of it) is not scanned again, as its
 * verdict cannot have changed; every other session is (null: all of them).
 */
async function doctorAndRepairAgree(dataDir: string, agreed: Map<string, string> | null): Promise<number> {
  const reports = [];
  const prints = new Map<string, string>();
  for (const id of await listSessionIds(dataDir)) {
    const fp = fingerprint(dataDir, id);
    if (agreed?.get(id) === fp) continue;
    prints.set(id, fp);
    reports.push(...(await diagnose(dataDir, id, { deep: true })));
  }
  for (const r of reports) {
    const plan = await planRepair(sessionPaths(dataDir, r.id));
    const cuts = plan.steps.filter((s) => s.kind === 'truncate').map((s) => (s as { from: number }).from);
    const removes = plan.steps.some((s) => s.kind === 'remove');
    const said = r.issues.filter((i) => i.code.startsWith('tail_') && i.message.includes('(repair cuts it)')).map((i) => i.offset);
    expect(cuts, `${r.id}: ${JSON.stringify(r.issues)}`).toEqual(said);
    // A crash only ever leaves what a writer cut short: nothing repair would have to leave to a human.
    expect(plan.unfixable, r.id).toEqual([]);
    for (const i of r.issues) {
      expect(['tail_torn', 'tail_damaged', 'tail_garbage', 'tail_bad_length', 'unindexed_tail', 'unindexed_frames', 'entries_partial_tail', 'create_interrupted'], `${r.id}: ${i.code}: ${i.message}`).toContain(i.code);
    }
    if (r.issues.some((i) => i.code === 'create_interrupted')) expect(removes || plan.steps.some((s) => s.kind === 'reindex'), r.id).toBe(true);
    if (r.status === 'ok') expect(cuts, r.id).toEqual([]);
    agreed?.set(r.id, prints.get(r.id) as string);
  }
  return reports.length;
}

describe('crash fault suite: SIGKILL during creates and appends', () => {
  it(`keeps every acknowledged event over ${TRIALS} trials (seed ${SEED})`, { timeout: Math.max(600_000, TRIALS * 20_000) }, async () => {
    const rnd = mulberry32(SEED);
    const pick = (n: number) => Math.floor(rnd() * n);
    const dataDir = mkdtempSync(join(tmpdir(), 'sp-crash-'));
    dirs.push(dataDir);
    const models = new Map<string, Model>();
    const agreed = new Map<string, string>();
    const figures: Figures = { trials: 0, creates: 0, createsAcked: 0, createsRetaken: 0, appendsAcked: 0, eventsAcked: 0, unackedSeen: 0, pagesChecked: 0, tornTailsRepaired: 0, tailsIndexedByWriter: 0, tornWritesInjected: 0, tornFramesInjected: 0, partialEntryLinesInjected: 0, lost: 0, sessionsDoctored: 0, secondsBy: { start: 0, checks: 0, load: 0, torn: 0, doctor: 0, final: 0 } };
    let nextId = 0;
    const t0 = Date.now();

    for (let trial = 0; trial < TRIALS; trial++) {
      let tp = performance.now();
      const { url, child, exited } = await startServer(dataDir);
      tp = spent(figures, 'start', tp);
      // Check what the last kill left, on the restarted server.
      for (const m of models.values()) {
        if (!m.dirty) continue;
        m.dirty = false;
        if (!m.createAcked) {
          // A create cut by the kill: nothing, a session, or an interrupted create; PUT always takes the id then.
          const info = await call(url, 'GET', `/v1/sessions/${m.id}`);
          if (info.status === 200 && info.json.status !== 'repair_required') {
            m.createAcked = true;
          } else {
            if (info.status === 200) expect(info.json.reasons[0], m.id).toMatch(/^create was interrupted before it was acknowledged/);
            else expect(info.status, `${m.id}: ${JSON.stringify(info.json)}`).toBe(404);
            const again = await call(url, 'PUT', `/v1/sessions/${m.id}?format=${m.format}`, { title: m.id });
            expect(again.status, `${m.id}: ${JSON.stringify(again.json)}`).toBe(201);
            m.createAcked = true;
            figures.createsRetaken++;
          }
        }
        const next = await checkPages(url, dataDir, m, figures);
        // A torn write's frames are not served until a writer opens the session.
        if (m.torn !== undefined) expect(next, m.id).toBe(m.torn.servedSeq);
        // What the server holds is durable now; the client carries on from there.
        m.acked = next;
        m.sent = next;
      }

      tp = spent(figures, 'checks', tp);
      // Load: creates and appends from a few clients, until the kill.
      const ops: Promise<void>[] = [];
      let stop = false;
      const createStorm = rnd() < 0.3;
      const client = async (): Promise<void> => {
        while (!stop) {
          const ready = [...models.values()].filter((m) => m.createAcked && !m.busy);
          if (createStorm || ready.length === 0 || rnd() < 0.15) {
            const m: Model = { id: `c${nextId++}`, format: rnd() < 0.5 ? 'jsonl' : 'binary', createAcked: false, acked: 0, sent: 0, busy: true, dirty: true, maxSent: 0 };
            models.set(m.id, m);
            figures.creates++;
            try {
              const r = await call(url, 'PUT', `/v1/sessions/${m.id}?format=${m.format}`, { title: m.id, note: 'x'.repeat(pick(3000)) });
              if (r.status !== 201) throw new Error(`PUT ${m.id}: ${r.status} ${JSON.stringify(r.json)}`);
              m.createAcked = true;
              figures.createsAcked++;
            } catch (err) {
              if (!stop) throw err;
            } finally {
              m.busy = false;
            }
            continue;
          }
          const m = ready[pick(ready.length)] as Model;
          m.busy = true;
          m.dirty = true;
          const n = rnd() < 0.1 ? 500 + pick(2500) : 1 + pick(60);
          const from = m.sent;
          m.sent = from + n;
          m.maxSent = Math.max(m.maxSent, m.sent);
          try {
            const r = await call(url, 'POST', `/v1/sessions/${m.id}/events`, { events: makeEvents(from, n) });
            if (r.status === 409 && r.json.error.code === 'repair_required') {
              // Only a tail a write cut short, and doctor said repair cuts it: repair, then carry on.
              expect(r.json.error.message, m.id).toMatch(/invalid unindexed tail/);
              const torn = m.torn;
              m.torn = undefined;
              if (torn !== undefined) expect(torn.cutAt, `${m.id}: a torn write that left no torn frame`).not.toBeNull();
              m.sent = from;
              const out = await repairSession(sessionPaths(dataDir, m.id));
              expect(out.done.map((s) => s.kind)).toEqual(['backup', 'truncate', 'reindex']);
              if (torn !== undefined) expect((out.done[1] as { from: number }).from, m.id).toBe(torn.cutAt);
              figures.tornTailsRepaired++;
              // The complete frames of the cut write stay (repair keeps every valid frame): carry on after them.
              const next = await checkPages(url, dataDir, m, figures);
              if (torn !== undefined) expect(next, m.id).toBe(torn.keptSeq);
              m.acked = next;
              m.sent = next;
              continue;
            }
            if (r.status === 409 && r.json.error.code === 'seq_conflict' && from === m.acked && r.json.error.expectedSeq > from) {
              // Complete frames of a write the kill cut before they were indexed: readers do not serve
              // them, the writer indexes them when it opens the session. Only events that were sent.
              expect(r.json.error.expectedSeq, m.id).toBeLessThanOrEqual(m.maxSent);
              const torn = m.torn;
              m.torn = undefined;
              if (torn !== undefined) expect(r.json.error.expectedSeq, `${m.id}: after a torn ${torn.target} write`).toBe(torn.expectedSeq);
              const next = await checkPages(url, dataDir, m, figures);
              expect(next, m.id).toBe(r.json.error.expectedSeq);
              m.acked = next;
              m.sent = next;
              figures.tailsIndexedByWriter++;
              continue;
            }
            if (r.status !== 200) throw new Error(`POST ${m.id}: ${r.status} ${JSON.stringify(r.json)}`);
            // The first append after a torn write is told about it (above), never accepted as if nothing were there.
            expect(m.torn, m.id).toBeUndefined();
            expect(r.json).toEqual({ fromSeq: from, toSeq: from + n, nextSeq: from + n });
            m.acked = from + n;
            figures.appendsAcked++;
            figures.eventsAcked += n;
          } catch (err) {
            if (!stop) throw err;
            // Cut by the kill: what the server did of the torn write before it is unknown now.
            m.torn = undefined;
          } finally {
            m.busy = false;
          }
        }
      };
      for (let k = 0; k < 3; k++) ops.push(client());
      // Kill at a random moment once the load is under way (whatever the machine's speed): a storm
      // of creates within 40 ms of its start, else 0-400 ms after the trial's first acknowledgement.
      const acks0 = figures.createsAcked + figures.appendsAcked;
      if (!createStorm) await until('a first acknowledgement', () => figures.createsAcked + figures.appendsAcked > acks0 || ops.length === 0, 30_000);
      await sleep(createStorm ? pick(40) : pick(400));
      stop = true;
      child.kill('SIGKILL');
      await exited;
      // A client's failure before the kill is the test's failure; after it, requests were cut.
      for (const r of await Promise.allSettled(ops)) if (r.status === 'rejected') throw r.reason;
      figures.trials++;
      tp = spent(figures, 'load', tp);
      // Every other trial, a torn write on purpose (a random kill moment almost never lands inside one).
      if (trial % 2 === 0) {
        const target = figures.tornWritesInjected % 2 === 0 ? 'log' : 'entries';
        const candidates = [...models.values()].filter((m) => m.createAcked && m.torn === undefined);
        for (let tries = 0; tries < 3 && candidates.length > 0; tries++) {
          const m = candidates.splice(pick(candidates.length), 1)[0] as Model;
          const n = rnd() < 0.2 ? 300 + pick(1500) : 2 + pick(60);
          if (await injectTornWrite(dataDir, m, target, 0.05 + 0.9 * rnd(), n)) {
            figures.tornWritesInjected++;
            if (target === 'entries') figures.partialEntryLinesInjected++;
            else if (m.torn?.cutAt !== null) figures.tornFramesInjected++;
            break;
          }
        }
      }
      tp = spent(figures, 'torn', tp);
      figures.sessionsDoctored += await doctorAndRepairAgree(dataDir, agreed);
      spent(figures, 'doctor', tp);
      // The long mode reports as it goes, so a run stopped part-way still has its figures.
      if (TRIALS > 24 && figures.trials % 25 === 0) console.log(`crash fault suite, after ${figures.trials} trials: ${JSON.stringify({ seed: SEED, seconds: Math.round((Date.now() - t0) / 1000), ...figures })}`);
    }

    // Every session once more, changed or not, then the last kill's aftermath on a last server.
    const tf = performance.now();
    figures.sessionsDoctored += await doctorAndRepairAgree(dataDir, null);
    const { url, child, exited } = await startServer(dataDir);
    for (const m of models.values()) {
      if (!m.createAcked) continue;
      const next = await checkPages(url, dataDir, m, figures, true);
      figures.lost += Math.max(0, m.acked - next);
    }
    child.kill('SIGTERM');
    await exited;
    spent(figures, 'final', tf);
    const secs = ((Date.now() - t0) / 1000).toFixed(1);
    // The figures docs/reliability.md records.
    console.log(`crash fault suite: ${JSON.stringify({ seed: SEED, seconds: Number(secs), ...figures })}`);
    expect(figures.lost).toBe(0);
    expect(figures.trials).toBe(TRIALS);
    expect(figures.eventsAcked).toBeGreaterThan(0);
  });
});
