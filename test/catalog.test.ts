/**
 * The catalog's metadata-only fast path: used exactly when the files are as
 * the metadata last wrote them, and agreeing with the full checks then.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/core/types.js';
import { sessionPaths } from '../src/main/paths.js';
import { catalogState, loadSessionState } from '../src/main/session-state.js';
import { writeRandomLog } from './helpers/random-log.js';

const dir = mkdtempSync(join(tmpdir(), 'sp-catalog-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const events: SessionEvent[] = [
  { type: 'user/message', seq: 0, time: 1, data: { text: 'hi' }, surfaceOp: 'append' },
  { type: 'session/title', seq: 1, time: 2, data: { title: 'Hello' } },
];

describe('catalogState', () => {
  it('describes an untouched session from its metadata, as the full checks do', async () => {
    await writeRandomLog({ events, batches: [{ size: 1, format: 'jsonl' }] }, { dataDir: dir, id: 'a' });
    const paths = sessionPaths(dir, 'a');
    const fast = await catalogState(paths);
    const full = await loadSessionState(paths);
    expect(fast).not.toBeNull();
    for (const k of ['status', 'reasons', 'nextSeq', 'indexedLength', 'entriesSize', 'frameCount', 'logSize'] as const) expect(fast![k]).toEqual(full[k]);
    expect(fast!.meta?.title).toBe('Hello');
  });

  it('steps aside when the log or the sidecar changed, or the metadata is unreadable', async () => {
    await writeRandomLog({ events, batches: [{ size: 2, format: 'jsonl' }] }, { dataDir: dir, id: 'b' });
    const paths = sessionPaths(dir, 'b');
    appendFileSync(paths.events, '{"type":"x"');
    expect(await catalogState(paths)).toBeNull();
    expect((await loadSessionState(paths)).status).toBe('degraded');

    await writeRandomLog({ events, batches: [{ size: 2, format: 'jsonl' }] }, { dataDir: dir, id: 'c' });
    const c = sessionPaths(dir, 'c');
    appendFileSync(c.entries, '{"v":1}\n');
    expect(await catalogState(c)).toBeNull();

    await writeRandomLog({ events, batches: [{ size: 2, format: 'jsonl' }] }, { dataDir: dir, id: 'd' });
    const d = sessionPaths(dir, 'd');
    writeFileSync(d.meta, readFileSync(d.meta, 'utf8').slice(0, 20));
    expect(await catalogState(d)).toBeNull();
    expect((await loadSessionState(d)).status).toBe('repair_required');
  });
});
