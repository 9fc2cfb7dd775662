#!/usr/bin/env node
// Run by `npm run build` after tsc: builds the HTTP app once (over an empty in-memory store) with
// a validator compiler that records every route's ajv validator as code, and writes them to
// dist/main/server/route-validators.cjs, which `serve` then uses instead of loading ajv and
// compiling them at start (src/main/server/route-validators.ts says why and how they are checked).
import { renameSync, writeFileSync } from 'node:fs';
import { openStore } from '../dist/main/store.js';
import { buildServer } from '../dist/main/server/index.js';
import { MemoryBackend } from '../dist/storage/memory/memory-backend.js';
import { recordingValidators, validatorsSource, VALIDATORS_FILE } from '../dist/main/server/route-validators.js';

const entries = new Map();
const store = await openStore({ storage: new MemoryBackend(), inThread: true });
const app = buildServer(store, { buildValidator: recordingValidators((key, code) => entries.set(key, code)) });
await app.ready();
await app.close();
await store.close();
// Whole or not at all: a temporary file renamed.
const file = new URL(`../dist/main/server/${VALIDATORS_FILE}`, import.meta.url);
const tmp = new URL(`${file.href}.tmp`);
writeFileSync(tmp, validatorsSource(entries));
renameSync(tmp, file);
