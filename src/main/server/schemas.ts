/**
 * The JSON schemas of every route (SPEC sections 4 to 6): what fastify
 * validates (params, query string, headers, bodies) and what the OpenAPI
 * document says (the same schemas plus the responses). Response schemas
 * document only: replies are serialized with JSON.stringify as before
 * (validation.ts), so a schema can never drop or reshape a field on the wire.
 *
 * Query integers are declared `integer`: validation.ts turns a plain decimal
 * string into a number before validation, so `01`, `1e3`, `1.5`, `-1` and
 * repeated parameters stay invalid (SPEC section 5).
 */
import { MAX_MAX_MESSAGES } from '../../core/page-rule.js';

/** SPEC section 3's id rule, `..` excluded, as one pattern. */
export const SESSION_ID_PATTERN = '^(?!.*\\.\\.)[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const LAST_EVENT_ID_PATTERN = '^(-1|0|[1-9][0-9]{0,15})$';

const seqQuery = (description: string) => ({ type: 'integer', minimum: 0, maximum: MAX_SAFE, description });
const maxMessagesQuery = (description: string) => ({ type: 'integer', minimum: 1, maximum: MAX_MAX_MESSAGES, default: 50, description });

export const ID_PARAMS = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', pattern: SESSION_ID_PATTERN, description: 'session id: 1 to 128 of A-Z a-z 0-9 . _ -, starting with a letter or digit, never containing ".."' },
  },
} as const;

/** No query parameters at all: every route without its own query schema gets this one. */
export const NO_QUERY = { type: 'object', additionalProperties: false, properties: {} } as const;

// Shared schemas, registered with app.addSchema and named in the OpenAPI components.
const ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'session_not_found',
  'not_found',
  'method_not_allowed',
  'request_timeout',
  'session_exists',
  'seq_conflict',
  'session_busy',
  'repair_required',
  'payload_too_large',
  'uri_too_long',
  'unsupported_media_type',
  'corrupt_range',
  'header_too_large',
  'overloaded',
  'internal',
];

export const SHARED_SCHEMAS = [
  {
    $id: 'Error',
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        additionalProperties: true,
        description: 'extra keys give details: param, expectedSeq, reasons, fromSeq/toSeq/offset of a corrupt frame, retryAfter',
        properties: { code: { type: 'string', enum: ERROR_CODES }, message: { type: 'string' }, param: { type: 'string', description: 'the parameter at fault' } },
      },
    },
  },
  {
    $id: 'Event',
    type: 'object',
    required: ['type', 'seq', 'time'],
    additionalProperties: true,
    description: 'a logical event; every other key is kept verbatim',
    properties: { type: { type: 'string' }, seq: { type: 'integer', minimum: 0 }, time: { type: 'integer', description: 'epoch milliseconds' }, data: {} },
  },
  {
    $id: 'ChunkRow',
    type: 'object',
    required: ['type', 'seq0', 'time0', 'data'],
    description: 'a packed run of assistant/chunk events (SPEC section 2)',
    properties: {
      type: { type: 'string', enum: ['text-chunks', 'reasoning-chunks', 'tool-call-chunks'] },
      seq0: { type: 'integer' },
      time0: { type: 'integer' },
      data: { type: 'object', description: '{turn, step, index, dt[], texts[]} or, for tool calls, {turn, step, index, id, name?, dt[], args[]}' },
    },
  },
  {
    $id: 'Page',
    type: 'object',
    required: ['sessionId', 'throughSeq', 'fromSeq', 'toSeq', 'hasMore', 'records'],
    properties: {
      sessionId: { type: 'string' },
      throughSeq: { type: 'integer', minimum: -1, description: 'the cut: pass it back to keep pages consistent while the log grows' },
      fromSeq: { type: 'integer', description: 'first event seq of the page; the next older page is beforeSeq=fromSeq' },
      toSeq: { type: 'integer', description: 'exclusive' },
      hasMore: { type: 'boolean' },
      records: {
        type: 'array',
        items: {
          oneOf: [
            { type: 'object', required: ['event'], properties: { event: { $ref: 'Event#' } } },
            { type: 'object', required: ['chunks'], properties: { chunks: { $ref: 'ChunkRow#' } } },
          ],
        },
      },
    },
  },
  {
    $id: 'Session',
    type: 'object',
    description: 'catalog entry: metadata and status',
    required: ['id', 'status', 'reasons', 'nextSeq', 'lastSeq'],
    additionalProperties: true,
    properties: {
      id: { type: 'string' },
      status: { type: 'string', enum: ['ok', 'degraded', 'repair_required'] },
      reasons: { type: 'array', items: { type: 'string' } },
      title: { type: ['string', 'null'] },
      createdAt: { type: ['integer', 'null'] },
      updatedAt: { type: ['integer', 'null'] },
      nextSeq: { type: 'integer' },
      lastSeq: { type: 'integer' },
      eventCount: { type: 'integer' },
      frameCount: { type: 'integer' },
      indexedLength: { type: 'integer' },
      logSize: { type: 'integer' },
      hasUserMessage: { type: 'boolean' },
      provider: { type: ['string', 'null'] },
      model: { type: ['string', 'null'] },
      agentPreset: { type: ['string', 'null'] },
      lastCompactionSeq: { type: ['integer', 'null'] },
      tokens: { type: ['object', 'null'] },
      metaStale: { type: 'boolean' },
      format: { type: ['string', 'null'], enum: ['jsonl', 'binary', null] },
      header: { type: ['object', 'null'] },
    },
  },
  {
    $id: 'AppendResult',
    type: 'object',
    required: ['fromSeq', 'toSeq', 'nextSeq'],
    properties: { fromSeq: { type: 'integer' }, toSeq: { type: 'integer', description: 'exclusive' }, nextSeq: { type: 'integer' } },
  },
] as const;

const json = (schema: unknown, description: string) => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => json({ $ref: 'Error#' }, description);
export const ERR = {
  400: err('invalid_request: a parameter, header or body is malformed or out of range (`param` names it)'),
  401: err('unauthorized: missing or wrong bearer token'),
  404: err('session_not_found'),
  409: err('seq_conflict, session_exists, session_busy or repair_required'),
  413: err('payload_too_large'),
  415: err('unsupported_media_type: the body is not application/json, or its Content-Encoding is not gzip, deflate or br'),
  422: err('corrupt_range: the page covers a damaged frame; the error names the seq range'),
  503: {
    ...err('overloaded: retry after the number of seconds in Retry-After'),
    headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds' } },
  },
} as const;

/** A route open without a token (SPEC section 6). */
export const PUBLIC = { security: [] as { [label: string]: readonly string[] }[] };

export const CATALOG_SCHEMA = {
  summary: 'Catalog, from metadata sidecars only; a bad session is listed with its status and reasons, never fails the listing',
  tags: ['sessions'],
  response: {
    200: json({ type: 'object', required: ['sessions'], properties: { sessions: { type: 'array', items: { $ref: 'Session#' } } } }, 'sessions, sorted by id'),
    400: ERR[400],
    401: ERR[401],
    503: ERR[503],
  },
};

export const INFO_SCHEMA = {
  summary: 'One session: metadata and status',
  tags: ['sessions'],
  params: ID_PARAMS,
  response: { 200: json({ $ref: 'Session#' }, 'the session'), 400: ERR[400], 401: ERR[401], 404: ERR[404], 503: ERR[503] },
};

export const PAGE_SCHEMA = {
  summary: 'A page (SPEC sections 4 and 5)',
  tags: ['sessions'],
  params: ID_PARAMS,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      throughSeq: seqQuery('pins the cut (default: the last committed seq); past the last committed seq is invalid_request'),
      beforeSeq: seqQuery('exclusive upper bound, for older pages: the previous page\'s fromSeq'),
      maxMessages: maxMessagesQuery('counted messages on the page'),
      maxBytes: { type: 'integer', minimum: 1, maximum: MAX_SAFE, description: 'soft target of stored bytes (never fewer than one counted message)' },
    },
  },
  response: {
    200: json({ $ref: 'Page#' }, 'the page'),
    400: ERR[400],
    401: ERR[401],
    404: ERR[404],
    409: err('repair_required'),
    422: ERR[422],
    503: ERR[503],
  },
};

export const FOLLOW_SCHEMA = {
  summary: 'Live tail over Server-Sent Events',
  description:
    'Events: `snapshot` (id = cursor = the page\'s throughSeq; data `{"cursor":N,"page":Page}`), then one `event` per appended logical event (id = seq, data = the event), in seq order, no gap, no duplicate. `Last-Event-ID` (or ?lastEventId=) resumes at seq + 1 without a snapshot. Comment lines are heartbeats. The server may end a stream with `event: error` (data = Error, with lastEventId) or, on shutdown, `event: end`; reconnect with Last-Event-ID.',
  tags: ['sessions'],
  params: ID_PARAMS,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      maxMessages: maxMessagesQuery('size of the snapshot page'),
      lastEventId: { type: 'string', pattern: LAST_EVENT_ID_PATTERN, description: 'for clients that cannot set Last-Event-ID: the last seq seen, or -1' },
    },
  },
  headers: {
    type: 'object',
    properties: { 'last-event-id': { type: 'string', pattern: LAST_EVENT_ID_PATTERN, description: 'the last seq seen (or -1): resume after it' } },
  },
  response: {
    200: { description: 'event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
    400: ERR[400],
    401: ERR[401],
    404: ERR[404],
    409: err('repair_required'),
    422: ERR[422],
    503: ERR[503],
  },
};

export const CREATE_SCHEMA = {
  summary: 'Create a session from a header record (type, id and createdAt are filled in when absent and must agree when present); no body means {}',
  tags: ['sessions'],
  params: ID_PARAMS,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: { format: { type: 'string', enum: ['jsonl', 'binary'], description: 'frame encoding of the new log (default jsonl)' } },
  },
  body: { content: { 'application/json': { schema: { type: 'object', additionalProperties: true, description: 'the session header record' } } } },
  response: {
    201: json({ $ref: 'Session#' }, 'created'),
    400: ERR[400],
    401: ERR[401],
    409: err('session_exists or session_busy'),
    413: ERR[413],
    415: ERR[415],
    503: ERR[503],
  },
};

export const APPEND_SCHEMA = {
  summary: 'Append a batch; answered only once it is durable (fsync)',
  tags: ['sessions'],
  params: ID_PARAMS,
  body: {
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['events'],
          additionalProperties: false,
          properties: { events: { type: 'array', minItems: 1, items: { $ref: 'Event#' }, description: 'seqs continue the session\'s nextSeq exactly' } },
        },
      },
    },
  },
  response: {
    200: json({ $ref: 'AppendResult#' }, 'durable'),
    400: ERR[400],
    401: ERR[401],
    404: ERR[404],
    409: err('seq_conflict (expectedSeq says what would continue), session_busy or repair_required'),
    413: ERR[413],
    415: ERR[415],
    503: ERR[503],
  },
};

export const OPENAPI_SCHEMA = {
  summary: 'This document (OpenAPI 3.1)',
  tags: ['service'],
  ...PUBLIC,
  response: { 200: json({ type: 'object' }, 'OpenAPI 3.1') },
};

export const METRICS_SCHEMA = {
  summary: 'Prometheus metrics (text exposition format)',
  tags: ['service'],
  response: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } }, 401: ERR[401] },
};

export const HEALTH_SCHEMA = {
  summary: 'Ready to serve (no token)',
  tags: ['service'],
  ...PUBLIC,
  response: { 200: json({ type: 'object', properties: { status: { type: 'string' } } }, 'ok') },
};
