#!/usr/bin/env node
// Run by `npm run build` after tsc: writes the page-path warm-up's session into
// dist/main/warmup/page-path-session.bin, which `serve` loads at start instead of
// generating it (src/main/warmup/session-snapshot.ts says why), and the page workers'
// synthetic warm-up logs into dist/workers/warmup-*.bin, which each worker reads instead
// of making them (src/workers/warmup-logs.ts).
import { snapshotPagePath } from '../dist/main/warmup/page-path-warmup.js';
import { binaryWork, jsonlWork, LOGS_PLAN } from '../dist/workers/jit-warmup.js';
import { WARMUP_LOGS, writeWarmupLogs } from '../dist/workers/warmup-logs.js';

await snapshotPagePath();
writeWarmupLogs(WARMUP_LOGS.jsonl, jsonlWork(), LOGS_PLAN);
writeWarmupLogs(WARMUP_LOGS.binary, binaryWork(), LOGS_PLAN);
