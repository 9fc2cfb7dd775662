/**
 * Binary (SPF2 + MessagePack) frames on the page path, read through the
 * MessagePack-to-JSON transcoder (workers/binary-frame.ts): pages of binary
 * and mixed logs equal the reference reader's, byte for byte as
 * JSON.stringify writes them, both as the writer wrote them (checksummed)
 * and as a foreign encoder may (every integer, string and container width,
 * other key orders, floats for integers; no checksum records), and a binary
 * session's page bytes are exactly those of the same events stored as JSONL.
 */
import { crc32 } from 'node:zlib';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packBatch } from '../src/core/chunk-codec.js';
import type { PageParams, SessionEvent } from '../src/core/types.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { reindexSession } from '../src/main/maintenance/reindex.js';
import { sessionPaths } from '../src/main/paths.js';
import { BINARY_FRAME_VERSION, BINARY_HEADER_BYTES, encodeJsonlFrame, RECORD_SCHEMA } from '../src/streams/frame-codec.js';
import { eventStreamArb, randomLogArb, writeRandomLog, type RandomLogSpec } from './helpers/random-log.js';
import { cycling, encode, foreignNode } from './helpers/msgpack-hand.js';

let dir: string;
let store: PagerStore;
/** Every page cut into many slices on 4 workers, results in place: slice edges inside binary runs. */
let splitting: PagerStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-binary-page-'));
  store = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0 });
  splitting = await openStore({ dataDir: dir, workers: 4, splitCost: 1, inPlaceBytes: 0, pageCacheBytes: 0 });
});

afterAll(async () => {
  await store?.close();
  await splitting?.close();
  rmSync(dir, { recursive: true, force: true });
});

const paramsArb = fc.array(
  fc.record({
    through: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
    before: fc.option(fc.double({ min: 0, max: 1.2, noNaN: true }), { nil: undefined }),
    maxMessages: fc.integer({ min: 1, max: 6 }),
  }),
  { minLength: 1, maxLength: 4 },
);

function pageParams(p: { through?: number; before?: number; maxMessages: number }, n: number): PageParams {
  const out: PageParams = { maxMessages: p.maxMessages };
  if (n > 0 && p.through !== undefined) out.throughSeq = Math.floor(p.through * (n - 1));
  if (n > 0 && p.before !== undefined) out.beforeSeq = Math.min(Math.floor(p.before * n), n);
  if (out.throughSeq !== undefined && out.beforeSeq !== undefined && out.beforeSeq > out.throughSeq + 1) out.beforeSeq = out.throughSeq + 1;
  return out;
}

/** Each store's page equals the reference page, and its bytes are JSON.stringify of it. */
async function expectSamePages(id: string, logPath: string, params: PageParams[]): Promise<void> {
  const log = await readWholeLog(logPath);
  for (const p of [{}, ...params]) {
    const expected = referencePage(log, id, p);
    for (const s of [store, splitting]) {
      const got = await s.pageBuffer(id, p);
      expect(got.body.toString('utf8'), JSON.stringify(p)).toBe(JSON.stringify(expected));
    }
  }
}

let n = 0;

describe('binary logs the writer wrote', () => {
  it('pages equal the reference, byte for byte, on random all-binary and mixed logs', async () => {
    await fc.assert(
      fc.asyncProperty(randomLogArb(), fc.boolean(), paramsArb, async (spec, allBinary, ps) => {
        const s: RandomLogSpec = allBinary ? { ...spec, batches: spec.batches.map((b) => ({ ...b, format: 'binary' })) } : spec;
        const id = `w${n++}`;
        await writeRandomLog(s, { dataDir: dir, id });
        await expectSamePages(id, sessionPaths(dir, id).events, ps.map((p) => pageParams(p, s.events.length)));
      }),
      { numRuns: 40 },
    );
  }, 240_000);

  it('a binary session pages the very bytes the same events stored as JSONL do', async () => {
    await fc.assert(
      fc.asyncProperty(randomLogArb(), paramsArb, async (spec, ps) => {
        const k = n++;
        await writeRandomLog({ ...spec, batches: spec.batches.map((b) => ({ ...b, format: 'binary' })) }, { dataDir: dir, id: `b${k}` });
        await writeRandomLog({ ...spec, batches: spec.batches.map((b) => ({ ...b, format: 'jsonl' })) }, { dataDir: dir, id: `j${k}` });
        for (const p of [{}, ...ps.map((x) => pageParams(x, spec.events.length))]) {
          const b = (await store.pageBuffer(`b${k}`, p)).body.toString('utf8');
          const j = (await store.pageBuffer(`j${k}`, p)).body.toString('utf8');
          expect(b.replace(`"sessionId":"b${k}"`, '')).toBe(j.replace(`"sessionId":"j${k}"`, ''));
        }
      }),
      { numRuns: 15 },
    );
  }, 240_000);
});

/** A log of the events' records (packed per batch as the writer packs), each frame MessagePack with foreign widths, or now and then JSONL. */
function foreignLog(id: string, events: SessionEvent[], batch: number, picks: number[]): Buffer {
  const next = cycling(picks);
  const frames: Buffer[] = [encodeJsonlFrame({ type: 'session', version: 1, id, createdAt: 1_700_000_000_000 })];
  for (let at = 0; at < events.length; at += batch) {
    for (const r of packBatch(events.slice(at, at + batch))) {
      if (next() < 0.1) {
        frames.push(encodeJsonlFrame(r));
        continue;
      }
      const payload = encode(foreignNode(r, next));
      const h = Buffer.alloc(BINARY_HEADER_BYTES);
      h.write('SPF2', 0, 'latin1');
      h.writeUInt16LE(BINARY_FRAME_VERSION, 4);
      h.writeUInt16LE(RECORD_SCHEMA, 6);
      h.writeUInt32LE(payload.length, 8);
      h.writeUInt32LE(crc32(payload), 12);
      frames.push(h, payload);
    }
  }
  return Buffer.concat(frames);
}

describe('binary frames another encoder wrote', () => {
  it('pages equal the reference, byte for byte (sidecars from reindex)', async () => {
    await fc.assert(
      fc.asyncProperty(eventStreamArb(), fc.integer({ min: 1, max: 60 }), fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { minLength: 1, maxLength: 40 }), paramsArb, async (events, batch, picks, ps) => {
        const id = `f${n++}`;
        const paths = sessionPaths(dir, id);
        writeFileSync(paths.events, foreignLog(id, events, batch, picks));
        await reindexSession(paths);
        await expectSamePages(id, paths.events, ps.map((p) => pageParams(p, events.length)));
      }),
      { numRuns: 40 },
    );
  }, 240_000);
});
