/**
 * `gen`: deterministic, exact in size, a valid log with consistent sidecars,
 * event shapes that tie together like a real host's (messages name their
 * chunks, results name their calls), host-like append batches, and the
 * in-flight streaming tail.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandRecords } from '../src/core/chunk-codec.js';
import { isCountedMessage } from '../src/core/page-rule.js';
import { emptySummary, foldEvent } from '../src/core/summary.js';
import type { SessionEvent, SessionHeader } from '../src/core/types.js';
import { COMMIT_TYPES, MAX_WINDOW_EVENTS, WINDOW_MAX_MS } from '../src/main/gen/batcher.js';
import { generateSession, minEventsFor, sessionBatches } from '../src/main/gen/generate.js';
import { sessionPaths } from '../src/main/paths.js';
import { readWholeLog, referencePage, type ReferenceLog } from '../src/main/reference-reader.js';
import { loadSessionState } from '../src/main/session-state.js';
import { parseEntry } from '../src/streams/entry-codec.js';
import type { FrameEncoding } from '../src/streams/frame-codec.js';

const root = mkdtempSync(join(tmpdir(), 'sp-gen-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = (): string => join(root, `d${n++}`);

const data = (e: SessionEvent): Record<string, any> => e.data as Record<string, any>;
const chunkType = (e: SessionEvent): string | undefined => (e.type === 'assistant/chunk' ? data(e).chunk?.type : undefined);
const isDelta = (e: SessionEvent): boolean => ['text-delta', 'reasoning-delta', 'tool-call-delta'].includes(chunkType(e) ?? '');

function allEvents(opts: Parameters<typeof sessionBatches>[0]): SessionEvent[][] {
  return [...sessionBatches(opts).batches];
}

describe('size and determinism', () => {
  it('produces exactly `events` events with contiguous seqs, for any size and tail', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 3000 }), fc.nat(), (tail, extra, seed) => {
        const events = minEventsFor(tail) + extra;
        const flat = allEvents({ events, tailEvents: tail, seed }).flat();
        expect(flat.length).toBe(events);
        expect(flat.findIndex((e, i) => e.seq !== i)).toBe(-1);
      }),
      { numRuns: 150 },
    );
  });

  it('refuses a tail that does not fit', () => {
    expect(() => sessionBatches({ events: minEventsFor(10) - 1, tailEvents: 10 })).toThrow(RangeError);
    expect(minEventsFor(0)).toBe(0);
  });

  it('is lazy: the first batch of a trillion-event session comes at once', () => {
    const t = performance.now();
    const first = sessionBatches({ events: 1e12, tailEvents: 1e9 }).batches.next();
    expect(first.done).toBe(false);
    expect(performance.now() - t).toBeLessThan(1000);
  });

  it.each<FrameEncoding>(['jsonl', 'binary'])('writes the same bytes twice for a seed (%s), other bytes for another seed', async (format) => {
    const paths = [];
    for (const seed of [7, 7, 8]) {
      const dir = freshDir();
      await generateSession(dir, { id: 'g', events: 20_000, tailEvents: 2000, seed, format });
      paths.push(sessionPaths(dir, 'g'));
    }
    const [a, b, c] = paths.map((p) => ({ log: readFileSync(p.events), entries: readFileSync(p.entries) }));
    expect(b?.log.equals(a!.log)).toBe(true);
    expect(b?.entries.equals(a!.entries)).toBe(true);
    expect(c?.log.equals(a!.log)).toBe(false);
  });

  it('sessions of one run differ (each has its own stream)', () => {
    const a = allEvents({ events: 3000, seed: 1, stream: 0 }).flat();
    const b = allEvents({ events: 3000, seed: 1, stream: 1 }).flat();
    expect(b).not.toEqual(a);
  });
});

describe.each<FrameEncoding>(['jsonl', 'binary'])('a generated session (%s)', (format) => {
  const EVENTS = 150_000;
  const TAIL = 6000;
  let dir: string;
  let log: ReferenceLog;
  let events: SessionEvent[];

  beforeAll(async () => {
    dir = freshDir();
    const r = await generateSession(dir, { events: EVENTS, tailEvents: TAIL, seed: 42, format });
    expect(r).toMatchObject({ id: 'gen-42-0', events: EVENTS });
    log = await readWholeLog(sessionPaths(dir, 'gen-42-0').events);
    events = log.events;
  });

  it('is a valid log whose entry sidecar and metadata match it', async () => {
    expect(events.length).toBe(EVENTS);
    const p = sessionPaths(dir, 'gen-42-0');
    const lines = readFileSync(p.entries, 'utf8').trimEnd().split('\n').map((l) => parseEntry(l));
    expect(lines.length).toBe(log.frames.length + 1);
    expect(lines[0]).toMatchObject({ seq: 0, count: 0, offset: 0, kind: 'session' });
    log.frames.forEach((f, i) => expect(lines[i + 1]).toMatchObject({ offset: f.offset, length: f.length, seq: f.seq, count: f.count }));
    const state = await loadSessionState(p);
    expect(state.status).toBe('ok');
    const meta = JSON.parse(readFileSync(p.meta, 'utf8'));
    const summary = emptySummary(log.header);
    for (const e of events) foldEvent(summary, e);
    expect(meta).toMatchObject({ ...summary, nextSeq: EVENTS, format, frameCount: log.frames.length + 1 });
  });

  it('has every event kind a real session has, in dsh shapes', () => {
    const types = new Set(events.map((e) => e.type));
    for (const t of ['user/message', 'turn/start', 'step/start', 'request/header', 'request/context', 'assistant/chunk', 'assistant/message', 'tool/call', 'tool/result', 'step/end', 'turn/end', 'session/title', 'compaction/start', 'compaction/summary', 'compaction/end']) {
      expect(types, t).toContain(t);
    }
    const chunks = new Set(events.map(chunkType).filter(Boolean));
    for (const c of ['block-start', 'block-end', 'usage', 'finish', 'text-delta', 'reasoning-delta', 'tool-call-delta']) expect(chunks, c).toContain(c);
    const header = events.find((e) => e.type === 'request/header') as SessionEvent;
    expect(data(header).header.config).toEqual(expect.objectContaining({ provider: expect.any(String), model: expect.any(String) }));
    expect(log.header).toMatchObject({ type: 'session', id: 'gen-42-0', createdAt: expect.any(Number) } satisfies Partial<SessionHeader>);
  });

  it('assistant messages name exactly the chunks of their step, and assemble their deltas', () => {
    let checked = 0;
    for (const e of events) {
      if (e.type !== 'assistant/message') continue;
      const { turn, step } = data(e);
      const src = e.sourceEventSeqs as number[];
      expect(e.surfaceOp).toBe('append');
      const mine = events.slice(src[0], e.seq).filter((c) => c.type === 'assistant/chunk');
      expect(mine.map((c) => c.seq)).toEqual(src);
      expect(mine.every((c) => data(c).turn === turn && data(c).step === step)).toBe(true);
      // The message's content is what its deltas spell, block by block.
      const content = data(e).message.content as { type: string; text?: string; arguments?: string }[];
      content.forEach((block, i) => {
        const deltas = mine.filter((c) => isDelta(c) && data(c).chunk.index === i).map((c) => data(c).chunk.text ?? data(c).chunk.argumentsDelta);
        expect(deltas.join('')).toBe(block.text ?? block.arguments);
      });
      if (++checked > 300) break;
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('tool results name their call; compactions replace with an uncounted message', () => {
    const bySeq = new Map(events.map((e) => [e.seq, e]));
    for (const e of events) {
      if (e.type === 'tool/result') {
        const call = bySeq.get((e.sourceEventSeqs as number[])[0] as number) as SessionEvent;
        expect(call.type).toBe('tool/call');
        expect(data(e).message.source.callId).toBe(data(call).callId);
        expect(e.surfaceOp).toBe('append');
      }
      if (e.type === 'compaction/summary') {
        const replace = bySeq.get(e.seq + 1) as SessionEvent;
        expect(replace.type).toBe('user/message');
        expect(replace.surfaceOp).toMatchObject({ op: 'replace' });
        expect(isCountedMessage(replace)).toBe(false);
        const src = replace.sourceEventSeqs as number[];
        expect(src.slice(0, 2)).toEqual([e.seq - 1, e.seq]);
        for (const s of src.slice(2)) expect(bySeq.get(s)?.type).toBe('user/message');
      }
    }
  });

  it('ends with the in-flight tail: a user message, then M deltas, reasoning before text, no answer yet', () => {
    const lastUser = events.findLastIndex((e) => e.type === 'user/message');
    const after = events.slice(lastUser + 1);
    expect(after.some((e) => e.type === 'assistant/message')).toBe(false);
    const deltas = after.filter(isDelta);
    expect(deltas.length).toBe(TAIL);
    expect(isDelta(events[EVENTS - 1] as SessionEvent)).toBe(true);
    const kinds = deltas.map(chunkType);
    const firstText = kinds.indexOf('text-delta');
    expect(firstText).toBeGreaterThan(0);
    expect(kinds.slice(0, firstText).every((k) => k === 'reasoning-delta')).toBe(true);
    expect(kinds.slice(firstText).every((k) => k === 'text-delta')).toBe(true);
    // The newest page of one message is that whole turn, re-packed into one row per block.
    const page = referencePage(log, 'gen-42-0', { maxMessages: 1 });
    expect(page.fromSeq).toBe(lastUser);
    expect(page.records.filter((r) => 'chunks' in r).length).toBe(2);
    expect(expandRecords(page.records)).toEqual(events.slice(lastUser));
  });

  it('stores long runs as many rows of tens of deltas (one per write window)', () => {
    const lastUser = events.findLastIndex((e) => e.type === 'user/message');
    const tailFrames = log.frames.filter((f) => f.seq > lastUser && f.count > 1);
    const sizes = tailFrames.map((f) => f.count);
    expect(sizes.length).toBeGreaterThan(TAIL / 100);
    const mean = sizes.reduce((a, b) => a + b, 0) / sizes.length;
    expect(mean).toBeGreaterThan(10);
    expect(mean).toBeLessThan(80);
  });
});

describe('append batches', () => {
  it('follow the write window: span under its length, commits end a batch, a safety cap', () => {
    const batches = allEvents({ events: 60_000, tailEvents: 3000, seed: 3 });
    expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(MAX_WINDOW_EVENTS);
    expect(Math.max(...batches.map((b) => (b[b.length - 1] as SessionEvent).time - (b[0] as SessionEvent).time))).toBeLessThan(WINDOW_MAX_MS);
    expect(batches.filter((b) => b.slice(0, -1).some((e) => COMMIT_TYPES.has(e.type)))).toEqual([]);
    // Deltas come in tens per batch; non-streaming events travel in small batches.
    const streaming = batches.filter((b) => b.some(isDelta));
    expect(streaming.reduce((n, b) => n + b.length, 0) / streaming.length).toBeGreaterThan(10);
    const small = batches.filter((b) => !b.some(isDelta));
    expect(small.length).toBeGreaterThan(20);
    expect(Math.max(...small.map((b) => b.length))).toBeLessThanOrEqual(8);
  });
});

describe('session-pager gen (CLI)', () => {
  const bin = resolve(dirname(fileURLToPath(import.meta.url)), '../bin/session-pager.js');
  const run = (...args: string[]) => spawnSync(process.execPath, [bin, 'gen', ...args], { encoding: 'utf8' });

  it('writes K sessions and prints one line each; refuses to overwrite', () => {
    const dir = freshDir();
    const ok = run('--data', dir, '--events', '3000', '--tail-events', '500', '--sessions', '2', '--seed', '9', '--format', 'binary', '--id-prefix', 'bench');
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    const lines = ok.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    lines.forEach((l, k) => expect(l).toMatch(new RegExp(`^bench-9-${k} 3000 events \\d+ bytes$`)));
    const meta = JSON.parse(readFileSync(sessionPaths(dir, 'bench-9-1').meta, 'utf8'));
    expect(meta).toMatchObject({ format: 'binary', nextSeq: 3000 });
    const again = run('--data', dir, '--events', '3000', '--seed', '9', '--id-prefix', 'bench');
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('session_exists');
  });

  it.each([
    [['--format', 'xml']],
    [['--events', '10', '--tail-events', '10']],
    [['--events=-5']],
    [['--events', 'many']],
    [['--sessions', '0']],
    [['--id-prefix', '../x']],
    [['--bogus']],
  ])('exits 2 with one line on stderr for %j', (args) => {
    const r = run('--data', freshDir(), ...args);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
