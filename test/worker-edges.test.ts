// Edges of the worker protocol: the error frame before a 1009 close, and a start that races the
// deadline sweep.
import { describe, expect, it } from 'vitest';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw } from './support/raw-worker.js';
import { waitFor } from './support/wait.js';
import { setTaskTime } from './support/waiting.js';

const f = useGatewayFixture({ gatewayEnv: { ORBIT_MAX_FRAME_BYTES: '310000' } });

describe('worker protocol edges', () => {
  it('a frame over max_frame_bytes gets PROTOCOL_ERROR, then close 1009', async () => {
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([f.t.queue_id]));
    await w.next('hello.ok');
    w.send({ type: 'renew', attempt_ids: ['x'.repeat(64)], pad: 'y'.repeat(400_000) });
    const err = await w.next('error');
    expect(err).toMatchObject({ code: 'PROTOCOL_ERROR', fatal: true });
    expect((await w.closed).code).toBe(1009);
  });

  it('a start after the task deadline is LEASE_LOST and never makes the attempt RUNNING; the sweeper cancels it', async () => {
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([f.t.queue_id]));
    await w.next('hello.ok');
    const r = await call(f.gw.url, 'POST', '/v1/tasks', {
      token: f.t.token,
      key: ikey(),
      body: { queue_id: f.t.queue_id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: {} },
    });
    expect(r.status).toBe(201);
    const assign = await w.next('task.assign');
    await setTaskTime(f.db.pool, assign.task.id, 'deadline_at', 'UTC_TIMESTAMP(3) - INTERVAL 1 SECOND');
    w.send({ type: 'start', attempt_id: assign.attempt_id });
    const err = await w.next('error');
    expect(err).toMatchObject({ code: 'LEASE_LOST', attempt_id: assign.attempt_id, fatal: false });
    const row = async () =>
      (
        (await f.db.pool.query(
          'SELECT a.state, a.started_at, t.state AS task_state, t.attempts_made FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = ?',
          [assign.attempt_id],
        )) as any
      )[0][0];
    // The refused start left the attempt as it was (LEASED), or the sweeper already cancelled it.
    expect(['LEASED', 'CANCELLED']).toContain((await row()).state);
    // dispatch.md: a LEASED attempt past the task's deadline is cancelled, the task DEADLINE_EXCEEDED;
    // it never ran, so it consumed no attempt.
    await waitFor('the sweeper cancelled the attempt', async () => (await row()).state === 'CANCELLED', { timeout: 10_000 });
    expect(await row()).toEqual({ state: 'CANCELLED', started_at: null, task_state: 'DEADLINE_EXCEEDED', attempts_made: 0 });
    w.close();
  });
});
