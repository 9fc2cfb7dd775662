/**
 * The durable session writer (SPEC section 3): what create and append put on
 * disk, checked against the bytes; what it refuses; and the one-writer rule
 * across processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { expandRow, packEvents, validateRecord } from '../src/core/chunk-codec.js';
import { countedGroup } from '../src/core/page-rule.js';
import { emptySummary, foldEvent } from '../src/core/summary.js';
import type { ChunkRow, SessionEvent, SessionHeader } from '../src/core/types.js';
import { sessionPaths } from '../src/main/paths.js';
import { decodeWholeLog } from '../src/main/reference-reader.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { lockText, processStart } from '../src/storage/local/pid-lease.js';
import { until } from './server-helpers.js';
import { decodeFrame, type FrameEncoding } from '../src/streams/frame-codec.js';
import { parseEntry } from '../src/streams/entry-codec.js';

const root = mkdtempSync(join(tmpdir(), 'sp-writer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = (): string => join(root, `d${n++}`);

const T0 = 1_783_000_000_000;
const delta = (seq: number, text: string, kind = 'text-delta'): SessionEvent => ({ type: 'assistant/chunk', seq, time: T0 + seq, data: { turn: 1, step: 1, chunk: { type: kind, index: 0, text } } });
const user = (seq: number): SessionEvent => ({ type: 'user/message', seq, time: T0 + seq, data: { content: [{ type: 'text', text: 'hi' }] }, surfaceOp: 'append' });
const assistant = (seq: number, sources: number[]): SessionEvent => ({
  type: 'assistant/message',
  seq,
  time: T0 + seq,
  data: { message: { source: { provider: 'p1', model: 'm1' } }, usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 1, reasoningTokens: 2 } },
  sourceEventSeqs: sources,
  surfaceOp: 'append',
});
const header = (id: string): Record<string, unknown> => ({ type: 'session', version: 0, id, createdAt: T0, cwd: '/w', title: 'from header' });

/** A conversation of `from`-based seqs: a user message, 7 deltas, an assistant message over them, a title, a header. */
function turn(from: number): SessionEvent[] {
  const ds = Array.from({ length: 7 }, (_, k) => delta(from + 1 + k, `t${k}`, k < 3 ? 'reasoning-delta' : 'text-delta'));
  return [
    user(from),
    ...ds,
    assistant(from + 8, ds.map((d) => d.seq)),
    { type: 'session/title', seq: from + 9, time: T0 + from + 9, data: { title: `turn at ${from}` } },
    { type: 'request/header', seq: from + 10, time: T0 + from + 10, data: { header: { config: { provider: 'p2', model: 'm2' } } } },
  ];
}

/**
 * Check the entry sidecar against the log bytes: one line per frame, in
 * order, each naming the frame's offset, length, first seq, count, kind and
 * (for counted messages) group. Returns the decoded log.
 */
function checkSidecar(dataDir: string, id: string): ReturnType<typeof decodeWholeLog> {
  const p = sessionPaths(dataDir, id);
  const bytes = readFileSync(p.events);
  const lines = readFileSync(p.entries, 'utf8').split('\n');
  expect(lines.pop()).toBe('');
  let offset = 0;
  let seq = 0;
  lines.forEach((line, i) => {
    const e = parseEntry(line);
    if (typeof e === 'string') throw new Error(`entry ${i}: ${e}`);
    const f = decodeFrame(bytes, e.offset, e.offset);
    if (!f.ok) throw new Error(f.message);
    expect(e.offset).toBe(offset);
    expect(e.length).toBe(f.length);
    if (i === 0) {
      expect(e).toEqual({ v: 1, seq: 0, count: 0, offset: 0, length: f.length, kind: 'session', schema: 1 });
    } else {
      const r = validateRecord(f.record);
      const events = 'seq0' in r ? expandRow(r as ChunkRow) : [r as SessionEvent];
      expect({ seq: e.seq, count: e.count, kind: e.kind }).toEqual({ seq, count: events.length, kind: r.type });
      const group = events.length === 1 ? countedGroup(events[0] as SessionEvent) : undefined;
      expect(e.group).toBe(group);
      seq += events.length;
    }
    offset += f.length;
  });
  expect(offset).toBe(bytes.length);
  return decodeWholeLog(bytes);
}

function readMetaFile(dataDir: string, id: string): Record<string, any> {
  return JSON.parse(readFileSync(sessionPaths(dataDir, id).meta, 'utf8'));
}

async function rejects(p: Promise<unknown>, code: string): Promise<Error & { code: string; details?: Record<string, unknown> }> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  expect(err, `expected ${code}`).toMatchObject({ name: 'PagerError', code });
  return err as Error & { code: string };
}

describe.each<FrameEncoding>(['jsonl', 'binary'])('SessionWriter with %s frames', (format) => {
  it('create writes the header frame, its session entry at offset 0, and metadata', async () => {
    const dir = freshDir();
    const w = await SessionWriter.create(dir, 's1', { id: 's1', createdAt: T0, cwd: '/w' }, { format });
    await w.close();
    const log = checkSidecar(dir, 's1');
    // The header is completed (type) and keeps what the host put there.
    expect(log.header).toEqual({ type: 'session', id: 's1', createdAt: T0, cwd: '/w' });
    expect(log.events).toEqual([]);
    const meta = readMetaFile(dir, 's1');
    expect(meta).toMatchObject({ v: 1, id: 's1', format, nextSeq: 0, eventCount: 0, frameCount: 1, createdAt: T0, hasUserMessage: false, title: null });
    expect(meta.indexedLength).toBe(statSync(sessionPaths(dir, 's1').events).size);
    expect(meta.entriesLength).toBe(statSync(sessionPaths(dir, 's1').entries).size);
  });

  it('append packs each batch and indexes every frame exactly', async () => {
    const dir = freshDir();
    const w = await SessionWriter.create(dir, 's', header('s'), { format });
    const events = turn(0);
    // Batches cut the delta run: rows never span batches, and each batch is packed canonically.
    const batches = [events.slice(0, 3), events.slice(3, 8), events.slice(8)];
    for (const b of batches) {
      const r = await w.append(b);
      expect(r.fromSeq).toBe(b[0]?.seq);
      expect(r.toSeq).toBe((b[b.length - 1]?.seq as number) + 1);
    }
    await w.close();
    const log = checkSidecar(dir, 's');
    expect(log.events).toEqual(events);
    const kinds = readFileSync(sessionPaths(dir, 's').entries, 'utf8').trim().split('\n').map((l) => JSON.parse(l).kind);
    // Batch 1: user + 2 deltas (a run of 2 stays events). Batch 2: reasoning delta, then 4 text deltas packed.
    expect(kinds).toEqual(['session', 'user/message', 'assistant/chunk', 'assistant/chunk', 'assistant/chunk', 'text-chunks', 'assistant/message', 'session/title', 'request/header']);
    const entries = readFileSync(sessionPaths(dir, 's').entries, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(entries.find((e) => e.kind === 'assistant/message').group).toBe(1);
    expect(entries.find((e) => e.kind === 'user/message').group).toBe(0);
    // Storage holds per-batch packing; the page form re-packs the whole range.
    expect(packEvents(log.events).length).toBeLessThan(log.frames.length);
  });

  it('metadata matches the summary reducer and is replaced by rename, never rewritten in place', async () => {
    const dir = freshDir();
    const h = header('m');
    const w = await SessionWriter.create(dir, 'm', h, { format });
    const p = sessionPaths(dir, 'm');
    const events = [...turn(0), ...turn(11), { type: 'compaction/start', seq: 22, time: T0, data: {} }];
    let inode = statSync(p.meta).ino;
    for (const e of events) {
      await w.append([e]);
      const now = statSync(p.meta).ino;
      expect(now).not.toBe(inode);
      inode = now;
    }
    expect(readdirSync(dirname(p.meta)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    await w.close();
    const summary = emptySummary(h as SessionHeader);
    for (const e of events) foldEvent(summary, e);
    const meta = readMetaFile(dir, 'm');
    expect(meta).toMatchObject({ ...summary, nextSeq: 23, eventCount: 23 });
    expect(meta).toMatchObject({ title: 'turn at 11', provider: 'p2', model: 'm2', hasUserMessage: true, lastCompactionSeq: 22, tokens: { input: 20, output: 10, cacheRead: 2, reasoning: 4 } });
    const st = statSync(p.events);
    expect(meta.fingerprint).toEqual({ size: st.size, mtimeMs: st.mtimeMs });
    expect(meta.indexedLength).toBe(st.size);
  });

  it('reopen continues at nextSeq and appends after the indexed end', async () => {
    const dir = freshDir();
    const w1 = await SessionWriter.create(dir, 'r', header('r'), { format });
    await w1.append(turn(0));
    await w1.close();
    const w2 = await SessionWriter.open(dir, 'r');
    expect(w2.nextSeq).toBe(11);
    await rejects(w2.append(turn(0)), 'seq_conflict');
    await w2.append(turn(11));
    await w2.close();
    const log = checkSidecar(dir, 'r');
    expect(log.events).toEqual([...turn(0), ...turn(11)]);
    expect(readMetaFile(dir, 'r')).toMatchObject({ nextSeq: 22, format });
  });

  it('durable: false writes the same bytes and persists metadata at close', async () => {
    const a = freshDir();
    const b = freshDir();
    for (const [dir, durable] of [[a, true], [b, false]] as const) {
      const w = await SessionWriter.create(dir, 'x', header('x'), { format, durable, now: () => T0 });
      await w.append(turn(0));
      await w.append(turn(11));
      await w.close();
    }
    expect(readFileSync(sessionPaths(b, 'x').events)).toEqual(readFileSync(sessionPaths(a, 'x').events));
    expect(readFileSync(sessionPaths(b, 'x').entries)).toEqual(readFileSync(sessionPaths(a, 'x').entries));
    const { fingerprint: _fa, ...ma } = readMetaFile(a, 'x');
    const { fingerprint: _fb, ...mb } = readMetaFile(b, 'x');
    expect(mb).toEqual(ma);
  });
});

describe('SessionWriter row-metadata projection', () => {
  const projection = (dir: string, id: string, name: string) => join(sessionPaths(dir, id).projections, name);
  const records = (dir: string, id: string) => ({
    crc: statSync(projection(dir, id, 'frames.crc2')).size / 16,
    meta: existsSync(projection(dir, id, 'frames.meta')) ? statSync(projection(dir, id, 'frames.meta')).size / 40 : null,
  });

  it('keeps one record per checksum record across reopens, and drops a file that no longer lines up', async () => {
    const dir = freshDir();
    const events = turn(0);
    let w = await SessionWriter.create(dir, 'm', header('m'));
    await w.append(events.slice(0, 5));
    await w.close();
    w = await SessionWriter.open(dir, 'm');
    await w.append(events.slice(5, 8));
    await w.close();
    // One record per frame, the header's included: as many as entry lines.
    const lines = () => readFileSync(sessionPaths(dir, 'm').entries, 'utf8').trim().split('\n').length;
    const frames = lines();
    expect(records(dir, 'm')).toEqual({ crc: frames, meta: frames });
    // One record short: removed on the next open, for good (its records would follow the wrong frames).
    const path = projection(dir, 'm', 'frames.meta');
    writeFileSync(path, readFileSync(path).subarray(0, (frames - 1) * 40));
    w = await SessionWriter.open(dir, 'm');
    await w.append(events.slice(8));
    await w.close();
    expect(records(dir, 'm')).toEqual({ crc: lines(), meta: null });
    w = await SessionWriter.open(dir, 'm');
    await w.close();
    expect(records(dir, 'm').meta).toBeNull();
  });
});

describe('SessionWriter refuses', () => {
  it('seq_conflict when a batch does not continue nextSeq, writing nothing', async () => {
    const dir = freshDir();
    const w = await SessionWriter.create(dir, 'q', header('q'));
    await w.append([user(0)]);
    const size = statSync(sessionPaths(dir, 'q').events).size;
    const err = await rejects(w.append([user(2)]), 'seq_conflict');
    expect(err.details).toMatchObject({ expectedSeq: 1, index: 0 });
    await rejects(w.append([user(0)]), 'seq_conflict');
    // A gap inside the batch.
    const inner = await rejects(w.append([user(1), user(3)]), 'seq_conflict');
    expect(inner.details).toMatchObject({ expectedSeq: 2, index: 1 });
    expect(statSync(sessionPaths(dir, 'q').events).size).toBe(size);
    expect(w.nextSeq).toBe(1);
    await w.append([user(1)]);
    await w.close();
    expect(checkSidecar(dir, 'q').events).toEqual([user(0), user(1)]);
  });

  it('invalid_request on malformed batches and events, and on reserved types', async () => {
    const dir = freshDir();
    const w = await SessionWriter.create(dir, 'v', header('v'));
    for (const bad of [
      'nope',
      {},
      [],
      [null],
      [{ seq: 0, time: 0 }],
      [{ type: 'x', seq: 0 }],
      [{ type: 'x', seq: 0, time: 2 ** 53 }],
      [{ type: 'x', seq: 0.5, time: 0 }],
      [{ type: 'text-chunks', seq: 0, time: 0 }],
      [{ type: 'session', seq: 0, time: 0 }],
    ]) {
      await rejects(w.append(bad), 'invalid_request');
    }
    expect(w.nextSeq).toBe(0);
    await w.close();
    expect(checkSidecar(dir, 'v').events).toEqual([]);
  });

  it('invalid_request on a bad header, session_exists on a second create, session_not_found on open', async () => {
    const dir = freshDir();
    await rejects(SessionWriter.create(dir, 'h', { type: 'other' }), 'invalid_request');
    await rejects(SessionWriter.create(dir, 'h', { id: 'not-h' }), 'invalid_request');
    await rejects(SessionWriter.create(dir, 'h', []), 'invalid_request');
    await rejects(SessionWriter.create(dir, '../h', {}), 'invalid_request');
    const w = await SessionWriter.create(dir, 'h', {});
    await w.close();
    await rejects(SessionWriter.create(dir, 'h', {}), 'session_exists');
    await rejects(SessionWriter.open(dir, 'missing'), 'session_not_found');
  });
});

describe('one writer per session', () => {
  const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../dist/main/session-writer.js');

  /** A child process holding the session's writer until killed. */
  async function holder(dir: string, id: string): Promise<ChildProcess> {
    expect(existsSync(dist), 'dist/ is built by `npm test` (tsc) before the tests run').toBe(true);
    const code = `const { SessionWriter } = await import(${JSON.stringify(dist)}); await SessionWriter.open(${JSON.stringify(dir)}, ${JSON.stringify(id)}); process.stdout.write('locked\\n'); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise<void>((ok, fail) => {
      let err = '';
      child.stderr?.on('data', (d) => (err += d));
      child.stdout?.on('data', (d) => String(d).includes('locked') && ok());
      child.on('exit', (c) => fail(new Error(`holder exited ${c}: ${err}`)));
    });
    return child;
  }

  it('a second writer in this process gets session_busy until the first closes', async () => {
    const dir = freshDir();
    const w = await SessionWriter.create(dir, 'b', {});
    const err = await rejects(SessionWriter.open(dir, 'b'), 'session_busy');
    expect(err.message).toContain('(this process)');
    await w.close();
    expect(existsSync(sessionPaths(dir, 'b').lock)).toBe(false);
    const again = await SessionWriter.open(dir, 'b');
    await again.close();
  });

  it('a writer in another process gets session_busy; once it dies, its stale lock is taken over', async () => {
    const dir = freshDir();
    await (await SessionWriter.create(dir, 'p', {})).close();
    const child = await holder(dir, 'p');
    try {
      const err = await rejects(SessionWriter.open(dir, 'p'), 'session_busy');
      expect(err.details).toMatchObject({ pid: child.pid });
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
    // The killed holder never released its lock file: it names a dead pid now (and when it started).
    expect(readFileSync(sessionPaths(dir, 'p').lock, 'utf8').trim().split(' ')[0]).toBe(String(child.pid));
    const w = await SessionWriter.open(dir, 'p');
    await w.append([user(0)]);
    await w.close();
    expect(checkSidecar(dir, 'p').events).toEqual([user(0)]);
  });

  it("takes over a lock whose pid is alive but another process's now (pids are reused): the start time it names is not that process's", async () => {
    const dir = freshDir();
    await (await SessionWriter.create(dir, 'r', {})).close();
    // A live process that is not a writer of this session: vitest's own parent.
    const other = process.ppid;
    const start = processStart(other);
    expect(start, 'this test needs /proc').not.toBeNull();
    // Its own start time: that process holds the lock.
    writeFileSync(sessionPaths(dir, 'r').lock, lockText(other, start));
    expect((await rejects(SessionWriter.open(dir, 'r'), 'session_busy')).details).toMatchObject({ pid: other });
    // A dead writer's lock whose pid that process took later: another start time, so stale.
    writeFileSync(sessionPaths(dir, 'r').lock, lockText(other, String(Number(start) + 1)));
    const w = await SessionWriter.open(dir, 'r');
    await w.append([user(0)]);
    expect(readFileSync(sessionPaths(dir, 'r').lock, 'utf8')).toBe(lockText(process.pid, processStart(process.pid)));
    await w.close();
    expect(checkSidecar(dir, 'r').events).toEqual([user(0)]);
  });

  it("takes over the lock of a killed writer its parent has not reaped (a zombie: kill(pid, 0) still answers)", async () => {
    const dir = freshDir();
    await (await SessionWriter.create(dir, 'z', {})).close();
    // A child of a shell that then becomes a program that never waits: when it ends it stays a
    // zombie for as long as that program runs (as under a container's first process that does not reap).
    const parent = spawn('sh', ['-c', 'sleep 0.2 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = Number(await new Promise<string>((ok) => parent.stdout?.once('data', (d) => ok(String(d).trim()))));
      const start = processStart(pid);
      expect(start, 'this test needs /proc').not.toBeNull();
      // The writer's lock, as that process would have written it.
      writeFileSync(sessionPaths(dir, 'z').lock, lockText(pid, start));
      await until('the child is a zombie', () => /^\d+ \(sleep\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')));
      const w = await SessionWriter.open(dir, 'z');
      await w.append([user(0)]);
      await w.close();
      expect(checkSidecar(dir, 'z').events).toEqual([user(0)]);
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('takes over a lock file cut short while being written', async () => {
    const dir = freshDir();
    await (await SessionWriter.create(dir, 'e', {})).close();
    writeFileSync(sessionPaths(dir, 'e').lock, '');
    const w = await SessionWriter.open(dir, 'e');
    await w.close();
  });
});
