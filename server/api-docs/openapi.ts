// The OpenAPI document of the HTTP facade, from the schemas the facade validates bodies with, so
// that it cannot drift from them.
import { ERROR_CODES, type ErrorCode } from '@orbit/protocol/errors';
import { IDEMPOTENCY_KEY_PATTERN } from '@orbit/protocol/primitives';
import { ID_RE } from '@orbit/protocol/validation';
import { ROUTE_META, type RouteMeta } from './routes-meta.js';

export const API_VERSION = '0.1.0';

/** TypeBox's symbol keys dropped. */
export function plainSchema(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/** Codes every authenticated route can answer, on top of its own. */
const AUTHED: ErrorCode[] = ['INVALID_ARGUMENT', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'METHOD_NOT_ALLOWED', 'INTERNAL', 'UNAVAILABLE'];
const OPEN: ErrorCode[] = ['METHOD_NOT_ALLOWED', 'INTERNAL'];

export function routeErrors(meta: RouteMeta): ErrorCode[] {
  const all = new Set<ErrorCode>([...(meta.scope ? AUTHED : OPEN), ...meta.errors]);
  if (meta.body) all.add('INVALID_ARGUMENT').add('PAYLOAD_TOO_LARGE');
  if (meta.idempotent) all.add('INVALID_ARGUMENT').add('IDEMPOTENCY_CONFLICT');
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((c) => all.has(c));
}

function errorResponse(codes: ErrorCode[]) {
  return {
    description: codes.map((c) => `\`${c}\`: ${ERROR_CODES[c].doc}`).join('; '),
    headers: { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } },
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['request_id', 'error'],
          properties: {
            request_id: { type: 'string' },
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { type: 'string', enum: codes }, message: { type: 'string' }, details: { type: 'object' } },
            },
          },
        },
      },
    },
  };
}

function operation(key: string, meta: RouteMeta) {
  const [method, template] = key.split(' ') as [string, string];
  const parameters: Record<string, unknown>[] = [];
  for (const m of template.matchAll(/\{([a-z_]+)\}/g)) {
    parameters.push({ name: m[1], in: 'path', required: true, schema: { type: 'string', pattern: ID_RE.source } });
  }
  if (meta.idempotent) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: true,
      description: 'identity of this command: the same key and content replay the receipt',
      schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN },
    });
  }
  for (const q of meta.query ?? []) {
    const schema = q.enum ? { type: 'string', enum: [...q.enum] } : q.integer ? { type: 'integer', ...q.integer } : { type: 'string' };
    parameters.push({ name: q.name, in: 'query', required: false, description: q.description, schema });
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of routeErrors(meta)) byStatus.set(ERROR_CODES[c].http, [...(byStatus.get(ERROR_CODES[c].http) ?? []), c]);
  const responses: Record<string, unknown> = {
    [String(meta.status)]: {
      description: meta.returns,
      headers: { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } },
      content:
        key === 'GET /metrics'
          ? { 'text/plain': { schema: { type: 'string' } } }
          : { 'application/json': { schema: meta.scope ? { $ref: '#/components/schemas/DataEnvelope' } : { type: 'object' } } },
    },
  };
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) responses[String(status)] = errorResponse(codes);
  const op: Record<string, unknown> = {
    operationId: `${method.toLowerCase()}${template.replace(/\{[a-z_]+\}/g, 'By').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    summary: meta.summary,
    // Separate security requirements: in OpenAPI any one of them is enough.
    security: meta.scope ? [meta.scope, ...(meta.orScopes ?? [])].map((sc) => ({ bearerAuth: [sc] })) : [],
    'x-orbit-scopes': meta.scope ? [meta.scope, ...(meta.orScopes ?? [])] : [],
    'x-orbit-error-codes': routeErrors(meta),
    parameters,
    responses,
  };
  if (meta.body) op.requestBody = { required: true, content: { 'application/json': { schema: plainSchema(meta.body) } } };
  return { method: method.toLowerCase(), template, op };
}

export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [key, meta] of Object.entries(ROUTE_META)) {
    const { method, template, op } = operation(key, meta);
    (paths[template] ??= {})[method] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Orbit HTTP API',
      version: API_VERSION,
      description:
        'Tasks, attempts, queues, result-stream subscriptions. Every response is an envelope {request_id, data} or {request_id, error:{code, message, details?}}; uint64 values are decimal strings. Workers use the WebSocket protocol described by /v1/asyncapi.json.',
    },
    servers: [{ url: 'http://127.0.0.1:8080', description: 'npm start' }],
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'a credential token; each operation lists the scope it needs' } },
      headers: { RequestId: { description: 'the request id, also in the body', schema: { type: 'string' } } },
      schemas: {
        DataEnvelope: { type: 'object', required: ['request_id', 'data'], properties: { request_id: { type: 'string' }, data: { type: 'object' } } },
      },
    },
    paths,
  };
}
