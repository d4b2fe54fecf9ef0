// Contract: GET /v1/queues/{id}/stats (docs/operations.md): live counts by state, the queue's permits, the
// oldest waiting task, and exactly 15 one-minute outcome buckets on the database clock. Real
// gateway, real MariaDB, real worker sockets; database time is moved instead of sleeping.
import { afterEach, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { newTenant } from './support/db.js';
import { closeWorkers, cmd, connect, createQueue, nextOf, result, start, submit } from './support/dispatch-fixture.js';
import { useGatewayFixture } from './support/fixture.js';
import { call } from './support/http.js';
import { expectData, expectError, limitedCredential } from './support/contract.js';
import { waitForValue } from './support/wait.js';
import { setTaskTime } from './support/waiting.js';

const f = useGatewayFixture();
afterEach(() => closeWorkers(f));

const stats = (id: string, token = f.t.token, query = '') => call(f.gw.url, 'GET', `/v1/queues/${id}/stats${query}`, { token });
const statsOf = async (id: string) => expectData(await stats(id), 200).stats;
const ZERO = { succeeded: 0, failed: 0, cancelled: 0, deadline_exceeded: 0 };

/** The database clock's current minute, RFC 3339. */
async function dbMinute(): Promise<string> {
  const [[r]] = await f.db.pool.query<RowDataPacket[]>(`SELECT DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%dT%H:%i:00.000Z') AS m`);
  return r!.m as string;
}

describe('GET /v1/queues/{id}/stats', () => {
  it('an empty queue: zeros, 15 contiguous minutes ending with the current database minute', async () => {
    const q = await createQueue(f, { max_active_attempts: 7 });
    const before = await dbMinute();
    const s = await statsOf(q.id);
    const after = await dbMinute();
    expect(Object.keys(s).sort()).toEqual(
      ['active_attempts', 'leased', 'max_active_attempts', 'minutes', 'needs_review', 'oldest_waiting_at', 'running', 'waiting'].sort(),
    );
    expect(s).toMatchObject({ waiting: 0, leased: 0, running: 0, needs_review: 0, active_attempts: 0, max_active_attempts: 7, oldest_waiting_at: null });
    expect(s.minutes).toHaveLength(15);
    for (const [i, m] of s.minutes.entries()) {
      expect(Object.keys(m).sort()).toEqual(['cancelled', 'deadline_exceeded', 'failed', 'minute', 'succeeded']);
      expect(m).toMatchObject(ZERO);
      if (i > 0) expect(Date.parse(m.minute) - Date.parse(s.minutes[i - 1].minute)).toBe(60_000);
    }
    expect([before, after]).toContain(s.minutes[14].minute);
  });

  it('counts every unfinished state, the permits in use and the oldest waiting task', async () => {
    const q = await createQueue(f);
    const a = await submit(f, q.id);
    const b = await submit(f, q.id);
    const { w } = await connect(f, [q.id], { capacity: 2 });
    const first = await nextOf(w, ['task.assign']);
    await nextOf(w, ['task.assign']);
    await start(w, first.attempt_id);
    const c = await submit(f, q.id, { not_before: new Date(Date.now() + 3_600_000).toISOString() });
    const d = await submit(f, q.id, { not_before: new Date(Date.now() + 3_600_000).toISOString() });
    // Review: an attempt whose outcome is unknown parks its task.
    const review = await createQueue(f);
    await submit(f, review.id);
    const { w: w2 } = await connect(f, [review.id], { capacity: 1 });
    const ra = await nextOf(w2, ['task.assign']);
    await start(w2, ra.attempt_id);
    expect((await result(w2, ra.attempt_id, 'unknown', { error: { code: 'E', message: 'lost' } })).type).toBe('result.ok');

    const s = await statsOf(q.id);
    expect(s).toMatchObject({ waiting: 2, leased: 1, running: 1, needs_review: 0, active_attempts: 2 });
    const [[oldest]] = await f.db.pool.query<RowDataPacket[]>(`SELECT created_at FROM tasks WHERE id = ?`, [c.id]);
    expect(s.oldest_waiting_at).toBe((oldest!.created_at as string).replace(' ', 'T') + 'Z');
    expect(d.id).not.toBe(c.id);
    expect([a.id, b.id]).toContain(first.task.id);
    expect(await statsOf(review.id)).toMatchObject({ waiting: 0, leased: 0, running: 0, needs_review: 1, active_attempts: 0 });
  });

  it('outcomes land in the minute they happened; other queues and older minutes are not counted', async () => {
    const q = await createQueue(f);
    const other = await createQueue(f);
    const { w } = await connect(f, [q.id, other.id], { capacity: 1 });
    const finish = async (queueId: string, outcome: string) => {
      await submit(f, queueId, { max_attempts: 1 });
      const asg = await nextOf(w, ['task.assign']);
      await start(w, asg.attempt_id);
      const extra = outcome === 'failed' ? { error: { code: 'BOOM', message: 'no' } } : {};
      expect((await result(w, asg.attempt_id, outcome, extra)).type).toBe('result.ok');
      return asg.task.id as string;
    };
    await finish(q.id, 'succeeded');
    await finish(q.id, 'succeeded');
    await finish(q.id, 'failed');
    await finish(other.id, 'succeeded');
    const cancelled = await submit(f, q.id, { not_before: new Date(Date.now() + 3_600_000).toISOString() });
    expect((await cmd(f, cancelled.id, 'cancel', { reason: 'not needed' })).status).toBe(200);
    const old = await finish(q.id, 'succeeded');
    const edge = await finish(q.id, 'failed');
    // Not in the last seconds of a minute, so the moves below and the read see the same minute.
    const [[clock]] = await f.db.pool.query<RowDataPacket[]>(`SELECT SECOND(UTC_TIMESTAMP()) AS s`);
    if (Number(clock!.s) > 55) await new Promise((r) => setTimeout(r, (61 - Number(clock!.s)) * 1000));
    // One outcome 20 minutes ago (outside the window), one in the first second of the oldest bucket.
    await f.db.pool.query(`UPDATE result_events SET occurred_at = occurred_at - INTERVAL 20 MINUTE WHERE task_id = ?`, [old]);
    await f.db.pool.query(
      `UPDATE result_events SET occurred_at = DATE_FORMAT(UTC_TIMESTAMP() - INTERVAL 14 MINUTE, '%Y-%m-%d %H:%i:00.001') WHERE task_id = ?`,
      [edge],
    );
    const s = await statsOf(q.id);
    expect(s.minutes[14].minute).toBe(await dbMinute());
    // Expected buckets from the rows themselves, so a minute boundary during the finishes is fine.
    const [events] = await f.db.pool.query<RowDataPacket[]>(`SELECT type, occurred_at FROM result_events WHERE queue_id = ?`, [q.id]);
    const expected = s.minutes.map((m: any) => ({ minute: m.minute, ...ZERO }));
    for (const e of events) {
      const i = Math.floor((Date.parse((e.occurred_at as string).replace(' ', 'T') + 'Z') - Date.parse(s.minutes[0].minute)) / 60_000);
      const field = (e.type as string).slice('task.'.length) as keyof typeof ZERO;
      if (i >= 0 && i < 15) expected[i][field]++;
    }
    expect(s.minutes).toEqual(expected);
    const total = (k: keyof typeof ZERO) => s.minutes.reduce((n: number, m: any) => n + m[k], 0);
    expect([total('succeeded'), total('failed'), total('cancelled'), total('deadline_exceeded')]).toEqual([2, 2, 1, 0]);
    expect(s.minutes[0].failed).toBe(1);
    expect(s.minutes.slice(1).reduce((n: number, m: any) => n + m.succeeded, 0)).toBe(2);
    const o = await statsOf(other.id);
    expect(o.minutes.map((m: any) => m.succeeded + m.failed + m.cancelled).reduce((a: number, b: number) => a + b)).toBe(1);
  });

  it('deadline_exceeded outcomes are counted', async () => {
    const q = await createQueue(f);
    const t = await submit(f, q.id, { deadline_seconds: 1, not_before: new Date(Date.now() + 500).toISOString() });
    await setTaskTime(f.db.pool, t.id, 'deadline_at', 'UTC_TIMESTAMP(3) - INTERVAL 1 SECOND');
    // The counts and the buckets are two reads (not one snapshot): wait until both show it.
    const s = await waitForValue(
      () => statsOf(q.id),
      (v) => v.minutes.some((m: any) => m.deadline_exceeded === 1) && v.waiting === 0,
      { timeout: 10_000, interval: 100 },
    );
    expect(s.minutes.reduce((n: number, m: any) => n + m.deadline_exceeded, 0)).toBe(1);
    expect(s.waiting).toBe(0);
  });

  it('scope tasks:read or queues:manage; queue authorization; 404 outside the namespace', async () => {
    const q = await createQueue(f);
    const reader = await limitedCredential(f.db, f.t.namespace_id, ['tasks:read']);
    const manager = await limitedCredential(f.db, f.t.namespace_id, ['queues:manage']);
    const submitter = await limitedCredential(f.db, f.t.namespace_id, ['tasks:submit', 'events:read']);
    const elsewhere = await limitedCredential(f.db, f.t.namespace_id, ['tasks:read', 'queues:manage'], [f.t.queue_id]);
    expectData(await stats(q.id, reader.token), 200);
    expectData(await stats(q.id, manager.token), 200);
    expectError(await stats(q.id, submitter.token), 403, 'PERMISSION_DENIED');
    expectError(await stats(q.id, elsewhere.token), 403, 'PERMISSION_DENIED');
    expectData(await stats(f.t.queue_id, elsewhere.token), 200);
    const other = await newTenant(f.db);
    expectError(await stats(q.id, other.token), 404, 'NOT_FOUND');
    expectError(await stats(q.id, 'orb_not-a-real-token'), 401, 'UNAUTHENTICATED');
    expectError(await call(f.gw.url, 'GET', `/v1/queues/${q.id}/stats`), 401, 'UNAUTHENTICATED');
  });

  it('an id that cannot exist is 404 (no SQL); query parameters and other methods are refused', async () => {
    const q = await createQueue(f);
    for (const id of [q.id.toUpperCase(), q.id.slice(1), q.id + '0', 'x'.repeat(32), '%20' + q.id.slice(3), "'or'1'='1"]) {
      expectError(await stats(id), 404, 'NOT_FOUND');
    }
    expect(expectError(await stats(q.id, f.t.token, '?window=60'), 400, 'INVALID_ARGUMENT').details?.field).toBe('window');
    expectError(await call(f.gw.url, 'POST', `/v1/queues/${q.id}/stats`, { token: f.t.token, body: {} }), 405, 'METHOD_NOT_ALLOWED');
  });

  it('a retired queue still answers (history stays readable)', async () => {
    const q = await createQueue(f);
    const r = await call(f.gw.url, 'POST', `/v1/queues/${q.id}:retire`, {
      token: f.t.token,
      key: `retire-${q.id}`,
      body: { expected_revision: q.revision, reason: 'done' },
    });
    expectData(r, 200);
    expect((await statsOf(q.id)).minutes).toHaveLength(15);
  });
});
