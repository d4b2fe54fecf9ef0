// The OpenAPI document of the HTTP facade, from the schemas the facade validates bodies with, so
// that it cannot drift from them.
import { ERROR_CODES, type ErrorCode } from '@orbit/protocol/errors';
import { IDEMPOTENCY_KEY_PATTERN } from '@orbit/protocol/primitives';
import { ID_RE } from '@orbit/protocol/validation';
import { VERSION_NUMBER_RE } from '../http/definition-routes.js';
import { ROUTE_META } from './routes-meta.js';
import type { RouteMeta } from './route-meta-type.js';
import { apiDescription, tagOf, TAGS } from './openapi-info.js';
import { scopeTable } from './scopes.js';
import { groupBy } from '../group-by.js';

export const API_VERSION = '0.1.0';

/** TypeBox's symbol keys dropped. */
export function plainSchema(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/** Codes every authenticated route can answer, on top of its own. A slow sender gets
 * REQUEST_TIMEOUT on any route (docs/errors.md). */
const AUTHED: ErrorCode[] = ['INVALID_ARGUMENT', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'METHOD_NOT_ALLOWED', 'REQUEST_TIMEOUT', 'INTERNAL', 'UNAVAILABLE'];
const OPEN: ErrorCode[] = ['METHOD_NOT_ALLOWED', 'REQUEST_TIMEOUT', 'INTERNAL'];

const PARAMS: Record<string, { description: string; pattern: string }> = {
  id: { description: 'the id of the resource the path names (32 lowercase hex; anything else is 404)', pattern: ID_RE.source },
  n: { description: 'a version number, from 1 (anything else is 404)', pattern: VERSION_NUMBER_RE.source },
};

export function routeErrors(meta: RouteMeta, template: string): ErrorCode[] {
  const all = new Set<ErrorCode>([...(meta.scopes ? AUTHED : OPEN), ...(meta.errors ?? [])]);
  // The router answers 404 for a malformed id before the handler runs.
  if (template.includes('{')) all.add('NOT_FOUND');
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

function describe(meta: RouteMeta, errors: ErrorCode[]): string {
  const scopes = (meta.scopes ?? []).map((s) => `\`${s}\``);
  const access =
    scopes.length === 0 ? '**Public:** needs no credential.' : scopes.length === 1 ? `**Scope:** ${scopes[0]}.` : `**Scope:** any one of ${scopes.join(', ')}.`;
  const parts = [meta.description, access];
  if (meta.idempotent) parts.push('**Idempotent command:** requires an `Idempotency-Key` header; a retry with the same key and content replays the receipt.');
  parts.push(`**Answers** ${meta.status ?? 200}: ${meta.returns}.`);
  parts.push(
    `**Refusals:** ${errors.map((c) => `\`${c}\` (${ERROR_CODES[c].http})`).join(', ')}; each is explained under Error codes in the API description and in docs/errors.md.`,
  );
  return parts.join('\n\n');
}

function operation(key: string, meta: RouteMeta) {
  const [method, template] = key.split(' ') as [string, string];
  const parameters: Record<string, unknown>[] = [];
  for (const m of template.matchAll(/\{([a-z_]+)\}/g)) {
    const p = PARAMS[m[1]!];
    if (!p) throw new Error(`no OpenAPI description of the path parameter ${m[1]} of ${template}`);
    parameters.push({ name: m[1], in: 'path', required: true, description: p.description, schema: { type: 'string', pattern: p.pattern } });
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
  const errors = routeErrors(meta, template);
  const byStatus = groupBy(errors, (c) => ERROR_CODES[c].http);
  const responses: Record<string, unknown> = {
    [String(meta.status ?? 200)]: {
      description: meta.returns,
      headers: { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } },
      content: meta.contentType
        ? { [meta.contentType]: { schema: { type: 'string' } } }
        : { 'application/json': { schema: meta.scopes ? { $ref: '#/components/schemas/DataEnvelope' } : { type: 'object' } } },
    },
  };
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) responses[String(status)] = errorResponse(codes);
  const op: Record<string, unknown> = {
    operationId: `${method.toLowerCase()}${template.replace(/\{[a-z_]+\}/g, 'By').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    summary: meta.summary,
    description: describe(meta, errors),
    tags: [tagOf(template)],
    // A bearer scheme has no OAuth scopes: the scopes are in the description and x-orbit-scopes.
    security: meta.scopes ? [{ bearer: [] }] : [],
    'x-orbit-scopes': meta.scopes ?? [],
    'x-orbit-error-codes': errors,
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
      description: apiDescription(),
      // Orbit is self-hosted: whoever runs the gateway answers for its API.
      contact: { name: 'the operators of this Orbit deployment' },
    },
    tags: TAGS.map(({ name, description }) => ({ name, description })),
    servers: [{ url: 'http://127.0.0.1:8080', description: 'npm start' }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: `A credential's token (\`orb_…\`). A credential belongs to one namespace and carries scopes and the queues it may use; each operation names the scopes that grant it (any one suffices).\n\n${scopeTable()}`,
        },
      },
      headers: { RequestId: { description: 'the request id, also in the body', schema: { type: 'string' } } },
      schemas: {
        DataEnvelope: { type: 'object', required: ['request_id', 'data'], properties: { request_id: { type: 'string' }, data: { type: 'object' } } },
      },
    },
    paths,
  };
}
