// Edges of the worker protocol: the error frame before a 1009 close, and a start that races the
// deadline sweep.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, newTenant, type TestDb } from './support/db.js';
import { startGateway, stopAllGateways, type GatewayProcess } from './support/gateway.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';

let db: TestDb;
let gw: GatewayProcess;
let t: CredentialsFile;

beforeAll(async () => {
  db = await createTestDb();
  gw = await startGateway(db.dsn, { ORBIT_MAX_FRAME_BYTES: '310000' });
  t = await newTenant(db);
});
afterAll(async () => {
  await stopAllGateways();
  await db.drop();
});

describe('worker protocol edges', () => {
  it('a frame over max_frame_bytes gets PROTOCOL_ERROR, then close 1009', async () => {
    const w = await openRaw(gw.url, t.token);
    w.send(hello([t.queue_id]));
    await w.next('hello.ok');
    w.send({ type: 'renew', attempt_ids: ['x'.repeat(64)], pad: 'y'.repeat(400_000) });
    const err = await w.next('error');
    expect(err).toMatchObject({ code: 'PROTOCOL_ERROR', fatal: true });
    expect((await w.closed).code).toBe(1009);
  });

  it('a start after the task deadline is LEASE_LOST and never makes the attempt RUNNING', async () => {
    const w = await openRaw(gw.url, t.token);
    w.send(hello([t.queue_id]));
    await w.next('hello.ok');
    const r = await call(gw.url, 'POST', '/v1/tasks', {
      token: t.token,
      key: ikey(),
      body: { queue_id: t.queue_id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: {} },
    });
    expect(r.status).toBe(201);
    const assign = await w.next('task.assign');
    await db.pool.query('UPDATE tasks SET deadline_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = ?', [assign.task.id]);
    w.send({ type: 'start', attempt_id: assign.attempt_id });
    const err = await w.next('error');
    expect(err).toMatchObject({ code: 'LEASE_LOST', attempt_id: assign.attempt_id, fatal: false });
    const [[a]] = (await db.pool.query('SELECT state, started_at FROM attempts WHERE id = ?', [assign.attempt_id])) as any;
    expect(a.state).not.toBe('RUNNING');
    expect(a.started_at).toBeNull();
    w.close();
  });
});
