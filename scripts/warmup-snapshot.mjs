#!/usr/bin/env node
// Run by `npm run build` after tsc: writes the page-path warm-up's session into
// dist/main/warmup/page-path-session.bin, which `serve` loads at start instead of
// generating it (src/main/warmup/session-snapshot.ts says why).
import { snapshotPagePath } from '../dist/main/warmup/page-path-warmup.js';

await snapshotPagePath();
