/**
 * The CommonJS packages a `serve` start loads are loaded with require()
 * (src/main/cjs.ts, src/workers/cjs.ts): imported from an ES module, each ran
 * through Node 20's CommonJS lexer, in every thread that loaded it, at every
 * process start, CPU spent before `serve` could be ready (issue 12). Only type
 * imports of them are left in src/, and the packages load that way with the
 * exports the server and the page workers use.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requireCjs } from '../src/main/cjs.js';
import { requireCjs as requireInWorker } from '../src/workers/cjs.js';

const SRC = resolve(import.meta.dirname, '../src');
/** The server's packages, and the two the page pool and its workers load (piscina, the zstd binding). */
const CJS_PACKAGES = /^(fastify|@fastify\/[\w-]+|prom-client|piscina|@toondepauw\/node-zstd)$/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? sources(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : []));
}

describe("a serve start's CommonJS packages", () => {
  it('are not imported as values by any file of src/', () => {
    const valueImports: string[] = [];
    for (const f of sources(SRC)) {
      const src = readFileSync(f, 'utf8');
      for (const m of src.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)';/gms)) {
        if (m[1] === undefined && CJS_PACKAGES.test(m[2] as string)) valueImports.push(`${f}: ${m[2]}`);
      }
    }
    expect(valueImports).toEqual([]);
  });

  it('load by require() with the exports the server uses', () => {
    const fastify = requireCjs('fastify') as typeof import('fastify');
    expect(typeof fastify.default).toBe('function');
    expect(typeof fastify.LogController).toBe('function');
    for (const p of ['@fastify/compress', '@fastify/cors', '@fastify/swagger']) expect(typeof requireCjs(p)).toBe('function');
    const prom = requireCjs('prom-client') as typeof import('prom-client');
    expect([typeof prom.Registry, typeof prom.Counter, typeof prom.Gauge, typeof prom.Histogram, typeof prom.collectDefaultMetrics]).toEqual(Array(5).fill('function'));
  });

  it('load by require() with the exports the page pool and its workers use', () => {
    for (const req of [requireCjs, requireInWorker]) {
      const piscina = req('piscina') as typeof import('piscina');
      expect([typeof piscina.Piscina, typeof piscina.Piscina.move, typeof piscina.Piscina.transferableSymbol, typeof piscina.Piscina.valueSymbol]).toEqual(['function', 'function', 'symbol', 'symbol']);
      expect('workerData' in piscina).toBe(true);
      const zstd = req('@toondepauw/node-zstd') as typeof import('@toondepauw/node-zstd');
      expect(typeof zstd.Encoder).toBe('function');
    }
  });
});
