/**
 * Every error the page path can give, with the code it must give: bad
 * parameters, unknown sessions, a corrupt middle frame (served around,
 * refused when covered), a torn tail (not served), broken sidecars.
 */
import { appendFileSync, mkdtempSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/core/types.js';
import { readWholeLog, referencePage } from '../src/main/reference-reader.js';
import { openStore, type PagerStore } from '../src/main/store.js';
import { writeRandomLog } from './helpers/random-log.js';

let dir: string;
let store: PagerStore;

function conversation(turns: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  const push = (e: Record<string, unknown>) => out.push({ ...e, seq: out.length, time: 1_000 + out.length } as SessionEvent);
  for (let t = 0; t < turns; t++) {
    push({ type: 'user/message', data: { text: `q${t}` }, surfaceOp: 'append' });
    const first = out.length;
    for (let k = 0; k < 10; k++) push({ type: 'assistant/chunk', data: { turn: t, step: 0, chunk: { type: 'text-delta', index: 0, text: `w${k}` } } });
    push({ type: 'assistant/message', data: { text: 'a' }, surfaceOp: 'append', sourceEventSeqs: Array.from({ length: 10 }, (_, i) => first + i) });
  }
  return out;
}

async function rejects(p: Promise<unknown>, code: string): Promise<Record<string, unknown>> {
  const err = await p.then(
    () => {
      throw new Error(`expected ${code}, got a page`);
    },
    (e: unknown) => e as Record<string, unknown>,
  );
  expect(err.code).toBe(code);
  return err;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sp-err-'));
  store = await openStore({ dataDir: dir, workers: 2 });
  await writeRandomLog({ events: conversation(20), batches: [{ size: 6, format: 'jsonl' }] }, { dataDir: dir, id: 'ok' });
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('request errors', () => {
  it('rejects parameters out of range with invalid_request', async () => {
    const last = (await store.info('ok')).lastSeq;
    await rejects(store.page('ok', { throughSeq: last + 1 }), 'invalid_request');
    await rejects(store.page('ok', { maxMessages: 0 }), 'invalid_request');
    await rejects(store.page('ok', { maxMessages: 1001 }), 'invalid_request');
    await rejects(store.page('ok', { maxBytes: 0 }), 'invalid_request');
    await rejects(store.page('ok', { beforeSeq: -1 }), 'invalid_request');
    await rejects(store.page('ok', { throughSeq: 1.5 }), 'invalid_request');
    await rejects(store.page('ok', { throughSeq: Number.MAX_SAFE_INTEGER + 2 }), 'invalid_request');
  });

  it('rejects bad and unknown session ids', async () => {
    await rejects(store.page('../etc', {}), 'invalid_request');
    await rejects(store.page('a..b', {}), 'invalid_request');
    await rejects(store.page('.hidden', {}), 'invalid_request');
    await rejects(store.page('nope', {}), 'session_not_found');
  });

  it('serves an empty session as throughSeq -1 and an empty page', async () => {
    await store.create('empty', { type: 'session' });
    expect(await store.page('empty')).toEqual({ sessionId: 'empty', throughSeq: -1, fromSeq: 0, toSeq: 0, hasMore: false, records: [] });
  });

  it('serves beforeSeq 0 as an empty first page', async () => {
    const p = await store.page('ok', { beforeSeq: 0 });
    expect(p).toMatchObject({ fromSeq: 0, toSeq: 0, hasMore: false, records: [] });
  });
});

describe('damaged logs', () => {
  it('a corrupt binary frame in the middle: pages around it are served, a page covering it is corrupt_range naming its seqs', async () => {
    const events = conversation(30);
    await writeRandomLog({ events: events, batches: [{ size: 12, format: 'binary' }] }, { dataDir: dir, id: 'crc' });
    const entries = readFileSync(join(dir, 'sessions/index/crc.entries.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const victim = entries[Math.floor(entries.length / 2)];
    const path = join(dir, 'sessions/crc.events');
    const log = await readWholeLog(path);
    const bytes = readFileSync(path);
    bytes[victim.offset + 20] ^= 0xff; // inside the payload: the CRC catches it
    writeFileSync(path, bytes);
    const tail = await store.page('crc', { maxMessages: 2 });
    expect(tail).toEqual(referencePage(log, 'crc', { maxMessages: 2 }));
    const err = await rejects(store.page('crc', { maxMessages: 1000 }), 'corrupt_range');
    expect(err.details).toMatchObject({ fromSeq: victim.seq, toSeq: victim.seq + victim.count, offset: victim.offset });
    expect(String(err.message)).toContain(`[${victim.seq}, ${victim.seq + victim.count})`);
    expect(String(err.message)).toMatch(/CRC-32 mismatch/);
    const info = await store.info('crc');
    expect(info.status).toBe('degraded');
    expect(info.reasons.join(' ')).toContain(`offset ${victim.offset}`);
  });

  it('a JSONL frame that no longer decodes is corrupt_range', async () => {
    await writeRandomLog({ events: conversation(10), batches: [{ size: 5, format: 'jsonl' }] }, { dataDir: dir, id: 'json' });
    const entries = readFileSync(join(dir, 'sessions/index/json.entries.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const victim = entries[3];
    const path = join(dir, 'sessions/json.events');
    const bytes = readFileSync(path);
    bytes[victim.offset + 1] = 0x21; // '{"type"' -> '{!type"'
    writeFileSync(path, bytes);
    const err = await rejects(store.page('json', { maxMessages: 1000 }), 'corrupt_range');
    expect(err.details).toMatchObject({ fromSeq: victim.seq, offset: victim.offset });
    expect(String(err.message)).toMatch(/invalid JSON/);
  });

  it('a torn tail past the indexed frames is never served; the indexed prefix still is', async () => {
    const events = conversation(5);
    await writeRandomLog({ events: events, batches: [{ size: 4, format: 'jsonl' }] }, { dataDir: dir, id: 'torn' });
    const path = join(dir, 'sessions/torn.events');
    const log = await readWholeLog(path);
    appendFileSync(path, '{"type":"user/message","seq":' + events.length + ',"ti');
    const p = await store.page('torn', { maxMessages: 1000 });
    expect(p).toEqual(referencePage(log, 'torn', { maxMessages: 1000 }));
    const info = await store.info('torn');
    expect(info.status).toBe('degraded');
    expect(info.reasons.join(' ')).toMatch(/unindexed tail/);
  });

  it('a log shorter than its sidecar says is repair_required', async () => {
    await writeRandomLog({ events: conversation(5), batches: [{ size: 4, format: 'jsonl' }] }, { dataDir: dir, id: 'short' });
    const path = join(dir, 'sessions/short.events');
    truncateSync(path, readFileSync(path).length - 10);
    await rejects(store.page('short'), 'repair_required');
    expect((await store.info('short')).status).toBe('repair_required');
  });

  it('a missing entry sidecar is repair_required, and the catalog still lists everything', async () => {
    await writeRandomLog({ events: conversation(3), batches: [{ size: 4, format: 'jsonl' }] }, { dataDir: dir, id: 'nosidecar' });
    rmSync(join(dir, 'sessions/index/nosidecar.entries.jsonl'));
    await rejects(store.page('nosidecar'), 'repair_required');
    const list = await store.list();
    const byId = new Map(list.map((e) => [e.id, e]));
    expect(byId.get('nosidecar')?.status).toBe('repair_required');
    expect(byId.get('ok')?.status).toBe('ok');
  });
});

describe('abandoned requests', () => {
  it('an aborted signal stops the page before any slice is queued', async () => {
    const ac = new AbortController();
    ac.abort();
    const before = store.stats().pool.completed;
    await expect(store.pageBuffer('ok', {}, ac.signal)).rejects.toMatchObject({ name: 'AbortError' });
    expect(store.stats().pool.completed).toBe(before);
  });
});

describe('frame-checksum projection', () => {
  it('a wrong, shuffled or cut projection never changes a page', async () => {
    const events = conversation(25);
    await writeRandomLog({ events, batches: [{ size: 9, format: 'jsonl' }] }, { dataDir: dir, id: 'crcproj' });
    const crcFile = join(dir, 'sessions/index/crcproj/frames.crc2');
    const good = readFileSync(crcFile);
    expect(good.length % 16).toBe(0);
    expect(good.length / 16).toBeGreaterThan(10);
    const log = await readWholeLog(join(dir, 'sessions/crcproj.events'));
    const garbled = Buffer.from(good);
    for (let i = 12; i < garbled.length; i += 16) garbled.writeUInt32LE((garbled.readUInt32LE(i) ^ 0x5a5a5a5a) >>> 0, i);
    const shuffled = Buffer.concat([good.subarray(good.length / 2), good.subarray(0, good.length / 2)]);
    for (const variant of [garbled, shuffled, good.subarray(0, 37), Buffer.alloc(0)]) {
      writeFileSync(crcFile, variant);
      for (const params of [{}, { maxMessages: 3 }, { maxMessages: 1000 }, { throughSeq: 100, maxMessages: 2 }]) {
        expect(await store.page('crcproj', params)).toEqual(referencePage(log, 'crcproj', params));
      }
    }
  });

  it('a frame changed after it was written is never served, even when it still parses (issue 16 item 9)', async () => {
    await writeRandomLog({ events: conversation(8), batches: [{ size: 40, format: 'jsonl' }] }, { dataDir: dir, id: 'crcedit' });
    const path = join(dir, 'sessions/crcedit.events');
    const bytes = readFileSync(path);
    const before = await readWholeLog(path);
    // Inside a packed row's member list: still valid JSON, different text. The projection
    // holds the CRC its writer computed: the page that covers it fails, naming its events.
    const at = bytes.indexOf('"texts":["w0"');
    expect(at).toBeGreaterThan(0);
    const entries = readFileSync(join(dir, 'sessions/index/crcedit.entries.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; count: number; offset: number; length: number });
    const victim = entries.find((e) => e.offset <= at && at < e.offset + e.length);
    expect(victim).toBeDefined();
    bytes[at + 10] = 0x78; // w0 -> x0
    writeFileSync(path, bytes);
    const err = await rejects(store.page('crcedit', { maxMessages: 1000 }), 'corrupt_range');
    expect(err.details).toMatchObject({ fromSeq: victim?.seq, toSeq: (victim?.seq ?? 0) + (victim?.count ?? 0), offset: victim?.offset });
    expect(String(err.message)).toMatch(/does not match the checksum its writer recorded/);
    // Pages that do not cover it are served as written.
    const tail = { throughSeq: before.events.length - 1, maxMessages: 1 };
    expect(await store.page('crcedit', tail)).toEqual(referencePage(before, 'crcedit', tail));
    // And a change that breaks the JSON of a member is named by its decode error.
    bytes[at + 11] = 0x01; // a raw control character inside the string
    writeFileSync(path, bytes);
    await rejects(store.page('crcedit', { maxMessages: 1000 }), 'corrupt_range');
  });
});

describe('row-metadata projection', () => {
  // Binary (SPF2) rows have records too: read from them, they skip their header and gap walk.
  it.each(['jsonl', 'binary'] as const)('%s rows read from their metadata page exactly as scanned ones; damaged, foreign, cut or missing metadata never changes a page', async (format) => {
    // Runs of 10 deltas appended 4 events at a time: most row frames continue the previous one's block.
    const events = conversation(30);
    const id = `rowmeta-${format}`;
    const other = `rowmeta2-${format}`;
    await writeRandomLog({ events, batches: [{ size: 4, format }] }, { dataDir: dir, id });
    await writeRandomLog({ events: conversation(31), batches: [{ size: 4, format }] }, { dataDir: dir, id: other });
    const metaFile = (id: string) => join(dir, `sessions/index/${id}/frames.meta`);
    const good = readFileSync(metaFile(id));
    expect(good.length % 40).toBe(0);
    const continuing = Array.from({ length: good.length / 40 }, (_, k) => good.readUInt32LE(k * 40 + 28)).filter((f) => f === 3).length;
    expect(continuing).toBeGreaterThan(20);
    const log = await readWholeLog(join(dir, `sessions/${id}.events`));
    // Payload bytes changed (the chain no longer holds).
    const garbled = Buffer.from(good);
    for (let o = 0; o < garbled.length; o += 40) garbled.writeDoubleLE(garbled.readDoubleLE(o) + 1, o);
    // Another session's records: an unbroken chain, for other frame bytes.
    const foreign = readFileSync(metaFile(other)).subarray(0, good.length);
    const shuffled = Buffer.concat([good.subarray(good.length / 2), good.subarray(0, good.length / 2)]);
    // No prepared-page cache: every page below is built from the files as they are.
    const fresh = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0 });
    try {
      for (const variant of [good, garbled, foreign, shuffled, good.subarray(0, good.length - 40 * 7), Buffer.alloc(0), null]) {
        if (variant === null) rmSync(metaFile(id));
        else writeFileSync(metaFile(id), variant);
        for (const params of [{}, { maxMessages: 3 }, { maxMessages: 1000 }, { throughSeq: 100, maxMessages: 2 }, { beforeSeq: 151, maxMessages: 4 }]) {
          expect(await fresh.page(id, params)).toEqual(referencePage(log, id, params));
        }
      }
      expect((await fresh.info(id)).status).toBe('ok');
    } finally {
      await fresh.close();
    }
  });
});

describe('binary frame index', () => {
  it('a cut, missing or lying index never changes a page or marks the session damaged', async () => {
    const events = conversation(25);
    await writeRandomLog({ events, batches: [{ size: 9, format: 'jsonl' }] }, { dataDir: dir, id: 'idx' });
    const idxFile = join(dir, 'sessions/index/idx/frames.idx');
    const good = readFileSync(idxFile);
    expect(good.length % 32).toBe(0);
    const log = await readWholeLog(join(dir, 'sessions/idx.events'));
    // Middle records that lie about their seqs: the ends still agree, so the planner uses
    // them, the workers find the frames do not match, and the page is planned again from
    // the sidecar.
    const lying = Buffer.from(good);
    for (let o = 32; o < good.length - 32; o += 32) lying.writeDoubleLE(lying.readDoubleLE(o) + 1, o);
    for (const variant of [lying, good.subarray(0, good.length - 32), Buffer.alloc(0), good]) {
      writeFileSync(idxFile, variant);
      for (const params of [{}, { maxMessages: 3 }, { maxMessages: 1000 }, { throughSeq: 100, maxMessages: 2 }, { beforeSeq: 150, maxMessages: 4 }]) {
        expect(await store.page('idx', params)).toEqual(referencePage(log, 'idx', params));
      }
      expect((await store.info('idx')).status).toBe('ok');
    }
  });

  it('projections replaced by a rename while the session is unchanged are read anew, not through the readers kept open for them', async () => {
    const events = conversation(25);
    await writeRandomLog({ events, batches: [{ size: 9, format: 'jsonl' }] }, { dataDir: dir, id: 'kept' });
    const log = await readWholeLog(join(dir, 'sessions/kept.events'));
    const file = (name: string) => join(dir, `sessions/index/kept/${name}`);
    // No prepared-page cache: every page is built from the files.
    const fresh = await openStore({ dataDir: dir, workers: 2, pageCacheBytes: 0 });
    try {
      const params = { throughSeq: 200, maxMessages: 3 };
      const want = referencePage(log, 'kept', params);
      expect(await fresh.page('kept', params)).toEqual(want);
      const before = fresh.stats().cache;
      expect(await fresh.page('kept', params)).toEqual(want);
      const kept = fresh.stats().cache;
      // The same files: the readers of the index, checksums and row metadata are used again.
      expect(kept.readersOpened).toBe(before.readersOpened);
      expect(kept.readersReused - before.readersReused).toBe(3);
      // Each replaced by a rename (new files), the session's own objects untouched: a lying
      // index (its middle records' seqs moved), checksums and row metadata of other bytes.
      for (const [name, size, field] of [['frames.idx', 32, 0], ['frames.crc2', 16, 12], ['frames.meta', 40, 0]] as const) {
        const bytes = Buffer.from(readFileSync(file(name)));
        for (let o = size; o < bytes.length - size; o += size) {
          if (name === 'frames.crc2') bytes.writeUInt32LE((bytes.readUInt32LE(o + field) ^ 0x5a5a5a5a) >>> 0, o + field);
          else bytes.writeDoubleLE(bytes.readDoubleLE(o + field) + 1, o + field);
        }
        writeFileSync(`${file(name)}.new`, bytes);
        renameSync(`${file(name)}.new`, file(name));
      }
      const completed = fresh.stats().pool.completed;
      expect(await fresh.page('kept', params)).toEqual(want);
      const after = fresh.stats().cache;
      expect(after.readersOpened - kept.readersOpened).toBe(3);
      // The lying index was read: its plan failed the frames' checks and the page was planned again.
      expect(fresh.stats().pool.completed - completed).toBeGreaterThanOrEqual(2);
      expect((await fresh.info('kept')).status).toBe('ok');
    } finally {
      await fresh.close();
    }
  });
});
