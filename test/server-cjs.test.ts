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
import { collectDefaultMetrics, prom } from '../src/main/server/prom.js';

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
    expect(typeof requireCjs('@fastify/cors')).toBe('function');
    // The parts response-compression.ts chooses with (@fastify/compress itself is only the tests' oracle now).
    expect(typeof (requireCjs('@fastify/accept-negotiator') as { negotiate: unknown }).negotiate).toBe('function');
    expect((requireCjs('mime-db') as Record<string, { compressible?: boolean }>)['application/json']?.compressible).toBe(true);
    // @fastify/swagger's and prom-client's files the server requires by path (openapi.ts, prom.ts).
    expect(typeof (requireCjs('@fastify/swagger/lib/util/add-hook.js') as { addHook: unknown }).addHook).toBe('function');
    expect(typeof requireCjs('@fastify/swagger/lib/spec/openapi/index.js')).toBe('function');
    expect([typeof prom.Registry, typeof prom.Counter, typeof prom.Gauge, typeof prom.Histogram]).toEqual(Array(4).fill('function'));
  });

  it("register the default metrics prom-client's own collectDefaultMetrics registers", async () => {
    const index = requireCjs('prom-client') as typeof import('prom-client');
    const ours = new prom.Registry();
    collectDefaultMetrics(ours);
    const theirs = new index.Registry();
    index.collectDefaultMetrics({ register: theirs });
    const shape = (r: import('prom-client').Registry) => r.getMetricsAsArray().map((m) => `${m.name} ${(m as unknown as { help: string }).help}`).sort();
    expect(shape(ours)).toEqual(shape(theirs));
    const text = await ours.metrics();
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
  });
});
