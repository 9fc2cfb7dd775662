import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importSession, defaultImportId } from '../src/main/maintenance/import.js';
import { reindexSession } from '../src/main/maintenance/reindex.js';
import { decodeWholeLog, referencePage } from '../src/main/reference-reader.js';
import { sessionPaths } from '../src/main/paths.js';
import { loadSessionState } from '../src/main/session-state.js';
import { emptySummary, foldEvent } from '../src/core/summary.js';
import { DSH_DIR, dshFixtures, dshZstdFixtures } from './helpers/fixtures.js';
import { eventsViaSidecar, readEntries, runCli, tempDataDir } from './helpers/maint.js';

const fixtures = dshFixtures();
const zstdFixtures = dshZstdFixtures();

describe('import', () => {
  let data: { dir: string; cleanup: () => void };
  beforeAll(() => {
    data = tempDataDir('sp-import-');
  });
  afterAll(() => data.cleanup());

  it('has all fixtures to import', () => {
    expect(fixtures.length).toBe(121);
    expect(zstdFixtures.length).toBe(5);
  });

  it('derives the default id from the file name', () => {
    expect(defaultImportId('/x/a--b.jsonl')).toBe('a--b');
    expect(defaultImportId('/x/a--b.jsonl.zstd')).toBe('a--b');
    expect(defaultImportId('a.zst')).toBe('a');
  });

  it.each(fixtures.map((f) => [basename(f), f]))('imports %s byte for byte, indexed, with the fixture events', async (_name, file) => {
    const r = await importSession(data.dir, file, {});
    const p = sessionPaths(data.dir, r.id);
    const src = readFileSync(file);
    const log = readFileSync(p.events);
    expect(log.equals(src)).toBe(true);
    expect(r.verbatim).toBe(true);
    const ref = decodeWholeLog(src);
    const got = decodeWholeLog(log);
    expect(got.events).toEqual(ref.events);
    expect(got.header).toEqual(ref.header);
    // The sidecars serve every event, each frame read alone.
    expect(eventsViaSidecar(p.events, p.entries)).toEqual(ref.events);
    const state = await loadSessionState(p);
    expect(state.status).toBe('ok');
    expect(state.fingerprintFresh).toBe(true);
    expect(state.nextSeq).toBe(ref.events.length);
    expect(state.frameCount).toBe(ref.frames.length + 1);
    // Metadata summary: the reducer over every event.
    const want = emptySummary(ref.header);
    for (const e of ref.events) foldEvent(want, e);
    expect(state.meta!.title).toBe(want.title);
    expect(state.meta!.tokens).toEqual(want.tokens);
    expect(state.meta!.hasUserMessage).toBe(want.hasUserMessage);
  });

  it.each(zstdFixtures.map((f) => [basename(f), f]))('imports %s (zstd) equal to its plain twin, in both formats', async (name, file) => {
    const id = `z-${defaultImportId(file)}`;
    const r = await importSession(data.dir, file, { id });
    expect(r.source).toBe('zstd');
    const twin = join(DSH_DIR, name.replace(/\.zstd$/, ''));
    const p = sessionPaths(data.dir, id);
    expect(readFileSync(p.events).equals(readFileSync(twin))).toBe(true);
    const ref = decodeWholeLog(readFileSync(twin));
    expect(eventsViaSidecar(p.events, p.entries)).toEqual(ref.events);

    const bid = `zb-${defaultImportId(file)}`;
    const b = await importSession(data.dir, file, { id: bid, format: 'binary' });
    expect(b.format).toBe('binary');
    const bp = sessionPaths(data.dir, bid);
    const blog = readFileSync(bp.events);
    expect(blog.subarray(0, 4).toString('latin1')).toBe('SPF2');
    const decoded = decodeWholeLog(blog);
    expect(decoded.events).toEqual(ref.events);
    expect(decoded.header).toEqual(ref.header);
    expect(eventsViaSidecar(bp.events, bp.entries)).toEqual(ref.events);
    expect(referencePage(decoded, bid, { maxMessages: 3 })).toEqual({ ...referencePage(ref, bid, { maxMessages: 3 }) });
    expect((await loadSessionState(bp)).status).toBe('ok');
  });

  it('serves every page of every imported session exactly as the reference reader', async () => {
    const { openStore } = await import('../src/main/store.js');
    const store = await openStore({ dataDir: data.dir, workers: 2 });
    try {
      const ids = [...fixtures.map((f) => defaultImportId(f)), ...zstdFixtures.map((f) => `zb-${defaultImportId(f)}`)];
      for (const id of ids) {
        const log = decodeWholeLog(readFileSync(sessionPaths(data.dir, id).events));
        for (const maxMessages of [1, 4]) {
          let beforeSeq: number | undefined;
          for (;;) {
            const params = beforeSeq === undefined ? { maxMessages } : { maxMessages, beforeSeq };
            const page = await store.page(id, params);
            expect(page, `${id} ${JSON.stringify(params)}`).toEqual(referencePage(log, id, params));
            if (!page.hasMore) break;
            beforeSeq = page.fromSeq;
          }
        }
      }
    } finally {
      await store.close();
    }
  });

  it.each(['jsonl', 'binary'] as const)('writes the same sidecars reindex rebuilds (%s)', async (format) => {
    const file = fixtures[7]!;
    const id = `same-as-reindex-${format}`;
    await importSession(data.dir, file, { id, format });
    const p = sessionPaths(data.dir, id);
    const entries = readFileSync(p.entries);
    const meta = JSON.parse(readFileSync(p.meta, 'utf8'));
    await reindexSession(p);
    expect(readFileSync(p.entries).equals(entries)).toBe(true);
    expect(JSON.parse(readFileSync(p.meta, 'utf8'))).toEqual(meta);
  });

  it('refuses an existing id with a clear error (CLI exit 1, one line)', async () => {
    const file = fixtures[0]!;
    const first = await runCli(['import', file, '--id', 'dup', '--data', data.dir]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^imported dup from jsonl: \d+ events/);
    const again = await runCli(['import', file, '--id', 'dup', '--data', data.dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('session-pager import: session_exists: session dup already exists\n');
  });

  it('rejects bad input naming the line, and leaves nothing behind', async () => {
    const dir = tempDataDir('sp-import-bad-');
    try {
      const lines = readFileSync(fixtures[0]!, 'utf8').split('\n').filter((l) => l.length > 0);
      const cases: [string, string[], RegExp][] = [
        ['no-header', lines.slice(1), /line 1: the first line must be the session header/],
        ['gap', [lines[0]!, lines[1]!, lines[3]!], /line 3: .*expected 1 \(seqs must be contiguous from 0\)/],
        ['bad-json', [lines[0]!, lines[1]!, '{"type":'], /line 3: invalid JSON/],
        ['bad-row', [lines[0]!, '{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":0,"step":0,"index":0,"dt":[1,2],"texts":["a","b"]}}'], /line 2: .*dt has 2 entries, must be 1/],
        ['second-header', [lines[0]!, lines[0]!], /line 2: /],
      ];
      for (const [name, body, re] of cases) {
        const f = join(dir.dir, `${name}.jsonl`);
        writeFileSync(f, body.join('\n') + '\n');
        const r = await runCli(['import', f, '--data', join(dir.dir, 'data')]);
        expect(r.code, name).toBe(1);
        expect(r.stderr, name).toMatch(re);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        const p = sessionPaths(join(dir.dir, 'data'), name);
        for (const path of [p.events, p.entries, p.meta, p.lock]) expect(() => readFileSync(path)).toThrow();
      }
      const { readdirSync } = await import('node:fs');
      expect(readdirSync(join(dir.dir, 'data', 'sessions')).filter((n) => n !== 'index')).toEqual([]);
      expect(readdirSync(join(dir.dir, 'data', 'sessions', 'index'))).toEqual([]);
    } finally {
      dir.cleanup();
    }
  });

  it('rejects a cut Zstandard stream', async () => {
    const dir = tempDataDir('sp-import-zcut-');
    try {
      const src = readFileSync(zstdFixtures[0]!);
      const f = join(dir.dir, 'cut.jsonl.zstd');
      writeFileSync(f, src.subarray(0, src.length - 10));
      const r = await runCli(['import', f, '--data', join(dir.dir, 'data')]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^session-pager import: invalid_request: cut\.jsonl\.zstd: (Zstandard|invalid Zstandard|.*line)/);
    } finally {
      dir.cleanup();
    }
  });

  it('rejects an unknown --format as a usage error', async () => {
    const r = await runCli(['import', fixtures[0]!, '--format', 'xml', '--data', data.dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--format must be jsonl or binary/);
  });

  it('keeps the entry sidecar in step with the frames (one line per record, header first)', async () => {
    const p = sessionPaths(data.dir, defaultImportId(fixtures[3]!));
    const entries = readEntries(p.entries);
    expect(entries[0]).toMatchObject({ seq: 0, count: 0, offset: 0, kind: 'session' });
    expect(entries.length).toBe(readFileSync(fixtures[3]!, 'utf8').split('\n').filter((l) => l).length);
  });
});
