/**
 * Sessions imported or reindexed get the projections a session the writer
 * created has (maintenance/projection-files.ts): the whole binary frame
 * index (pages are planned from it), and checksum and row-metadata records
 * for exactly the frames whose bytes are what the writer writes for their
 * records (maintenance/checksum-build.ts), so those pages take the trusted
 * fast path; every other frame gets no record and is validated in full.
 * Pages equal the reference reader's either way, and the writer appends
 * after an import as after its own frames.
 */
import { crc32 } from 'node:zlib';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkEvent, packableChunk, validateRecord } from '../src/core/chunk-codec.js';
import type { PageParams, SessionEvent } from '../src/core/types.js';
import { diagnose } from '../src/main/maintenance/doctor.js';
import { defaultImportId, importSession } from '../src/main/maintenance/import.js';
import { reindexSession } from '../src/main/maintenance/reindex.js';
import { sessionPaths } from '../src/main/paths.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { SessionWriter } from '../src/main/session-writer.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { CRC_RECORD_BYTES } from '../src/streams/frame-crc-file.js';
import { META_RECORD_BYTES, META_ROW } from '../src/streams/frame-meta-file.js';
import { INDEX_RECORD_BYTES } from '../src/streams/frame-index-file.js';
import { decodeFrame, encodeFrame, type FrameEncoding } from '../src/streams/frame-codec.js';
import { dshFixtures, dshZstdFixtures } from './helpers/fixtures.js';
import { randomLogArb, writeRandomLog } from './helpers/random-log.js';

let dir: string;
let store: PagerStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-maint-proj-'));
  store = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0 });
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

function projection(id: string, name: string, data = dir): Buffer | null {
  const p = join(sessionPaths(data, id).projections, name);
  return existsSync(p) ? readFileSync(p) : null;
}

/** Every frame of the log: offset, bytes, and whether they are the writer's own for their record (its JSON.stringify or MessagePack; a packable delta event in chunkEvent's layout). */
function framesOf(id: string): { offset: number; bytes: Buffer; writers: boolean }[] {
  const log = readFileSync(sessionPaths(dir, id).events);
  const out: { offset: number; bytes: Buffer; writers: boolean }[] = [];
  for (let pos = 0; pos < log.length; ) {
    const f = decodeFrame(log, pos, pos);
    if (!f.ok) throw new Error(f.message);
    const bytes = log.subarray(pos, pos + f.length);
    let r = f.record as SessionEvent;
    if (pos > 0) validateRecord(r);
    const p = pos > 0 && r.type === 'assistant/chunk' ? packableChunk(r) : null;
    if (p !== null) r = chunkEvent(p.key, r.seq, r.time, p.member);
    out.push({ offset: pos, bytes, writers: encodeFrame(r, f.encoding as FrameEncoding).equals(bytes) });
    pos += f.length;
  }
  return out;
}

/** The checksum records are exactly one per writer-made frame, in order, each chained as the writer chains them. */
function expectChecksums(id: string): number {
  const crc = projection(id, 'frames.crc2') ?? Buffer.alloc(0);
  const meta = projection(id, 'frames.meta') ?? Buffer.alloc(0);
  const frames = framesOf(id).filter((f) => f.writers);
  expect(crc.length).toBe(frames.length * CRC_RECORD_BYTES);
  expect(meta.length).toBe(frames.length * META_RECORD_BYTES);
  let prevEnd = -1;
  let prevCrc = 0;
  frames.forEach((f, i) => {
    const o = i * CRC_RECORD_BYTES;
    expect(crc.readUInt32LE(o) + crc.readUInt32LE(o + 4) * 2 ** 32).toBe(f.offset);
    expect(crc.readUInt32LE(o + 8)).toBe(f.bytes.length);
    expect(crc.readUInt32LE(o + 12)).toBe(crc32(f.bytes, prevEnd === f.offset ? prevCrc : 0));
    // Row metadata names the frame's CRC.
    expect(meta.readUInt32LE(i * META_RECORD_BYTES + 32)).toBe(crc.readUInt32LE(o + 12));
    prevEnd = f.offset + f.bytes.length;
    prevCrc = crc.readUInt32LE(o + 12);
  });
  return frames.length;
}

/** Every packed row's frame has row metadata marking it a row (frames read by offset through the checksum records); the rows per type. */
function expectRowMetadata(id: string): Record<string, number> {
  const crc = projection(id, 'frames.crc2') ?? Buffer.alloc(0);
  const meta = projection(id, 'frames.meta') ?? Buffer.alloc(0);
  const recordAt = new Map<number, number>();
  for (let k = 0; k < crc.length / CRC_RECORD_BYTES; k++) recordAt.set(crc.readUInt32LE(k * CRC_RECORD_BYTES), k);
  const rows: Record<string, number> = {};
  for (const f of framesOf(id)) {
    const d = decodeFrame(f.bytes, 0, f.offset);
    const type = d.ok ? (d.record as { type: string }).type : '';
    if (!type.endsWith('-chunks')) continue;
    const k = recordAt.get(f.offset);
    expect(k, `${id} row at ${f.offset}`).toBeDefined();
    expect(meta.readUInt32LE((k as number) * META_RECORD_BYTES + 28) & META_ROW, `${id} ${type} at ${f.offset}`).toBe(META_ROW);
    rows[type] = (rows[type] ?? 0) + 1;
  }
  return rows;
}

async function expectPages(id: string, params: PageParams[]): Promise<void> {
  const log = await readWholeLog(sessionPaths(dir, id).events);
  for (const p of [{}, ...params]) expect(await store.page(id, p), JSON.stringify(p)).toEqual(referencePage(log, id, p));
}

async function expectPlannedFromIndex(id: string): Promise<void> {
  const frames = projection(id, 'frames.idx');
  const meta = JSON.parse(readFileSync(sessionPaths(dir, id).meta, 'utf8'));
  expect(frames?.length).toBe(meta.frameCount * INDEX_RECORD_BYTES);
  if (meta.nextSeq > 0) expect(((await store.plan(id, {})).plan as { fromIndex?: boolean }).fromIndex).toBe(true);
}

describe('import', () => {
  const files = [...dshFixtures().filter((f, i) => i % 20 === 3 || f.endsWith('acp-agent--hook-cc-pretool-ask.jsonl')), dshZstdFixtures()[0] as string];
  for (const format of ['jsonl', 'binary'] as const) {
    it(`(${format}) builds the frame index, checksums for every frame and row metadata for every packed row of dsh logs; doctor --deep finds them sound; pages equal the reference`, async () => {
      const rows: Record<string, number> = {};
      for (const file of files) {
        const id = `imp-${format}-${basename(file).replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60)}`;
        await importSession(dir, file, { id, format });
        await expectPlannedFromIndex(id);
        // dsh writes its lines as JSON.stringify does: every frame is the writer's.
        expect(expectChecksums(id), id).toBe(framesOf(id).length);
        for (const [type, n] of Object.entries(expectRowMetadata(id))) rows[type] = (rows[type] ?? 0) + n;
        const [report] = await diagnose(dir, id, { deep: true });
        expect([report?.status, report?.issues], id).toEqual(['ok', []]);
        await expectPages(id, [{ maxMessages: 1 }, { maxMessages: 3, beforeSeq: 5 }]);
      }
      // dsh's tool-call rows (id and name after the gaps) among them.
      expect(rows['tool-call-chunks']).toBeGreaterThanOrEqual(5);
    });
  }

  it('a frame in another layout gets no record, and still pages as the reference; the writer appends after the import', async () => {
    const lines = [
      JSON.stringify({ type: 'session', version: 1, id: 'x', createdAt: 1 }),
      JSON.stringify({ type: 'user/message', seq: 0, time: 10, data: { text: 'hi' } }),
      // Whitespace and a key order of another writer: not the writer's bytes.
      '{ "seq": 1, "type": "assistant/message", "time": 11, "data": {} }',
      // Packable delta events, the second in a key order chunkEvent never writes: it must still join the run.
      JSON.stringify(chunkEvent({ kind: 'text', turn: 0, step: 0, index: 0 }, 2, 12, 'a')),
      JSON.stringify({ type: 'assistant/chunk', seq: 3, time: 13, data: { step: 0, turn: 0, chunk: { type: 'text-delta', index: 0, text: 'b' } } }),
      JSON.stringify(chunkEvent({ kind: 'text', turn: 0, step: 0, index: 0 }, 4, 14, 'c')),
      JSON.stringify({ type: 'user/message', seq: 5, time: 15, data: { n: 1.0 } }),
    ];
    const file = join(dir, 'layouts.jsonl');
    writeFileSync(file, lines.join('\n') + '\n');
    await importSession(dir, file, { id: 'layouts' });
    const frames = framesOf('layouts');
    expect(frames.map((f) => f.writers)).toEqual([true, true, false, true, false, true, true]);
    expect(expectChecksums('layouts')).toBe(5);
    await expectPlannedFromIndex('layouts');
    await expectPages('layouts', [{ maxMessages: 1 }, { beforeSeq: 4 }]);
    // One run of three, packed across the foreign-layout frame.
    const page = await store.page('layouts', {});
    expect(page.records.filter((r) => 'chunks' in r)).toHaveLength(1);
    const w = await SessionWriter.open(dir, 'layouts', { durable: false });
    await w.append([{ type: 'user/message', seq: 6, time: 16, data: { text: 'more' } }, chunkEvent({ kind: 'text', turn: 1, step: 0, index: 0 }, 7, 17, 'd') as SessionEvent]);
    await w.close();
    expect(expectChecksums('layouts')).toBe(7);
    await expectPlannedFromIndex('layouts');
    await expectPages('layouts', [{ maxMessages: 1 }]);
  });
  it('re-encoded records are the writer\'s frames (a JSON array, or --format binary): a delta event in a foreign key order gets its records too', async () => {
    const header = { type: 'session', version: 1, id: 'x', createdAt: 1 };
    const events = [
      { type: 'user/message', seq: 0, time: 10, data: { text: 'hi' } },
      // A packable delta event in a key order chunkEvent never writes, between two in its order.
      chunkEvent({ kind: 'text', turn: 0, step: 0, index: 0 }, 1, 11, 'a'),
      { data: { step: 0, chunk: { text: 'b', index: 0, type: 'text-delta' }, turn: 0 }, time: 12, seq: 2, type: 'assistant/chunk' },
      chunkEvent({ kind: 'text', turn: 0, step: 0, index: 0 }, 3, 13, 'c'),
      { type: 'assistant/message', seq: 4, time: 14, data: { n: 1.0 } },
    ];
    const array = join(dir, 'reencoded.json');
    writeFileSync(array, JSON.stringify([header, ...events]));
    const lines = join(dir, 'reencoded.jsonl');
    writeFileSync(lines, [header, ...events].map((e) => JSON.stringify(e)).join('\n') + '\n');
    for (const [file, format, id] of [
      [array, 'jsonl', 'reenc-array-jsonl'],
      [array, 'binary', 'reenc-array-binary'],
      [lines, 'binary', 'reenc-lines-binary'],
    ] as const) {
      await importSession(dir, file, { id, format });
      expect(framesOf(id).every((f) => f.writers), id).toBe(true);
      expect(expectChecksums(id), id).toBe(1 + events.length);
      await expectPlannedFromIndex(id);
      await expectPages(id, [{ maxMessages: 1 }]);
      expect((await store.page(id, {})).records.filter((r) => 'chunks' in r)).toHaveLength(1);
    }
  });
});

describe('imported and reindexed sessions, against the writer', () => {
  const PROJECTIONS = ['frames.idx', 'frames.crc2', 'frames.meta'];
  const digest = (b: Buffer | null): string | null => (b === null ? null : `${b.length}:${crc32(b).toString(16)}`);
  /** A session's log, entry sidecar and projections, as lengths and CRCs (a short diff when they differ). */
  function files(data: string, id: string): Record<string, string | null> {
    const p = sessionPaths(data, id);
    const out: Record<string, string | null> = { log: digest(readFileSync(p.events)), entries: digest(readFileSync(p.entries)) };
    for (const name of PROJECTIONS) out[name] = digest(projection(id, name, data));
    return out;
  }
  const fixtures = [...dshFixtures().filter((_, i) => i % 25 === 7), dshZstdFixtures()[1] as string];

  for (const format of ['jsonl', 'binary'] as const) {
    it(`(${format}) a writer's log imported, or reindexed, has the writer's very log, sidecar and projections; doctor --deep finds them sound; pages equal the reference`, async () => {
      const root = join(dir, `vs-writer-${format}`);
      const [src, w, i, r] = ['src', 'w', 'i', 'r'].map((d) => join(root, d)) as [string, string, string, string];
      mkdirSync(join(r, 'sessions'), { recursive: true });
      const stores = await Promise.all([i, r].map((d) => openStore({ dataDir: d, inThread: true, pageCacheBytes: 0 })));
      try {
        for (const file of fixtures) {
          // The fixture's records, under the id its header names (the writer requires them equal).
          let id = defaultImportId(file);
          const header = (await importSession(src, file)).meta.header;
          if (header.id !== id) id = (await importSession(src, file, { id: String(header.id) })).id;
          const log = await readWholeLog(sessionPaths(src, id).events);
          // The writer appends them one frame's records a batch (it packs a row's events back into one row), in
          // JSONL too: a writer's JSONL log is a dsh session.jsonl, imported here in the format under test.
          for (const [data, f] of [[w, format], [join(root, 'wj'), 'jsonl']] as const) {
            if (existsSync(sessionPaths(data, id).events)) continue;
            const writer = await SessionWriter.create(data, id, log.header, { format: f, durable: false });
            for (const fr of log.frames) await writer.append(log.events.slice(fr.seq, fr.seq + fr.count));
            await writer.close();
          }
          await importSession(i, sessionPaths(join(root, 'wj'), id).events, { id, format });
          copyFileSync(sessionPaths(w, id).events, sessionPaths(r, id).events);
          await reindexSession(sessionPaths(r, id));
          const written = files(w, id);
          expect(written['frames.crc2'], id).not.toBeNull();
          expect(files(i, id), `${id} imported`).toEqual(written);
          expect(files(r, id), `${id} reindexed`).toEqual(written);
          for (const [data, s] of [[i, stores[0]], [r, stores[1]]] as const) {
            const [report] = await diagnose(data, id, { deep: true });
            expect(report?.status, id).toBe('ok');
            expect(report?.issues, id).toEqual([]);
            expect(((await s!.plan(id, {})).plan as { fromIndex?: boolean }).fromIndex, id).toBe(true);
            for (const p of [{}, { maxMessages: 1 }, { maxMessages: 3, beforeSeq: Math.floor(log.events.length / 2) }]) {
              expect(await s!.page(id, p), `${id} ${JSON.stringify(p)}`).toEqual(referencePage(log, id, p));
            }
          }
        }
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    });
  }

  it('their JSONL frames are read by the checksummed path: a byte changed inside a string, still valid JSON, fails its page', async () => {
    const file = dshFixtures().find((f) => f.includes('acp-agent--cancel.jsonl')) as string;
    const root = join(dir, 'vs-writer-tamper');
    mkdirSync(join(root, 'r', 'sessions'), { recursive: true });
    const id = defaultImportId(file);
    await importSession(join(root, 'i'), file, {});
    copyFileSync(sessionPaths(join(root, 'i'), id).events, sessionPaths(join(root, 'r'), id).events);
    await reindexSession(sessionPaths(join(root, 'r'), id));
    for (const data of [join(root, 'i'), join(root, 'r')]) {
      const s = await openStore({ dataDir: data, inThread: true, pageCacheBytes: 0 });
      try {
        const p = sessionPaths(data, id);
        const log = await readWholeLog(p.events);
        const bytes = readFileSync(p.events);
        // The last frame with a string value of letters only: one of them becomes another, so the line is still a valid record.
        const text = (f: { offset: number; length: number }): string => bytes.subarray(f.offset, f.offset + f.length).toString('latin1');
        const frame = [...log.frames].reverse().find((f) => /:"[a-z]{3,}"/.test(text(f))) as (typeof log.frames)[number];
        const at = frame.offset + text(frame).search(/:"[a-z]{3,}"/) + 2;
        bytes[at] = bytes[at] === 0x78 ? 0x79 : 0x78;
        writeFileSync(p.events, bytes);
        const page = { throughSeq: frame.seq + frame.count - 1, maxMessages: 1 };
        await expect(s.page(id, page)).rejects.toMatchObject({ code: 'corrupt_range', message: expect.stringContaining('does not match the checksum') });
      } finally {
        await s.close();
      }
    }
  });
});

describe('reindex', () => {
  it('rebuilds a writer-made session\'s checksum and row-metadata files byte for byte, and its frame index', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(randomLogArb(), fc.constantFrom<FrameEncoding>('jsonl', 'binary'), async (spec, format) => {
        const id = `re${n++}`;
        // One encoding, so one writer wrote every frame (a reopen starts the row metadata's block afresh).
        await writeRandomLog({ ...spec, batches: spec.batches.map((b) => ({ ...b, format })) }, { dataDir: dir, id });
        const before = ['frames.crc2', 'frames.meta', 'frames.idx'].map((name) => projection(id, name));
        await reindexSession(sessionPaths(dir, id));
        const after = ['frames.crc2', 'frames.meta', 'frames.idx'].map((name) => projection(id, name));
        expect(after).toEqual(before);
        expectChecksums(id);
        await expectPages(id, [{ maxMessages: 2 }]);
      }),
      { numRuns: 25 },
    );
  });

  it('gives a damaged middle frame no record, and the frames around it theirs', async () => {
    await writeRandomLog({ events: [0, 1, 2, 3].map((seq) => ({ type: 'user/message', seq, time: seq, data: { text: `m${seq}` } })), batches: [{ size: 1, format: 'jsonl' }] }, { dataDir: dir, id: 'dmg' });
    const p = sessionPaths(dir, 'dmg');
    const log = readFileSync(p.events);
    const at = log.indexOf('"m2"');
    log[at + 1] = 0x01; // a control character inside a string: no longer JSON
    writeFileSync(p.events, log);
    await reindexSession(p);
    const crc = projection('dmg', 'frames.crc2') as Buffer;
    // Header and seqs 0, 1, 3.
    expect(crc.length / CRC_RECORD_BYTES).toBe(4);
    const offsets = Array.from({ length: 4 }, (_, i) => crc.readUInt32LE(i * CRC_RECORD_BYTES));
    expect(offsets.every((o) => o < at || o > at)).toBe(true);
    expect((await store.page('dmg', { maxMessages: 1 })).records).toHaveLength(1);
  });
});
