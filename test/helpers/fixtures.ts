import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** The dsh fixtures, copied into the repository (test/fixtures/README.md: provenance, licence). */
export const FIXTURES = resolve(here, '../fixtures');
export const DSH_DIR = join(FIXTURES, 'dsh');
export const DSH_ZSTD_DIR = join(FIXTURES, 'dsh-zstd');

export function dshFixtures(): string[] {
  return readdirSync(DSH_DIR)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => join(DSH_DIR, f));
}

export function dshZstdFixtures(): string[] {
  return readdirSync(DSH_ZSTD_DIR)
    .filter((f) => f.endsWith('.zstd'))
    .sort()
    .map((f) => join(DSH_ZSTD_DIR, f));
}
