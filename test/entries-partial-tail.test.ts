/**
 * A SIGKILL in the middle of writing an append's entry lines (issue 16): the
 * writer writes a batch's frames, fsyncs, writes their entry lines, fsyncs,
 * then the metadata, and only then acknowledges. A kill inside the entry
 * write leaves the frames whole in the log, the entry sidecar ending in part
 * of a line (maybe after whole lines of the same batch), and the old
 * metadata. Nothing of that write was acknowledged, so the session must not
 * become `repair_required`: the whole lines are the sidecar, the partial one
 * is an unindexed tail the writer cuts when it opens the session (then
 * indexes the frames again), and no acknowledged line is ever read as one.
 *
 * The crash state is made exactly as the writer would leave it: the batch
 * encoded by the writer's own encoder at the indexed end, its frames
 * appended to the log, a prefix of its entry lines to the sidecar.
 */
import { appendFileSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expandRecords } from '../src/core/chunk-codec.js';
import { diagnoseSession } from '../src/main/maintenance/doctor.js';
import { planRepair } from '../src/main/maintenance/repair.js';
import { sessionPaths, type SessionPaths } from '../src/main/paths.js';
import { decodeWholeLog, referencePage } from '../src/main/reference-reader.js';
import { loadSessionState } from '../src/main/session-state.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { openStore } from '../src/main/store.js';
import { encodeBatch } from '../src/streams/batch-encoder.js';
import type { FrameEncoding } from '../src/streams/frame-codec.js';
import { readEntries, tempDataDir } from './helpers/maint.js';
import { makeEvents } from './server-helpers.js';

let data: { dir: string; cleanup: () => void };
beforeEach(() => {
  data = tempDataDir('sp-partial-entry-');
});
afterEach(() => data.cleanup());

const ACKED = 37;
/** The cut batch: several frames (events and a packed row), so cuts fall in and after whole lines. */
const CUT_BATCH = 23;

/** A session with ACKED acknowledged events, and the batch a kill then cuts, encoded as the writer would write it. */
async function sessionWithCutBatch(format: FrameEncoding): Promise<{ p: SessionPaths; frames: Buffer; lines: string }> {
  const w = await SessionWriter.create(data.dir, 's', { title: 't' }, { format });
  await w.append(makeEvents(0, 20));
  await w.append(makeEvents(20, ACKED - 20));
  const meta = w.metadata;
  await w.close();
  const enc = encodeBatch(makeEvents(ACKED, CUT_BATCH), meta.indexedLength, format);
  expect(enc.frameCount).toBeGreaterThan(2);
  return { p: sessionPaths(data.dir, 's'), frames: enc.bytes, lines: enc.entries };
}

/** Leave what a kill `k` bytes into the entry write leaves. */
function cutAt(p: SessionPaths, frames: Buffer, lines: string, k: number): void {
  appendFileSync(p.events, frames);
  appendFileSync(p.entries, lines.slice(0, k));
}

/** Events the whole lines among the first `k` bytes of `lines` index. */
function eventsInWholeLines(lines: string, k: number): number {
  const whole = lines.slice(0, k).split('\n').slice(0, -1);
  return whole.reduce((n, l) => n + (JSON.parse(l) as { count: number }).count, 0);
}

/** Cuts that end inside a line (a cut right after a newline leaves whole lines only: the stale-metadata case). */
function innerCuts(lines: string): number[] {
  const out: number[] = [];
  for (let k = 1; k < lines.length; k++) if (lines[k - 1] !== '\n') out.push(k);
  return out;
}

describe.each(['jsonl', 'binary'] as const)('a partial entry line left by a kill (%s frames)', (format) => {
  it('at every byte of the entry write: served from the whole lines, degraded, never repair_required', async () => {
    const { p, frames, lines } = await sessionWithCutBatch(format);
    const log0 = readFileSync(p.events);
    const entries0 = readFileSync(p.entries);
    const cuts = innerCuts(lines);
    expect(cuts.length).toBeGreaterThan(100);
    for (const k of cuts) {
      writeFileSync(p.events, log0);
      writeFileSync(p.entries, entries0);
      cutAt(p, frames, lines, k);
      const s = await loadSessionState(p);
      const wholeEnd = lines.lastIndexOf('\n', k - 1) + 1;
      expect(s.status, `cut at ${k}: ${s.reasons.join('; ')}`).toBe('degraded');
      expect(s.problems.map((x) => x.code)).toEqual(['entries_partial_tail', 'unindexed_tail']);
      expect(s.entriesSize, `cut at ${k}`).toBe(entries0.length + wholeEnd);
      expect(s.nextSeq, `cut at ${k}`).toBe(ACKED + eventsInWholeLines(lines, k));
      expect(s.problems[0]?.offset).toBe(entries0.length + wholeEnd);
    }
  });

  it.each([
    ['inside the first line', (lines: string) => 5],
    ['one byte into the second line', (lines: string) => lines.indexOf('\n') + 2],
    ['one byte short of the last newline', (lines: string) => lines.length - 1],
  ])('cut %s: pages exact, doctor and repair agree, the writer cuts the partial line and carries on', async (_what, at) => {
    const { p, frames, lines } = await sessionWithCutBatch(format);
    const k = at(lines);
    cutAt(p, frames, lines, k);
    const served = ACKED + eventsInWholeLines(lines, k);

    // Pages: the whole lines' frames, exactly as the reference reader reads the indexed bytes.
    const store = await openStore({ dataDir: data.dir, workers: 1 });
    try {
      const info = await store.info('s');
      expect(info.status).toBe('degraded');
      expect(info.nextSeq).toBe(served);
      const ref = decodeWholeLog(readFileSync(p.events), (await loadSessionState(p)).indexedLength);
      const page = await store.page('s', { maxMessages: 1000 });
      expect(page).toEqual(referencePage(ref, 's', { maxMessages: 1000 }));
      expect(expandRecords(page.records)).toEqual(makeEvents(0, served));
    } finally {
      await store.close();
    }

    // doctor --deep: the partial line and the unindexed frames, nothing that needs repair; repair only reindexes.
    const d = await diagnoseSession(p, { deep: true });
    expect(d.status, JSON.stringify(d.issues)).toBe('degraded');
    expect(d.issues.map((i) => i.code).sort()).toEqual(['entries_partial_tail', 'unindexed_frames']);
    const plan = await planRepair(p);
    expect(plan.unfixable).toEqual([]);
    expect(plan.steps.map((s) => s.kind)).toEqual(['reindex']);

    // The writer: cuts the partial line, indexes the whole cut batch (its frames were durable), appends after it.
    const w = await SessionWriter.open(data.dir, 's');
    expect(w.nextSeq).toBe(ACKED + CUT_BATCH);
    await w.append(makeEvents(ACKED + CUT_BATCH, 5));
    await w.close();
    const text = readFileSync(p.entries, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(readEntries(p.entries).map((e) => e.seq).at(-1)).toBeLessThan(ACKED + CUT_BATCH + 5);
    const after = await loadSessionState(p);
    expect(after.status, after.reasons.join('; ')).toBe('ok');
    expect(after.nextSeq).toBe(ACKED + CUT_BATCH + 5);
    const deep = await diagnoseSession(p, { deep: true });
    expect(deep.status, JSON.stringify(deep.issues)).toBe('ok');
    expect(expandRecords(referencePage(decodeWholeLog(readFileSync(p.events)), 's', { maxMessages: 1000 }).records)).toEqual(makeEvents(0, ACKED + CUT_BATCH + 5));
  });

  it('an acknowledged line is never read as a partial one: its newline lost is repair_required', async () => {
    const { p } = await sessionWithCutBatch(format);
    const size = readFileSync(p.entries).length;
    truncateSync(p.entries, size - 1);
    const s = await loadSessionState(p);
    expect(s.status).toBe('repair_required');
    await expect(SessionWriter.open(data.dir, 's')).rejects.toMatchObject({ code: 'repair_required' });
  });

  it('a partial line the log does not agree with is damage (repair_required), whatever the log holds', async () => {
    const { p, frames, lines } = await sessionWithCutBatch(format);
    const log0 = readFileSync(p.events);
    const entries0 = readFileSync(p.entries);
    const reset = (): void => {
      writeFileSync(p.events, log0);
      writeFileSync(p.entries, entries0);
    };
    const firstLine = lines.slice(0, lines.indexOf('\n'));
    const cases: [string, () => void, RegExp][] = [
      ['garbage after the last line, no frame past the indexed end', () => appendFileSync(p.entries, '{"v":1,"se'), /no frame past its indexed end/],
      ['a line start naming another seq', () => (appendFileSync(p.events, frames), appendFileSync(p.entries, firstLine.replace(`"seq":${ACKED}`, `"seq":${ACKED + 1}`).slice(0, 20))), /not the start of the line/],
      ['a line start naming another offset', () => (appendFileSync(p.events, frames), appendFileSync(p.entries, firstLine.replace(/"offset":(\d+)/, (_m, o) => `"offset":${Number(o) + 1}`).slice(0, firstLine.indexOf('"length"')))), /not the start of the line/],
      ['the frame it would describe torn', () => (appendFileSync(p.events, frames.subarray(0, 7)), appendFileSync(p.entries, firstLine.slice(0, 12))), /frame after the indexed end is not valid/],
    ];
    for (const [what, make, reason] of cases) {
      reset();
      make();
      const s = await loadSessionState(p);
      expect(s.status, what).toBe('repair_required');
      expect(s.problems[0]?.code, what).toBe('entries_partial_line');
      expect(s.reasons[0], what).toMatch(reason);
    }
  });
});
