/**
 * How fastify validates requests against the route schemas (schemas.ts):
 *
 * - Ajv neither coerces nor strips: `removeAdditional` would drop unknown
 *   query parameters silently and `coerceTypes` would read `01` or `1.5e0`
 *   as numbers. Instead, query parameters declared `integer` are turned from
 *   a plain decimal string (`0` or no leading zero) into a number just
 *   before validation, and anything else stays a string and fails the
 *   schema.
 * - Every route without a query schema takes none: unknown query
 *   parameters are `invalid_request` everywhere (CORS preflights and
 *   wildcard routes excepted: their query belongs to another route).
 * - A failed schema is `invalid_request` in the SPEC's shape, naming the
 *   parameter (`param`) and what it must be.
 * - Replies are serialized with JSON.stringify, so response schemas document
 *   and never filter.
 */
import type { FastifyInstance, FastifyRequest, FastifySchema, RouteOptions } from 'fastify';
import { PagerError } from '../../core/errors.js';
import { NO_QUERY } from './schemas.js';

export const AJV_OPTIONS = {
  customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, verbose: true },
} as const;

const DECIMAL = /^(0|[1-9][0-9]*)$/;
const ID_MESSAGE = 'session id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ and not contain ".."';

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: Record<string, unknown>;
  schema?: unknown;
  data?: unknown;
}

type Schema = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> };

/** `/events/3/seq` as `events[3].seq`. */
function pathName(instancePath: string): string {
  let out = '';
  for (const seg of instancePath.split('/').slice(1)) {
    const s = seg.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^[0-9]+$/.test(s) ? `[${s}]` : out === '' ? s : `.${s}`;
  }
  return out;
}

/** `last-event-id` as `Last-Event-ID`. */
function headerName(lower: string): string {
  return lower
    .split('-')
    .map((w) => (w === 'id' ? 'ID' : w.charAt(0).toUpperCase() + w.slice(1)))
    .join('-');
}

function quote(s: string): string {
  return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);
}

/** What a value of `schema` must be, in words. */
function expected(schema: Schema | undefined): string {
  if (schema === undefined) return 'valid';
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  if (schema.type === 'integer') {
    const min = typeof schema.minimum === 'number' ? schema.minimum : undefined;
    const max = typeof schema.maximum === 'number' ? schema.maximum : undefined;
    if (min !== undefined && max !== undefined) return `an integer in [${min}, ${max}]`;
    if (min === 0) return 'a non-negative integer';
    return 'an integer';
  }
  if (typeof schema.pattern === 'string') return `a string matching ${schema.pattern}`;
  if (schema.type === 'object') return 'a JSON object';
  if (schema.type === 'array') return 'a JSON array';
  if (typeof schema.type === 'string') return `${/^[aeiou]/.test(schema.type) ? 'an' : 'a'} ${schema.type}`;
  return 'valid';
}

/** One failed schema as the SPEC's `invalid_request`, naming the parameter. */
export function validationError(errors: AjvError[], dataVar: string): PagerError {
  const e = errors[0];
  if (e === undefined) return new PagerError('invalid_request', `invalid ${dataVar}`);
  const where = pathName(e.instancePath);
  if (dataVar === 'params') {
    const param = where || String(e.params.missingProperty ?? 'path');
    return new PagerError('invalid_request', param === 'id' ? ID_MESSAGE : `${param} must be ${expected(e.parentSchema as Schema)}`, { param });
  }
  if (dataVar === 'querystring' || dataVar === 'headers') {
    const label = dataVar === 'headers' ? 'header' : 'query parameter';
    if (e.keyword === 'additionalProperties') {
      const name = String(e.params.additionalProperty);
      const known = Object.keys((e.parentSchema as Schema | undefined)?.properties ?? {});
      return new PagerError('invalid_request', `unknown ${label} ${quote(name)}; this route takes ${known.length > 0 ? known.join(', ') : 'none'}`, { param: name });
    }
    const name = where || String(e.params.missingProperty ?? dataVar);
    const param = dataVar === 'headers' ? headerName(name) : name;
    if (Array.isArray(e.data)) return new PagerError('invalid_request', `${param} must be given once`, { param });
    const what = expected(e.parentSchema as Schema);
    // A query integer that did not parse is shown as the plain decimal the server wants.
    const hint = e.keyword === 'type' && (e.parentSchema as Schema | undefined)?.type === 'integer' ? ' (plain decimal digits, no sign, no leading zero)' : '';
    return new PagerError('invalid_request', `${param} must be ${what}${hint}`, { param });
  }
  // The body.
  const at = where === '' ? 'body' : `body.${where}`.replace('.[', '[');
  switch (e.keyword) {
    case 'required':
      return new PagerError('invalid_request', `${at} must have ${quote(String(e.params.missingProperty))}`);
    case 'additionalProperties':
      return new PagerError('invalid_request', `${at} has an unknown key ${quote(String(e.params.additionalProperty))}`);
    case 'minItems':
      return new PagerError('invalid_request', `${at} must not be empty`);
    default:
      return new PagerError('invalid_request', `${at} must be ${expected(e.parentSchema as Schema)}`);
  }
}

function integerQueryParams(schema: FastifySchema | undefined): string[] {
  const qs = schema?.querystring as Schema | undefined;
  return Object.entries(qs?.properties ?? {})
    .filter(([, p]) => p.type === 'integer')
    .map(([k]) => k);
}

/** onRoute: the default (empty) query schema and the decimal-to-integer step. */
function prepareRoute(route: RouteOptions): void {
  const methods = typeof route.method === 'string' ? [route.method] : route.method;
  if (route.url.includes('*') || methods.includes('OPTIONS')) return;
  if (route.schema?.querystring === undefined) route.schema = { ...(route.schema ?? {}), querystring: NO_QUERY };
  const ints = integerQueryParams(route.schema);
  if (ints.length === 0) return;
  const toIntegers = async (request: FastifyRequest) => {
    const q = request.query as Record<string, unknown>;
    for (const k of ints) {
      const v = q[k];
      if (typeof v === 'string' && DECIMAL.test(v)) q[k] = Number(v);
    }
  };
  const existing = route.preValidation;
  route.preValidation = existing === undefined ? [toIntegers] : [toIntegers, ...(Array.isArray(existing) ? existing : [existing])];
}

/** Install on the root app, before any route is added. */
export function addValidation(app: FastifyInstance): void {
  app.setSchemaErrorFormatter((errors, dataVar) => validationError(errors as unknown as AjvError[], dataVar));
  app.setSerializerCompiler(() => (data: unknown) => JSON.stringify(data));
  app.addHook('onRoute', prepareRoute);
}
