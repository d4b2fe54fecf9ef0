// OpenAPI 3.1 and AsyncAPI 3.1 (docs/http-api.md): generated from the TypeBox schemas at build time,
// served by the gateway, valid against the official schemas, complete (every route of the router
// with its scope and error codes; every frame), and true (a credential without the documented scope
// is refused with 403, one with only that scope is not).
import fs from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import specs from '@asyncapi/specs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { GATEWAY_FRAMES, WORKER_FRAMES } from '@orbit/protocol/frames';
import { ERROR_CODES } from '@orbit/protocol/errors';
import type { AppContext } from '../server/app-context.js';
import { asyncApiDocument } from '../server/api-docs/asyncapi.js';
import { openApiDocument } from '../server/api-docs/openapi.js';
import { apiDocumentText } from '../server/api-docs/serve.js';
import { ROUTE_META } from '../server/api-docs/routes-meta.js';
import { ALL_SCOPES, hashToken, newToken } from '../server/admin/access.js';
import { buildRoutes } from '../server/http/routes.js';
import { insertCredential } from '../server/db/credentials.js';
import { newId } from '../server/ids.js';
import { packageRoot } from '../server/paths.js';
import { helloFrame } from '../worker-sdk/connection.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { newSchedule, scheduleCommand, versionBody } from './support/schedules.js';

const f = useGatewayFixture();
// The router only keeps the AppContext for its handlers; listing its routes never touches it.
const routes = buildRoutes({} as AppContext).list();

type Op = {
  security: Record<string, string[]>[];
  'x-orbit-scopes': string[];
  'x-orbit-error-codes': string[];
  responses: Record<string, { content?: Record<string, { schema: any }> }>;
};

describe('OpenAPI', () => {
  it('is served at GET /v1/openapi.json exactly as the build wrote it, and is valid OpenAPI 3.1', async () => {
    const r = await call(f.gw.url, 'GET', '/v1/openapi.json');
    expect(r.status).toBe(200);
    expect(r.body).toEqual(openApiDocument());
    expect(JSON.parse(fs.readFileSync(path.join(packageRoot(), 'dist/api/openapi.json'), 'utf8'))).toEqual(r.body);
    const result = await new Validator().validate(r.body);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(r.body.openapi).toBe('3.1.0');
  });

  it('is sent gzipped to a client that accepts gzip, the same text', async () => {
    for (const name of ['openapi', 'asyncapi']) {
      const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
        http.get(`${f.gw.url}/v1/${name}.json`, { headers: { 'accept-encoding': 'gzip' } }, resolve).on('error', reject),
      );
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-encoding']).toBe('gzip');
      expect(res.headers.vary).toBe('Accept-Encoding');
      const body = Buffer.concat(chunks);
      expect(zlib.gunzipSync(body).toString('utf8')).toBe(apiDocumentText(name as 'openapi' | 'asyncapi'));
      expect(body.length).toBeLessThan(apiDocumentText(name as 'openapi' | 'asyncapi').length / 5);
    }
  });

  it('has every route of the router, with its scope and every error code it answers', () => {
    const doc = openApiDocument() as { paths: Record<string, Record<string, Op>> };
    expect(routes.length).toBeGreaterThan(25);
    expect(Object.keys(ROUTE_META).sort()).toEqual(routes.map((r) => `${r.method} ${r.template}`).sort());
    for (const route of routes) {
      const op = doc.paths[route.template]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.template}`).toBeDefined();
      const meta = ROUTE_META[`${route.method} ${route.template}`]!;
      expect(Boolean(meta.scopes)).toBe(route.auth);
      const granting = meta.scopes ?? [];
      expect(op!['x-orbit-scopes']).toEqual(granting);
      // Bearer tokens carry no OAuth scopes: one requirement naming the scheme, the scopes in x-orbit-scopes.
      expect(op!.security).toEqual(granting.length ? [{ bearer: [] }] : []);
      for (const code of op!['x-orbit-error-codes']) {
        const status = String(ERROR_CODES[code as keyof typeof ERROR_CODES].http);
        expect(op!.responses[status]?.content?.['application/json']?.schema.properties.error.properties.code.enum, `${route.template} ${code}`).toContain(code);
      }
      if (route.auth) expect(op!['x-orbit-error-codes']).toEqual(expect.arrayContaining(['UNAUTHENTICATED', 'PERMISSION_DENIED', 'INTERNAL', 'UNAVAILABLE']));
      for (const code of meta.errors ?? []) expect(op!['x-orbit-error-codes']).toContain(code);
    }
  });

  it('lists RESOURCE_RETIRED for every command a retired schedule answers with it', async () => {
    const api = { url: f.gw.url, token: f.t.token };
    const { schedule } = await newSchedule(api, f.t.queue_id);
    expect((await scheduleCommand(api, schedule.id, 'pause', { expected_revision: '1' })).status).toBe(200);
    expect((await scheduleCommand(api, schedule.id, 'retire', { expected_revision: '2', reason: 'old' })).status).toBe(200);
    const doc = openApiDocument() as { paths: Record<string, Record<string, Op>> };
    for (const [action, body] of [
      ['pause', { expected_revision: '3' }],
      ['resume', { expected_revision: '3' }],
      ['retire', { expected_revision: '3', reason: 'again' }],
      ['trigger', {}],
      ['versions', { expected_revision: '3', version: versionBody(f.t.queue_id) }],
    ] as const) {
      const r = await scheduleCommand(api, schedule.id, action, body);
      expect(r.body.error?.code, action).toBe('RESOURCE_RETIRED');
      const template = action === 'versions' ? '/v1/schedules/{id}/versions' : `/v1/schedules/{id}:${action}`;
      expect(doc.paths[template]!.post!['x-orbit-error-codes'], template).toContain('RESOURCE_RETIRED');
    }
  });

  it('the documented scopes are the enforced ones', async () => {
    const cred = async (scopes: string[]) => {
      const token = newToken();
      await insertCredential(f.db.pool, { id: newId(), namespaceId: f.t.namespace_id, name: 'docs', tokenHash: hashToken(token), scopes, queueIds: '*' });
      return token;
    };
    const id = '0'.repeat(32);
    for (const route of routes.filter((r) => r.auth)) {
      const meta = ROUTE_META[`${route.method} ${route.template}`]!;
      const granting = meta.scopes!;
      const p = route.template.replace(/\{id\}/g, id);
      const send = async (token: string) =>
        (
          await call(f.gw.url, route.method, p, {
            token,
            key: route.method === 'POST' ? ikey('docs') : undefined,
            body: route.method === 'POST' ? {} : undefined,
          })
        ).body?.error?.code;
      expect(await send(await cred(ALL_SCOPES.filter((s) => !granting.includes(s)))), `${route.method} ${route.template} without ${granting.join('/')}`).toBe(
        'PERMISSION_DENIED',
      );
      for (const g of granting) expect(await send(await cred([g])), `${route.method} ${route.template} with only ${g}`).not.toBe('PERMISSION_DENIED');
    }
  });
});

describe('AsyncAPI', () => {
  it('is served at GET /v1/asyncapi.json, valid AsyncAPI 3.1, with every frame both ways', async () => {
    const r = await call(f.gw.url, 'GET', '/v1/asyncapi.json');
    expect(r.status).toBe(200);
    expect(r.body).toEqual(asyncApiDocument());
    // meta: false — the AsyncAPI bundle carries its own copy of the draft-07 meta-schema.
    const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, meta: false });
    addFormats.default(ajv);
    const validate = ajv.compile((specs as unknown as { schemas: Record<string, object> }).schemas['3.1.0']!);
    expect(validate(r.body) ? [] : validate.errors).toEqual([]);
    const messages = r.body.components.messages as Record<string, { payload: object }>;
    expect(Object.keys(messages).sort()).toEqual([...Object.keys(WORKER_FRAMES), ...Object.keys(GATEWAY_FRAMES)].sort());
    expect(r.body.operations['receive-hello'].action).toBe('receive');
    expect(r.body.operations['send-task-assign'].action).toBe('send');
  });

  it('its payload schemas accept real frames and refuse broken ones', () => {
    const doc = asyncApiDocument() as { components: { messages: Record<string, { payload: object }> } };
    const ajv = new Ajv({ strict: false });
    const hello = ajv.compile(doc.components.messages.hello!.payload);
    const frame = helloFrame({ workerId: 'w-1', queues: ['q'], capacity: 2, concurrencyKeys: true, handlers: [{ handler: 'h', versions: ['v1'] }] });
    expect(hello(frame)).toBe(true);
    expect(hello({ ...frame, colour: 'red' })).toBe(false);
  });
});
