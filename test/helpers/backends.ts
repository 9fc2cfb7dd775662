/**
 * Every storage backend the compliance suite runs against, each made fresh
 * per test file and cleaned up after: the local one in a temp data
 * directory, the in-memory one. A new backend (S3) adds one entry here and
 * then has to pass everything the others pass.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StorageBackend } from '../../src/storage/backend.js';
import { LocalBackend } from '../../src/storage/local/local-backend.js';
import { MemoryBackend } from '../../src/storage/memory/memory-backend.js';

export interface BackendUnderTest {
  name: string;
  /** A fresh, empty store; `dispose` removes whatever it left. */
  make(): { storage: StorageBackend; dispose(): void };
}

export const BACKENDS: BackendUnderTest[] = [
  {
    name: 'local',
    make() {
      const dir = mkdtempSync(join(tmpdir(), 'sp-backend-'));
      return { storage: new LocalBackend(dir), dispose: () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'memory',
    make() {
      return { storage: new MemoryBackend(), dispose: () => undefined };
    },
  },
];
