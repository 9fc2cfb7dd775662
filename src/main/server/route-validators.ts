/**
 * The routes' request validators compiled when the package is built, not
 * when the server starts.
 *
 * fastify compiles every route schema with ajv (through @fastify/ajv-compiler)
 * when the app is made ready: loading ajv (~90 CommonJS files), generating
 * and compiling each validator's code was ~140 ms of the main thread's CPU
 * in a fresh `serve`, on the path to ready (a `--cpu-prof` start,
 * docs/benchmarks.md, "ready (eleventh session)"). ajv can write a compiled
 * validator out as code ("standalone" code); `npm run build` builds the app
 * once with `recordingValidators` (scripts/route-validators.mjs), which
 * writes every route's into dist/main/server/route-validators.cjs, and a
 * server made with `precompiledValidators` takes them from there: ajv's core
 * is not loaded at all.
 *
 * Derived data, checked before use: each validator is filed under a digest
 * of everything ajv compiled it from (the schema, the shared schemas, ajv's
 * options, the part of the request it checks); a schema changed since the
 * build, or a validator the build did not see, finds no entry, and that
 * route's validator is compiled by ajv as before (loaded then). The code is
 * ajv's own for the same schema and options, so it answers and reports
 * errors as ajv would (test/route-validators.test.ts compares them).
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { requireCjs } from './cjs.js';

/** A compiled validator as fastify calls it: its result, and ajv's `errors` when false. */
type Validate = ((data: unknown) => unknown) & { errors?: unknown };
/** What fastify asks a validator compiler for. */
interface RouteSchema {
  schema: unknown;
  method?: string;
  url?: string;
  httpPart?: string;
}
type Compiler = (route: RouteSchema) => Validate;
/** fastify's `schemaController.compilersFactory.buildValidator`. */
export type BuildValidator = (externalSchemas: unknown, ajvOptions: unknown) => Compiler;
/** One entry of the build's file: the standalone code as a function of the `require` its code calls. */
type Made = (require: NodeRequire) => Validate;

/** Beside this module in dist/ (written by scripts/route-validators.mjs). */
export const VALIDATORS_FILE = 'route-validators.cjs';

/** Where each validator is filed: a digest of what ajv compiles it from (not the route: equal schemas share one). */
export function validatorKey(externalSchemas: unknown, ajvOptions: unknown, route: RouteSchema): string {
  return createHash('sha256')
    .update(JSON.stringify([externalSchemas, ajvOptions, route.httpPart ?? null, route.schema]))
    .digest('base64url');
}

/** fastify's own validator compiler (what it uses when given none), loaded when first needed. */
function ajvCompiler(): BuildValidator {
  return (requireCjs('@fastify/ajv-compiler') as () => BuildValidator)();
}

/** `require` as @fastify/ajv-compiler resolves (the ajv runtime helpers and formats its code calls: its ajv, not one of ours). */
function compilerRequire(): NodeRequire {
  const fastify = createRequire(requireCjs.resolve('fastify'));
  return createRequire(fastify.resolve('@fastify/ajv-compiler'));
}

/**
 * fastify lower-cases a header schema's property names before it compiles it, but only for its
 * own compiler (a compiler given to it may be Joi's or TypeBox's): done here as it does for an
 * object schema's own properties and required names, so both compilers see what fastify's saw.
 */
function withHeaderNames(route: RouteSchema): RouteSchema {
  const s = route.schema as { properties?: Record<string, unknown>; required?: unknown } | null;
  if (route.httpPart !== 'headers' || s === null || typeof s !== 'object' || Object.getPrototypeOf(s) !== Object.prototype) return route;
  const schema: Record<string, unknown> = { ...s };
  if (s.properties !== null && typeof s.properties === 'object') schema.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k.toLowerCase(), v]));
  if (Array.isArray(s.required)) schema.required = s.required.map((r) => (typeof r === 'string' ? r.toLowerCase() : r));
  return { ...route, schema };
}

/** The build's validators, or none (a build without the file, a run from src/). */
function loadTable(): Record<string, Made> | null {
  try {
    return requireCjs(`./${VALIDATORS_FILE}`) as Record<string, Made>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return null;
    throw err;
  }
}

/**
 * The validator compiler `buildServer` gives fastify: the build's validator for a schema it
 * compiled, else ajv's (`fallback`, loaded at its first use). `table`: tests give their own.
 */
export function precompiledValidators(table: Record<string, Made> | null = loadTable(), fallback: () => BuildValidator = ajvCompiler): BuildValidator {
  let req: NodeRequire | null = null;
  return (externalSchemas, ajvOptions) => {
    let compile: Compiler | null = null;
    return (given) => {
      const route = withHeaderNames(given);
      const made = table?.[validatorKey(externalSchemas, ajvOptions, route)];
      if (made !== undefined) return made((req ??= compilerRequire()));
      compile ??= fallback()(externalSchemas, ajvOptions);
      return compile(route);
    };
  };
}

/**
 * The build's side: ajv's compiler as fastify's default, which also hands each validator's
 * standalone code to `record` under its key (scripts/route-validators.mjs writes them out).
 */
export function recordingValidators(record: (key: string, code: string) => void): BuildValidator {
  const req = compilerRequire();
  const selector = req('@fastify/ajv-compiler') as (() => BuildValidator) & { AjvReference: symbol };
  const standaloneCode = (req('ajv/dist/standalone') as { default: (ajv: unknown, fn: unknown) => string }).default;
  const factory = selector();
  return (externalSchemas, ajvOptions) => {
    const o = (ajvOptions ?? {}) as { customOptions?: Record<string, unknown> };
    // Code kept for writing out: the same validator, compiled with its source.
    const compiler = factory(externalSchemas, { ...o, customOptions: { ...o.customOptions, code: { source: true } } }) as Compiler & Record<symbol, { ajv: unknown }>;
    return (given) => {
      const route = withHeaderNames(given);
      const fn = compiler(route);
      record(validatorKey(externalSchemas, ajvOptions, route), standaloneCode((compiler[selector.AjvReference] as { ajv: unknown }).ajv, fn));
      return fn;
    };
  };
}

/** The file's text: each validator's standalone code wrapped in a function of `require`. */
export function validatorsSource(entries: ReadonlyMap<string, string>): string {
  const lines = ["'use strict';", '// Written by scripts/route-validators.mjs (npm run build): src/main/server/route-validators.ts says why.', 'module.exports = {'];
  for (const [key, code] of [...entries].sort(([a], [b]) => (a < b ? -1 : 1))) {
    lines.push(`  ${JSON.stringify(key)}: function (require) {\n    const module = { exports: {} };\n${code}\n    return module.exports;\n  },`);
  }
  lines.push('};', '');
  return lines.join('\n');
}
