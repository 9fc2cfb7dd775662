/**
 * `import` of one JSON document whose top level is an array of events (an
 * export of SessionEvent[]), read as a stream (stream-json): the events come
 * back exactly (as JSON.parse reads them), the header is the first element
 * or made up, Zstandard framing works the same, and a bad document is one
 * line naming where, with nothing left behind.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandRecords } from '../src/core/chunk-codec.js';
import type { SessionEvent } from '../src/core/types.js';
import { importSession } from '../src/main/maintenance/import.js';
import { sessionPaths } from '../src/main/paths.js';
import { decodeWholeLog, referencePage } from '../src/main/reference-reader.js';
import { loadSessionState } from '../src/main/session-state.js';
import { openStore } from '../src/main/store.js';
import { dshFixtures } from './helpers/fixtures.js';
import { eventsViaSidecar, runCli, tempDataDir } from './helpers/maint.js';

/** A Zstandard frame of raw (stored) blocks: what fzstd decodes, made without a compressor. */
function zstdRaw(data: Buffer): Buffer {
  const BLOCK = 128 * 1024;
  // Frame header descriptor 0 (no content size, no checksum), window descriptor 2^(10+8) = 256 KiB.
  const parts: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x40])];
  for (let off = 0; off === 0 || off < data.length; off += BLOCK) {
    const block = data.subarray(off, off + BLOCK);
    const last = off + BLOCK >= data.length ? 1 : 0;
    const h = (block.length << 3) | last; // block type 0: raw
    parts.push(Buffer.from([h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff]), block);
  }
  return Buffer.concat(parts);
}

function sessionFiles(dataDir: string): string[] {
  const out: string[] = [];
  for (const d of ['sessions', 'sessions/index']) {
    const p = join(dataDir, d);
    if (existsSync(p)) out.push(...readdirSync(p).filter((f) => f !== 'index').map((f) => `${d}/${f}`));
  }
  return out.sort();
}

describe('import of a JSON array of events', () => {
  let data: { dir: string; cleanup: () => void };
  const fixture = dshFixtures().find((f) => basename(f) === 'web--goal-multi-turn-actions.jsonl') ?? dshFixtures()[0]!;
  const ref = decodeWholeLog(readFileSync(fixture));
  beforeAll(() => {
    data = tempDataDir('sp-import-array-');
  });
  afterAll(() => data.cleanup());

  it('with the header as its first element: the same header and events as the JSONL log', async () => {
    const file = join(data.dir, 'export-with-header.json');
    writeFileSync(file, JSON.stringify([ref.header, ...ref.events], null, 2));
    const r = await importSession(join(data.dir, 'd'), file, {});
    expect(r).toMatchObject({ id: 'export-with-header', document: 'json-array', source: 'jsonl', events: ref.events.length, verbatim: false });
    const p = sessionPaths(join(data.dir, 'd'), r.id);
    const got = decodeWholeLog(readFileSync(p.events));
    expect(got.header).toEqual(ref.header);
    expect(got.events).toEqual(ref.events);
    expect(eventsViaSidecar(p.events, p.entries)).toEqual(ref.events);
    expect((await loadSessionState(p)).status).toBe('ok');
    // And it pages like the reference reader.
    const store = await openStore({ dataDir: join(data.dir, 'd'), workers: 1 });
    try {
      for (const params of [{}, { maxMessages: 2 }, { maxMessages: 1, beforeSeq: Math.floor(ref.events.length / 2) }]) {
        expect(await store.page(r.id, params)).toEqual(referencePage(got, r.id, params));
      }
    } finally {
      await store.close();
    }
  });

  it('without a header: one is made up from the id and the first event time (binary format too)', async () => {
    const file = join(data.dir, 'plain.json');
    // A byte order mark and blank space before the array are fine.
    writeFileSync(file, '\ufeff \n' + JSON.stringify(ref.events));
    const r = await importSession(join(data.dir, 'd'), file, { id: 'made-up', format: 'binary' });
    expect(r).toMatchObject({ id: 'made-up', document: 'json-array', format: 'binary', events: ref.events.length });
    const got = decodeWholeLog(readFileSync(sessionPaths(join(data.dir, 'd'), 'made-up').events));
    expect(got.header).toEqual({ type: 'session', version: 0, id: 'made-up', createdAt: ref.events[0]!.time });
    expect(got.events).toEqual(ref.events);
  });

  it('values come back as JSON.parse reads them: __proto__ keys, lone surrogates, escapes, numbers, packed rows', async () => {
    const text = '[{"type":"user/message","seq":0,"time":-5,"data":{"__proto__":{"x":1},"s":"\\ud800 \\u00e9 \\n \\"q\\" \\\\","n":[1.5e3,-1,0.1,12345678901234567890],"t":true,"f":false,"z":null,"o":{},"a":[]}},' +
      '{"type":"text-chunks","seq0":1,"time0":1,"data":{"turn":0,"step":0,"index":0,"dt":[1,2],"texts":["a","b","c"]}},' +
      '{"type":"custom/kind","seq":4,"time":9,"data":{"deep":[[[{"k":"v"}]]]},"extra":"kept"}]';
    const file = join(data.dir, 'odd.json');
    writeFileSync(file, text);
    const r = await importSession(join(data.dir, 'd'), file, {});
    expect(r.events).toBe(5);
    const got = decodeWholeLog(readFileSync(sessionPaths(join(data.dir, 'd'), 'odd').events));
    const want = expandRecords((JSON.parse(text) as Record<string, unknown>[]).map((v) => ('seq0' in v ? { chunks: v } : { event: v })) as never) as SessionEvent[];
    expect(got.events).toEqual(want);
    const first = got.events[0] as SessionEvent & { data: Record<string, unknown> };
    expect(Object.getPrototypeOf(first.data)).toBe(Object.prototype);
    expect(Object.keys(first.data)[0]).toBe('__proto__');
  });

  it('Zstandard-framed: the same as plain', async () => {
    const file = join(data.dir, 'framed.json.zstd');
    writeFileSync(file, zstdRaw(Buffer.from(JSON.stringify([ref.header, ...ref.events]))));
    const r = await importSession(join(data.dir, 'd'), file, {});
    expect(r).toMatchObject({ id: 'framed', source: 'zstd', document: 'json-array' });
    expect(decodeWholeLog(readFileSync(sessionPaths(join(data.dir, 'd'), 'framed').events)).events).toEqual(ref.events);
  });

  it.each([
    ['not JSON past some elements', '[{"type":"a","seq":0,"time":1},{"type":"b","seq":1,"time":2},\u0001\u00ff garbage', /^session-pager import: invalid_request: bad\.json: invalid JSON array document: .*\(after 2 complete elements\)$/],
    ['cut short', '[{"type":"a","seq":0,"time":1},{"type":"b","seq":1,', /^session-pager import: invalid_request: bad\.json: invalid JSON array document: .*/],
    ['an element that is not an event', '[{"type":"a","seq":0,"time":1},{"type":"b","seq":"\\u001b[31m","time":2}]', /^session-pager import: invalid_request: bad\.json element 1: event b at seq "\\x1b\[31m": seq must be a non-negative safe integer$/],
    ['a seq gap', '[{"type":"a","seq":0,"time":1},{"type":"b","seq":5,"time":2}]', /^session-pager import: invalid_request: bad\.json element 1: event starts at seq 5, expected 1/],
    ['a second header', '[{"type":"a","seq":0,"time":1},{"type":"session","version":0,"id":"x"}]', /^session-pager import: invalid_request: bad\.json element 1: /],
    ['an element that is not an object', '[{"type":"a","seq":0,"time":1},7]', /^session-pager import: invalid_request: bad\.json element 1: is not a JSON object$/],
    ['data after the array', '[{"type":"a","seq":0,"time":1}] [', /^session-pager import: invalid_request: bad\.json: invalid JSON array document: /],
    ['an element nested too deep', `[{"type":"a","seq":0,"time":1,"data":${'['.repeat(300)}${']'.repeat(300)}}]`, /^session-pager import: invalid_request: bad\.json element 0: the record is nested deeper than 128 levels of objects and arrays$/],
    ['an empty array', '[]', /^session-pager import: invalid_request: bad\.json: no session header \(the array is empty\)$/],
  ])('%s: one line, exit 1, no raw bytes, nothing left behind', async (_what, body, line) => {
    const dir = join(data.dir, `bad-${Math.random().toString(36).slice(2)}`);
    const file = join(data.dir, 'bad.json');
    writeFileSync(file, body);
    const r = await runCli(['import', file, '--data', dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')).toHaveLength(2);
    expect(r.stderr.trimEnd()).toMatch(line);
    expect(r.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\ufffd]/);
    expect(sessionFiles(dir)).toEqual([]);
  });
});

describe('error lines never print raw input', () => {
  let data: { dir: string; cleanup: () => void };
  beforeAll(() => {
    data = tempDataDir('sp-import-raw-');
  });
  afterAll(() => data.cleanup());

  it.each([
    ['binary garbage on a JSONL line', Buffer.concat([Buffer.from('{"type":"session","version":0,"id":"g","createdAt":1}\n{"a":'), Buffer.from([0x00, 0x1b, 0x5b, 0x32, 0x4a, 0xff, 0xfe, 0x07]), Buffer.from('x'.repeat(500)), Buffer.from('\n')])],
    ['a binary file', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))],
    ['a header whose type is a long escape sequence', Buffer.from(JSON.stringify({ type: '\u001b]0;pwned\u0007' + 'y'.repeat(300) }) + '\n')],
  ])('%s: the line quotes and cuts what it shows', async (_what, bytes) => {
    const file = join(data.dir, 'input.jsonl');
    writeFileSync(file, bytes);
    const r = await runCli(['import', file, '--data', join(data.dir, 'd')]);
    expect(r.code).toBe(1);
    const line = r.stderr.trimEnd();
    expect(r.stderr.split('\n')).toHaveLength(2);
    expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\ufffd]/);
    expect(line.length).toBeLessThan(300);
  });
});
