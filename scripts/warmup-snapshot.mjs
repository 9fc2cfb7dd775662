#!/usr/bin/env node
// Run by `npm run build` after tsc: writes the page-path warm-up's session into
// dist/main/warmup/page-path-session.bin, which `serve` loads at start instead of
// generating it (src/main/warmup/session-snapshot.ts says why), and the page workers'
// synthetic warm-up logs into dist/workers/warmup-*.bin, which each worker reads instead
// of making them (src/workers/warmup-logs.ts).
import { snapshotPagePath, TYPICAL_PLAN_FILE, TYPICAL_SESSION } from '../dist/main/warmup/page-path-warmup.js';
import { SNAPSHOT_DIR } from '../dist/main/warmup/session-snapshot.js';
import { SessionWriter } from '../dist/main/session-writer.js';
import { expandRow } from '../dist/core/chunk-codec.js';
import { binaryWork, jsonlWork, LOGS_PLAN } from '../dist/workers/jit-warmup.js';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeWarmupLogs, WARMUP_LOG_FILES } from '../dist/workers/warmup-logs.js';

await snapshotPagePath();
await writeTypicalSession(SNAPSHOT_DIR);
// Whole or not at all: a temporary file renamed.
for (const [name, works] of [[WARMUP_LOG_FILES.jsonl, jsonlWork()], [WARMUP_LOG_FILES.binary, binaryWork()]]) {
  const file = new URL(`../dist/workers/${name}`, import.meta.url);
  const tmp = new URL(`${file.href}.tmp`);
  writeFileSync(tmp, encodeWarmupLogs(works, LOGS_PLAN));
  renameSync(tmp, file);
}

/**
 * The main thread's decoder warm-up's fixture-shaped session (page-path-warmup.ts
 * TYPICAL_SESSION) into the data directory snapshotPagePath just wrote: test/fixtures/dsh's
 * conversations in name order, seqs and times shifted to follow each other, appended 7 events at
 * a time (as bench/fixture-session.mjs builds bench-typical), until it holds the plan's events;
 * then the plan file that says it is there.
 */
async function writeTypicalSession(dir) {
  const fixtures = new URL('../test/fixtures/dsh/', import.meta.url);
  const convs = readdirSync(fixtures)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => {
      const out = [];
      for (const line of readFileSync(new URL(f, fixtures), 'utf8').split('\n').slice(1)) {
        if (!line) continue;
        const r = JSON.parse(line);
        if ('seq0' in r) out.push(...expandRow(r));
        else out.push(r);
      }
      return out;
    })
    .filter((c) => c.length > 0);
  const w = await SessionWriter.create(dir, TYPICAL_SESSION.id, { type: 'session', version: 0, createdAt: 1_780_000_000_000 }, { durable: false });
  let seq = 0;
  let time = 1_780_000_000_000;
  for (const conv of convs) {
    if (seq >= TYPICAL_SESSION.events) break;
    const base = seq;
    const t0 = conv[0]?.time ?? 0;
    const shifted = conv.map((e) => {
      const c = { ...e, seq: base + e.seq, time: time + (e.time - t0) };
      if (Array.isArray(e.sourceEventSeqs)) c.sourceEventSeqs = e.sourceEventSeqs.map((x) => base + x);
      return c;
    });
    for (let i = 0; i < shifted.length; i += 7) await w.append(shifted.slice(i, i + 7));
    seq += shifted.length;
    time = shifted[shifted.length - 1].time + 1000;
  }
  await w.close();
  writeFileSync(join(dir, TYPICAL_PLAN_FILE), JSON.stringify(TYPICAL_SESSION));
}
