/**
 * The routes' validators compiled by the build (src/main/server/route-validators.ts): a server
 * made from dist/ loads no ajv, and each precompiled validator answers and reports errors as
 * ajv's own compile of the same schema does; a schema the build did not see is compiled by ajv.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const dist = resolve(import.meta.dirname, '../dist');

type Validate = ((data: unknown) => unknown) & { errors?: unknown };
type Route = { schema: unknown; method?: string; url?: string; httpPart?: string };
type Build = (externalSchemas: unknown, options: unknown) => (route: Route) => Validate;

/** Values a request part may carry: right and wrong types, bounds, patterns, unknown keys. */
const VALUES: unknown[] = ['1', 1, 0, -1, 1.5, 2 ** 53, 'abc', '', '..', 'a'.repeat(200), 'x.y-z', null, true, [], {}];

function inputs(route: Route): unknown[] {
  const schema = route.schema as { properties?: Record<string, unknown> } | null;
  const keys = Object.keys(schema?.properties ?? {});
  const out: unknown[] = [{}, { unknownParam: '1' }, 'text', [], null];
  for (const k of keys) for (const v of VALUES) out.push({ [k]: v });
  for (const v of VALUES) out.push(Object.fromEntries(keys.map((k) => [k, v])));
  return out;
}

describe('route validators compiled by the build', () => {
  it('exist in dist, and a server built from dist loads no ajv and no fast-json-stringify compiler', () => {
    expect(existsSync(`${dist}/main/server/route-validators.cjs`), 'npm run build writes dist/main/server/route-validators.cjs').toBe(true);
    const probe = `
      import { createRequire } from 'node:module';
      const { openStore } = await import(${JSON.stringify(`${dist}/main/store.js`)});
      const { buildServer } = await import(${JSON.stringify(`${dist}/main/server/index.js`)});
      const { MemoryBackend } = await import(${JSON.stringify(`${dist}/storage/memory/memory-backend.js`)});
      const store = await openStore({ storage: new MemoryBackend(), inThread: true });
      const app = buildServer(store);
      await app.ready();
      const r = await app.inject({ url: '/v1/sessions?limit=abc' });
      const loaded = Object.keys(createRequire(import.meta.url).cache);
      console.log(JSON.stringify({ status: r.statusCode, ajv: loaded.filter((f) => /node_modules\\/(ajv|@fastify\\/ajv-compiler|@fastify\\/fast-json-stringify-compiler)\\//.test(f)).length }));
      await app.close(); await store.close();`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' }).trim().split('\n').at(-1) as string) as { status: number; ajv: number };
    // An invalid query is still refused (a validator ran), with nothing of ajv loaded.
    expect(out).toEqual({ status: 400, ajv: 0 });
  }, 60_000);

  it("answer as ajv's own compile of each route's schema, errors included; a schema not in the build is compiled by ajv", async () => {
    const { precompiledValidators } = (await import(`${dist}/main/server/route-validators.js`)) as { precompiledValidators: (table?: unknown, fallback?: () => Build) => Build };
    const { openStore } = await import(`${dist}/main/store.js`);
    const { buildServer } = await import(`${dist}/main/server/index.js`);
    const { MemoryBackend } = await import(`${dist}/storage/memory/memory-backend.js`);
    // Every compile fastify asks for, through the build's validators (and ajv for any it lacks).
    const asked: { ext: unknown; opts: unknown; route: Route; made: Validate }[] = [];
    const built = precompiledValidators();
    let fellBack = 0;
    const noTable = precompiledValidators(null);
    const spy: Build = (ext, opts) => {
      const c = built(ext, opts);
      return (route) => {
        const made = c(route);
        asked.push({ ext, opts, route, made });
        return made;
      };
    };
    const store = await openStore({ storage: new MemoryBackend(), inThread: true });
    const app = buildServer(store, { buildValidator: spy });
    await app.ready();
    await app.close();
    await store.close();
    expect(asked.length).toBeGreaterThan(10);
    let compared = 0;
    for (const { ext, opts, route, made } of asked) {
      const ajv = noTable(ext, opts)(route);
      for (const input of inputs(route)) {
        const a = made(structuredClone(input));
        const b = ajv(structuredClone(input));
        expect([a, JSON.stringify(made.errors ?? null)], `${route.method} ${route.url} ${route.httpPart} ${JSON.stringify(input)}`).toEqual([b, JSON.stringify(ajv.errors ?? null)]);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(500);
    // A schema the build never saw: ajv compiles it (and it validates).
    const other = precompiledValidators(undefined, () => {
      fellBack++;
      return noTable as unknown as Build;
    })({}, { customOptions: {} })({ schema: { type: 'object', properties: { q: { type: 'string', maxLength: 2 } } }, httpPart: 'querystring' });
    expect(fellBack).toBe(1);
    expect([other({ q: 'ab' }), other({ q: 'abc' })]).toEqual([true, false]);
  }, 60_000);
});
