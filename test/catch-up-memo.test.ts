/**
 * Stale metadata caught up incrementally (session-state.ts, CatchUpMemo):
 * while a session's metadata sidecar lags (a metadata write that failed
 * after the frames were durable), every read whose files changed caught up
 * the whole indexed tail past it again, up to 64 MiB. With a memo, a read
 * starts from the previous read's catch-up and reads only the entries and
 * frames written since; the result equals a full catch-up's, and what is new
 * is checked against its entries as before.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sessionPaths, type SessionPaths } from '../src/main/paths.js';
import { CatchUpMemo, loadSessionState, type SessionState } from '../src/main/session-state.js';
import { SessionWriter } from '../src/main/session-writer.js';
import type { RandomReader, StorageBackend } from '../src/storage/backend.js';
import { LocalBackend, localFiles } from '../src/storage/local/local-backend.js';
import { SessionViews } from '../src/main/store/session-views.js';
import { conversation, makeSession, readEntries, tempDataDir } from './helpers/maint.js';

/** localFiles, counting the bytes read from one key (ranged reads and readers alike). */
function counting(key: () => string, backend: StorageBackend = localFiles): { storage: StorageBackend; bytes: () => number; reset: () => void } {
  let n = 0;
  const storage = new Proxy(backend, {
    get(target, prop, receiver) {
      if (prop === 'read') {
        return async (k: string, start: number, end: number) => {
          const b = await target.read(k, start, end);
          if (k === key() && b !== null) n += b.length;
          return b;
        };
      }
      if (prop === 'openReader') {
        return async (k: string, size?: number): Promise<RandomReader> => {
          const r = await target.openReader(k, size);
          if (k !== key()) return r;
          return new Proxy(r, {
            get(t, p) {
              if (p === 'read') {
                return async (pos: number, len: number) => {
                  const b = await t.read(pos, len);
                  n += b.length;
                  return b;
                };
              }
              const v = Reflect.get(t, p) as unknown;
              return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
            },
          });
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { storage, bytes: () => n, reset: () => (n = 0) };
}

let data: { dir: string; cleanup: () => void };
beforeEach(() => {
  data = tempDataDir('sp-catchup-');
});
afterEach(() => data.cleanup());

/** Append `batches` batches with the writer, then put back the metadata sidecar as it was (a metadata write that failed). */
async function appendKeepingMeta(p: SessionPaths, batches: number, turns = 2): Promise<void> {
  const old = readFileSync(p.meta);
  const w = await SessionWriter.open(data.dir, 's');
  for (let b = 0; b < batches; b++) await w.append(conversation(w.nextSeq, turns));
  await w.close();
  writeFileSync(p.meta, old);
}

const SUMMARY = ['nextSeq', 'eventCount', 'frameCount', 'indexedLength', 'entriesLength', 'tokens', 'hasUserMessage', 'title', 'provider', 'model', 'lastCompactionSeq'];
function summary(s: SessionState): Record<string, unknown> {
  return Object.fromEntries(SUMMARY.map((k) => [k, (s.meta as unknown as Record<string, unknown>)[k]]));
}

describe.each(['jsonl', 'binary'] as const)('incremental catch-up of stale metadata (%s frames)', (format) => {
  let p: SessionPaths;
  beforeEach(async () => {
    await makeSession(data.dir, 's', format, 2);
    p = sessionPaths(data.dir, 's');
  });

  it('a second read catches up only what was written since the first, and equals a full catch-up', async () => {
    await appendKeepingMeta(p, 8, 4);
    const log = counting(() => p.events);
    const memo = new CatchUpMemo();
    const first = await loadSessionState(p, log.storage, memo);
    expect(first.status).toBe('ok');
    expect(first.metaStale).toBe(true);
    const firstSpan = first.indexedLength - JSON.parse(readFileSync(p.meta, 'utf8')).indexedLength;
    expect(log.bytes()).toBeGreaterThanOrEqual(firstSpan);

    const before = readEntries(p.entries).length;
    await appendKeepingMeta(p, 1, 1);
    const added = readEntries(p.entries).slice(before);
    const newBytes = added.reduce((n, e) => n + e.length, 0);

    log.reset();
    const second = await loadSessionState(p, log.storage, memo);
    const incremental = log.bytes();
    log.reset();
    const full = await loadSessionState(p, log.storage);
    const fullBytes = log.bytes();

    expect(second.status).toBe('ok');
    expect(second.metaStale).toBe(true);
    expect(summary(second)).toEqual(summary(full));
    expect(second.nextSeq).toBe(full.nextSeq);
    expect(second.nextSeq).toBe(first.nextSeq + added.reduce((n, e) => n + e.count, 0));
    // The new frames, then the last indexed frame and the header frame (the fingerprint check).
    const header = readEntries(p.entries)[0]!.length;
    expect(incremental).toBeLessThanOrEqual(newBytes + added.at(-1)!.length + header);
    expect(fullBytes).toBeGreaterThanOrEqual(firstSpan + newBytes);
    expect(incremental).toBeLessThan(firstSpan);
  });

  it('a frame written since that disagrees with its entry fails the read, as a full catch-up does', async () => {
    await appendKeepingMeta(p, 3);
    const memo = new CatchUpMemo();
    expect((await loadSessionState(p, localFiles, memo)).status).toBe('ok');
    const before = readEntries(p.entries).length;
    await appendKeepingMeta(p, 2);
    // Damage a new frame in the middle of what was added (not the last: the fingerprint check reads that one anyway).
    const hit = readEntries(p.entries)[before]!;
    const b = readFileSync(p.events);
    b[hit.offset + hit.length - 3] = format === 'jsonl' ? 0x00 : (b[hit.offset + hit.length - 3] as number) ^ 0xff;
    writeFileSync(p.events, b);
    const s = await loadSessionState(p, localFiles, memo);
    expect(s.status).toBe('repair_required');
    expect(s.problems[0]!.code).toBe('catch_up_failed');
    expect(s.problems[0]!.offset).toBe(hit.offset);
    expect(memo.size).toBe(0);
    expect((await loadSessionState(p)).problems[0]!.code).toBe('catch_up_failed');
  });

  it('what was kept is not used once the metadata on storage changes or its line no longer agrees', async () => {
    await appendKeepingMeta(p, 3);
    const memo = new CatchUpMemo();
    expect((await loadSessionState(p, localFiles, memo)).metaStale).toBe(true);
    expect(memo.size).toBe(1);

    // A fresh metadata sidecar (the writer's next successful write): not stale, the kept catch-up is dropped.
    const w = await SessionWriter.open(data.dir, 's');
    await w.append(conversation(w.nextSeq, 1));
    await w.close();
    expect((await loadSessionState(p, localFiles, memo)).metaStale).toBe(false);
    expect(memo.size).toBe(0);

    // Stale again, caught up and kept; one more batch; then the entry line where the kept catch-up
    // ended rewritten in place to name another seq: the kept catch-up no longer agrees with the
    // sidecar, so it is not used, and the read sees the damage as a full catch-up does.
    await appendKeepingMeta(p, 2);
    expect((await loadSessionState(p, localFiles, memo)).status).toBe('ok');
    expect(memo.size).toBe(1);
    const keptLines = readEntries(p.entries).length;
    await appendKeepingMeta(p, 1);
    const lines = readFileSync(p.entries, 'utf8').split('\n');
    lines[keptLines - 1] = lines[keptLines - 1]!.replace(/"seq":(\d+)/, (_m, d: string) => `"seq":${Number(d) + 1}`);
    writeFileSync(p.entries, lines.join('\n'));
    const s = await loadSessionState(p, localFiles, memo);
    expect(s.status).toBe('repair_required');
    expect(s.problems[0]!.code).toBe((await loadSessionState(p)).problems[0]!.code);
  });

  it("a store's session views keep the catch-up between reads", async () => {
    await appendKeepingMeta(p, 8, 4);
    const log = counting(() => 'sessions/s.events', new LocalBackend(data.dir));
    const views = new SessionViews(log.storage, async () => undefined);
    const first = await views.view('s');
    const firstBytes = log.bytes();
    await appendKeepingMeta(p, 1, 1);
    log.reset();
    const second = await views.view('s');
    expect(second.nextSeq).toBeGreaterThan(first.nextSeq);
    expect(second.nextSeq).toBe((await loadSessionState(p)).nextSeq);
    expect(log.bytes()).toBeLessThan(firstBytes / 2);
    expect(views.catchUps.size).toBe(1);
  });
});
