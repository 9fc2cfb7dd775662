#!/usr/bin/env node
// Run by `npm run build` after tsc: writes the page-path warm-up's session into
// dist/main/warmup/page-path-session.bin, which `serve` loads at start instead of
// generating it (src/main/warmup/session-snapshot.ts says why), and the page workers'
// synthetic warm-up logs into dist/workers/warmup-*.bin, which each worker reads instead
// of making them (src/workers/warmup-logs.ts).
import { snapshotPagePath } from '../dist/main/warmup/page-path-warmup.js';
import { binaryWork, jsonlWork, LOGS_PLAN } from '../dist/workers/jit-warmup.js';
import { renameSync, writeFileSync } from 'node:fs';
import { encodeWarmupLogs, WARMUP_LOG_FILES } from '../dist/workers/warmup-logs.js';

await snapshotPagePath();
// Whole or not at all: a temporary file renamed.
for (const [name, works] of [[WARMUP_LOG_FILES.jsonl, jsonlWork()], [WARMUP_LOG_FILES.binary, binaryWork()]]) {
  const file = new URL(`../dist/workers/${name}`, import.meta.url);
  const tmp = new URL(`${file.href}.tmp`);
  writeFileSync(tmp, encodeWarmupLogs(works, LOGS_PLAN));
  renameSync(tmp, file);
}
