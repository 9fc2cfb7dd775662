/**
 * The OpenAPI document of the service, written by hand (the wire format is
 * the contract of SPEC sections 4 and 6; generated schemas would only
 * restate it). Served at GET /v1/openapi.json.
 */
import type { FastifyInstance } from 'fastify';

const err = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
const E = {
  400: err('invalid_request: a parameter, header or body is malformed or out of range'),
  401: err('unauthorized: missing or wrong bearer token'),
  404: err('session_not_found'),
  409: err('seq_conflict, session_exists, session_busy or repair_required'),
  413: err('payload_too_large'),
  422: err('corrupt_range: the page covers a damaged frame; the error names the seq range'),
  503: {
    ...err('overloaded: retry after the number of seconds in Retry-After'),
    headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds' } },
  },
  500: err('internal'),
};

const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' }, description: 'session id (never contains "..")' };
const seqParam = (name: string, description: string) => ({ name, in: 'query', required: false, schema: { type: 'integer', minimum: 0 }, description });

export const OPENAPI = {
  openapi: '3.1.0',
  info: {
    title: 'session-pager',
    version: '1',
    description:
      'Pages of very long agent-session event logs, served from sidecar indexes. Every route but /livez, /readyz and /healthz needs `Authorization: Bearer <token>` when the server has a token. Responses are gzip or brotli compressed when the client accepts it.',
  },
  servers: [{ url: '/' }],
  security: [{ bearer: [] }],
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    schemas: {
      Error: {
        type: 'object',
        required: ['error'],
        properties: {
          error: {
            type: 'object',
            required: ['code', 'message'],
            additionalProperties: true,
            properties: {
              code: {
                type: 'string',
                enum: ['invalid_request', 'unauthorized', 'session_not_found', 'seq_conflict', 'session_exists', 'session_busy', 'repair_required', 'payload_too_large', 'corrupt_range', 'overloaded', 'internal', 'not_found'],
              },
              message: { type: 'string' },
            },
          },
        },
      },
      Event: {
        type: 'object',
        required: ['type', 'seq', 'time'],
        additionalProperties: true,
        properties: { type: { type: 'string' }, seq: { type: 'integer', minimum: 0 }, time: { type: 'integer' }, data: {} },
      },
      ChunkRow: {
        type: 'object',
        required: ['type', 'seq0', 'time0', 'data'],
        properties: {
          type: { type: 'string', enum: ['text-chunks', 'reasoning-chunks', 'tool-call-chunks'] },
          seq0: { type: 'integer' },
          time0: { type: 'integer' },
          data: { type: 'object', description: '{turn, step, index, dt[], texts[]} or, for tool calls, {turn, step, index, id, name?, dt[], args[]}' },
        },
      },
      Page: {
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
                { type: 'object', required: ['event'], properties: { event: { $ref: '#/components/schemas/Event' } } },
                { type: 'object', required: ['chunks'], properties: { chunks: { $ref: '#/components/schemas/ChunkRow' } } },
              ],
            },
          },
        },
      },
      Session: {
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
      AppendResult: {
        type: 'object',
        required: ['fromSeq', 'toSeq', 'nextSeq'],
        properties: { fromSeq: { type: 'integer' }, toSeq: { type: 'integer', description: 'exclusive' }, nextSeq: { type: 'integer' } },
      },
    },
  },
  paths: {
    '/livez': {
      get: { summary: 'Liveness: 200 as soon as the server listens (no auth)', security: [], responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object' } } } } } },
    },
    '/readyz': {
      get: { summary: 'Readiness: 503 overloaded while warming up, then 200 (no auth)', security: [], responses: { 200: { description: 'ready', content: { 'application/json': { schema: { type: 'object' } } } }, 503: E[503] } },
    },
    '/healthz': {
      get: { summary: 'Readiness, as /readyz (no auth)', security: [], responses: { 200: { description: 'ready', content: { 'application/json': { schema: { type: 'object' } } } }, 503: E[503] } },
    },
    '/metrics': {
      get: { summary: 'Prometheus metrics', responses: { 200: { description: 'Prometheus text format', content: { 'text/plain': {} } }, 401: E[401] } },
    },
    '/v1/openapi.json': { get: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1', content: { 'application/json': {} } }, 401: E[401] } } },
    '/v1/sessions': {
      get: {
        summary: 'Catalog, from metadata sidecars only; a bad session is listed with its status and reasons, never fails the listing',
        responses: {
          200: { description: 'sessions', content: { 'application/json': { schema: { type: 'object', properties: { sessions: { type: 'array', items: { $ref: '#/components/schemas/Session' } } } } } } },
          401: E[401],
          503: E[503],
        },
      },
    },
    '/v1/sessions/{id}': {
      get: {
        summary: 'One session: metadata and status',
        parameters: [idParam],
        responses: { 200: { description: 'session', content: { 'application/json': { schema: { $ref: '#/components/schemas/Session' } } } }, 400: E[400], 401: E[401], 404: E[404], 503: E[503] },
      },
      put: {
        summary: 'Create a session from a header record (type, id and createdAt are filled in when absent)',
        parameters: [idParam, { name: 'format', in: 'query', required: false, schema: { type: 'string', enum: ['jsonl', 'binary'] }, description: 'frame encoding of the new log' }],
        requestBody: { required: false, content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } } },
        responses: { 201: { description: 'created', content: { 'application/json': { schema: { $ref: '#/components/schemas/Session' } } } }, 400: E[400], 401: E[401], 409: E[409], 413: E[413], 503: E[503] },
      },
    },
    '/v1/sessions/{id}/page': {
      get: {
        summary: 'A page of SPEC section 4/5',
        parameters: [
          idParam,
          seqParam('throughSeq', 'default: the last committed seq'),
          seqParam('beforeSeq', 'exclusive upper bound, for older pages'),
          { name: 'maxMessages', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 50 } },
          { name: 'maxBytes', in: 'query', required: false, schema: { type: 'integer', minimum: 1 }, description: 'soft target of stored bytes' },
        ],
        responses: {
          200: { description: 'page', content: { 'application/json': { schema: { $ref: '#/components/schemas/Page' } } } },
          400: E[400],
          401: E[401],
          404: E[404],
          409: E[409],
          422: E[422],
          503: E[503],
        },
      },
    },
    '/v1/sessions/{id}/follow': {
      get: {
        summary: 'Live tail over Server-Sent Events',
        description:
          'Events: `snapshot` (id = cursor = the page\'s throughSeq; data `{"cursor":N,"page":Page}`), then one `event` per appended logical event (id = seq, data = the event), in seq order, no gap, no duplicate. `Last-Event-ID` (or ?lastEventId=) resumes at seq + 1 without a snapshot. Comment lines are heartbeats. The server may end a stream with `event: error` (data = Error, with lastEventId) or, on shutdown, `event: end`; reconnect with Last-Event-ID.',
        parameters: [
          idParam,
          { name: 'maxMessages', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 50 }, description: 'size of the snapshot page' },
          { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'integer', minimum: -1 } },
        ],
        responses: { 200: { description: 'event stream', content: { 'text/event-stream': {} } }, 400: E[400], 401: E[401], 404: E[404], 409: E[409], 422: E[422], 503: E[503] },
      },
    },
    '/v1/sessions/{id}/events': {
      post: {
        summary: 'Append a batch; answered after fsync',
        parameters: [idParam],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', required: ['events'], properties: { events: { type: 'array', items: { $ref: '#/components/schemas/Event' } } } } } },
        },
        responses: {
          200: { description: 'durable', content: { 'application/json': { schema: { $ref: '#/components/schemas/AppendResult' } } } },
          400: E[400],
          401: E[401],
          404: E[404],
          409: E[409],
          413: E[413],
          503: E[503],
        },
      },
    },
  },
} as const;

const BODY = Buffer.from(JSON.stringify(OPENAPI));

export async function openapiRoute(app: FastifyInstance): Promise<void> {
  app.get('/v1/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(BODY));
}
