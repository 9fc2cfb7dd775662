/**
 * A binary-format session loses nothing MessagePack cannot hold: such
 * records are written as JSONL frames in the same log, and read back (by the
 * reference reader and by pages) exactly as appended.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/core/types.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { openStore } from '../src/main/store.js';
import { writeRandomLog } from './helpers/random-log.js';

const dir = mkdtempSync(join(tmpdir(), 'sp-verbatim-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('binary sessions keep every record verbatim', () => {
  it('lone surrogates and __proto__ keys go to JSONL frames and come back unchanged', async () => {
    const odd = JSON.parse('{"__proto__":{"x":1},"y":2}') as Record<string, unknown>;
    const events: SessionEvent[] = [
      { type: 'user/message', seq: 0, time: 1, data: { text: 'plain' }, surfaceOp: 'append' },
      { type: 'tool/result', seq: 1, time: 2, data: { text: 'lone \ud800 surrogate' } },
      { type: 'vendor/x', seq: 2, time: 3, data: odd },
      { type: 'assistant/chunk', seq: 3, time: 4, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: 'a\udfff' } } },
      { type: 'assistant/chunk', seq: 4, time: 5, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: 'b' } } },
      { type: 'assistant/chunk', seq: 5, time: 6, data: { turn: 0, step: 0, chunk: { type: 'text-delta', index: 0, text: 'c' } } },
      { type: 'assistant/message', seq: 6, time: 7, data: { text: 'abc' }, surfaceOp: 'append', sourceEventSeqs: [3, 4, 5] },
    ];
    await writeRandomLog({ events, batches: [{ size: 2, format: 'binary' }] }, { dataDir: dir, id: 'verbatim' });
    const path = join(dir, 'sessions/verbatim.events');
    const bytes = readFileSync(path);
    expect(bytes.includes(Buffer.from('SPF2'))).toBe(true); // binary frames for the plain records
    expect(bytes.includes(Buffer.from('"__proto__":{"x":1}'))).toBe(true); // JSONL for the one MessagePack would rename
    const log = await readWholeLog(path);
    expect(JSON.stringify(log.events)).toBe(JSON.stringify(events));
    expect(Object.keys(log.events[2]!.data as object)).toEqual(['__proto__', 'y']);
    const store = await openStore({ dataDir: dir, workers: 1 });
    try {
      const page = await store.page('verbatim', { maxMessages: 10 });
      expect(page).toEqual(referencePage(log, 'verbatim', { maxMessages: 10 }));
      expect(JSON.stringify(page)).toContain('lone \\ud800 surrogate');
    } finally {
      await store.close();
    }
  });
});
