/**
 * The server's CommonJS packages are loaded with require() (src/main/server/cjs.ts):
 * imported from an ES module, each ran through Node 20's CommonJS lexer at
 * every process start, ~80-100 ms of CPU before `serve` could be ready (issue
 * 12). Only type imports of them are left in the server's files, and the
 * packages load that way with the exports the server uses.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { valueImportsOf } from './helpers/value-imports.js';
import { requireCjs } from '../src/main/server/cjs.js';

const SERVER = resolve(import.meta.dirname, '../src/main/server');
const CJS_PACKAGES = /^(fastify|@fastify\/[\w-]+|prom-client)$/;

describe("the server's CommonJS packages", () => {
  it('are not imported as values by any file of src/main/server', () => {
    expect(valueImportsOf(SERVER, CJS_PACKAGES)).toEqual([]);
  });

  it('load by require() with the exports the server uses', () => {
    const fastify = requireCjs('fastify') as typeof import('fastify');
    expect(typeof fastify.default).toBe('function');
    expect(typeof fastify.LogController).toBe('function');
    for (const p of ['@fastify/compress', '@fastify/cors', '@fastify/swagger']) expect(typeof requireCjs(p)).toBe('function');
    const prom = requireCjs('prom-client') as typeof import('prom-client');
    expect([typeof prom.Registry, typeof prom.Counter, typeof prom.Gauge, typeof prom.Histogram, typeof prom.collectDefaultMetrics]).toEqual(Array(5).fill('function'));
  });
});
