import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, stopAllGateways, type GatewayProcess } from './support/gateway.js';
import { call, ikey } from './support/http.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';

let db: TestDb;
let gw: GatewayProcess;
let t: CredentialsFile;

beforeAll(async () => {
  db = await createTestDb();
  gw = await startGateway(db.dsn);
  t = await newTenant(db);
});
afterAll(async () => {
  await stopAllGateways();
  await db.drop();
});

const task = (over: Record<string, unknown> = {}) => ({
  queue_id: t.queue_id,
  handler: 'object.update',
  handler_version: 'v1',
  payload_version: 'v1',
  payload: { operation_ref: 'update-001', object_ref: 'objects/42' },
  concurrency_key: 'object/42',
  ...over,
});

describe('submit smoke', () => {
  it('accepts the spec example, replays it, and reads it back', async () => {
    const key = ikey();
    const first = await call(gw.url, 'POST', '/v1/tasks', { token: t.token, key, body: task() });
    expect(first.status).toBe(201);
    expect(first.headers.get('x-request-id')).toBe(first.body.request_id);
    expect(first.body.data.deduplicated).toBe(false);
    expect(first.body.data.task.state).toBe('WAITING');
    const again = await call(gw.url, 'POST', '/v1/tasks', { token: t.token, key, body: task() });
    expect(again.status).toBe(200);
    expect(again.body.data.deduplicated).toBe(true);
    expect(again.body.data.task).toEqual(first.body.data.task);
    const read = await call(gw.url, 'GET', `/v1/tasks/${first.body.data.task.id}`, { token: t.token });
    expect(read.status).toBe(200);
    expect(read.body.data.task).toEqual(first.body.data.task);
  });
});
