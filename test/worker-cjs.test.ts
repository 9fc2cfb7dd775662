/**
 * The page workers' CommonJS packages (piscina, the zstd binding) are loaded
 * with require() (src/workers/cjs.ts), as the server's are: imported from an
 * ES module, each went through Node 20's CommonJS lexer in every page worker
 * as it started, and V8 compiled that lexer there, CPU spent before `serve`
 * could be ready (issue 12). Only type imports of them are left in the
 * workers' files, and the packages load that way with the exports the
 * workers use.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { valueImportsOf } from './helpers/value-imports.js';
import { requireCjs } from '../src/workers/cjs.js';

const WORKERS = resolve(import.meta.dirname, '../src/workers');
const CJS_PACKAGES = /^(piscina|@toondepauw\/node-zstd)$/;

describe("the page workers' CommonJS packages", () => {
  it('are not imported as values by any file of src/workers', () => {
    expect(valueImportsOf(WORKERS, CJS_PACKAGES)).toEqual([]);
  });

  it('load by require() with the exports the workers use', () => {
    const piscina = requireCjs('piscina') as typeof import('piscina');
    expect([typeof piscina.Piscina, typeof piscina.Piscina.move, typeof piscina.Piscina.transferableSymbol, typeof piscina.Piscina.valueSymbol]).toEqual(['function', 'function', 'symbol', 'symbol']);
    expect('workerData' in piscina).toBe(true);
    const zstd = requireCjs('@toondepauw/node-zstd') as typeof import('@toondepauw/node-zstd');
    const encoded = new zstd.Encoder(3).encodeSync(Buffer.from('page bytes'));
    expect(new zstd.Decoder().decodeSync(encoded).toString()).toBe('page bytes');
  });
});
