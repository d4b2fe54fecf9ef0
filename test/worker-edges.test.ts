// Edges of the worker protocol: the error frame before a 1009 close, a start that races the
// deadline sweep, and a start after its lease ended that the sweeper has not expired yet.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { nextOf } from './support/dispatch-fixture.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { waitFor } from './support/wait.js';
import { setTaskTime } from './support/waiting.js';

// The sweeper's longest interval: the lease test below also keeps it from the attempt by a lock.
const f = useGatewayFixture({ gatewayEnv: { ORBIT_MAX_FRAME_BYTES: '310000', ORBIT_SWEEP_INTERVAL_MS: '1000' } });

/** A transaction is waiting for a row lock of this database's `table`. */
async function lockWaitOn(table: string): Promise<boolean> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(
    `SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX x JOIN information_schema.INNODB_LOCKS l ON l.lock_trx_id = x.trx_id
      WHERE x.trx_state = 'LOCK WAIT' AND l.lock_table = ?`,
    [`\`${f.db.name}\`.\`${table}\``],
  );
  return Number(rows[0]!.n) > 0;
}

/** A raw session on the tenant's queue and the one task assigned to it. */
async function assigned(): Promise<{ w: RawWorker; assign: any }> {
  const w = await openRaw(f.gw.url, f.t.token);
  w.send(hello([f.t.queue_id], { capacity: 1 }));
  await w.next('hello.ok');
  const r = await call(f.gw.url, 'POST', '/v1/tasks', {
    token: f.t.token,
    key: ikey(),
    body: { queue_id: f.t.queue_id, handler: 'h', handler_version: 'v1', payload_version: 'v1', payload: {} },
  });
  expect(r.status).toBe(201);
  return { w, assign: await w.next('task.assign') };
}

async function attemptRow(attemptId: string): Promise<any> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>(
    'SELECT a.state, a.started_at, t.state AS task_state, t.attempts_made FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = ?',
    [attemptId],
  );
  return rows[0];
}

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
    const { w, assign } = await assigned();
    await setTaskTime(f.db.pool, assign.task.id, 'deadline_at', 'UTC_TIMESTAMP(3) - INTERVAL 1 SECOND');
    w.send({ type: 'start', attempt_id: assign.attempt_id });
    const err = await w.next('error');
    expect(err).toMatchObject({ code: 'LEASE_LOST', attempt_id: assign.attempt_id, fatal: false });
    const row = () => attemptRow(assign.attempt_id);
    // The refused start left the attempt as it was (LEASED), or the sweeper already cancelled it.
    expect(['LEASED', 'CANCELLED']).toContain((await row()).state);
    // docs/guarantees.md: a LEASED attempt past the task's deadline is cancelled, the task DEADLINE_EXCEEDED;
    // it never ran, so it consumed no attempt.
    await waitFor('the sweeper cancelled the attempt', async () => (await row()).state === 'CANCELLED', { timeout: 10_000 });
    expect(await row()).toEqual({ state: 'CANCELLED', started_at: null, task_state: 'DEADLINE_EXCEEDED', attempts_made: 0 });
    w.close();
  });

  it('a start after the lease ended, before the sweeper expired it, is LEASE_LOST and leaves the attempt LEASED', async () => {
    const { w, assign } = await assigned();
    const row = () => attemptRow(assign.attempt_id);
    // The lease is backdated in a transaction that holds the attempt's row until the start waits
    // for it: the sweeper reads the committed, live lease and its locking read skips the held row,
    // so the start is decided on an attempt whose lease ended and that nothing has expired.
    const c = await f.db.pool.getConnection();
    try {
      await c.query('START TRANSACTION');
      await c.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = ?', [assign.attempt_id]);
      w.send({ type: 'start', attempt_id: assign.attempt_id });
      // Polled slower than 0.1 s: InnoDB refreshes these tables' cache only after 0.1 s unread.
      await waitFor('the start waiting for the attempt row', () => lockWaitOn('attempts'), { timeout: 5000, interval: 200 });
      await c.query('COMMIT');
    } finally {
      c.release();
    }
    // "past its lease": answered from the LEASED row, not from one the sweeper had expired.
    expect(await nextOf(w, ['start.ok', 'error'])).toMatchObject({
      type: 'error',
      code: 'LEASE_LOST',
      message: 'attempt is past its lease',
      attempt_id: assign.attempt_id,
      fatal: false,
    });
    expect(await row()).toMatchObject({ started_at: null });
    expect(['LEASED', 'EXPIRED']).toContain((await row()).state);
    // The sweeper then expires it; it never started, so its task waits again without an attempt used.
    await waitFor('the sweeper expired the attempt', async () => (await row()).state === 'EXPIRED', { timeout: 10_000 });
    expect(await row()).toMatchObject({ state: 'EXPIRED', started_at: null });
    w.close();
  });
});
