// Resource-key permits at the edges: one key shared by two queues, token exhaustion at 2^64 − 1,
// retry backoff / UNKNOWN / review releasing the key, pause / drain / socket close releasing
// nothing until lease expiry, a resolve retry getting a larger token, and a stopped (SIGSTOP)
// holder whose key's next task goes to a live worker, never to the stopped one.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { assertPermitInvariants } from './support/invariants.js';
import { spawnWorker } from './support/workers.js';
import { setTaskTime } from './support/waiting.js';
import { backdateLeases, keyRow, metric, session, startAndFinish, taskState } from './support/keys-helpers.js';
import { submitTask } from './support/submit.js';
import { sleep, waitFor } from './support/wait.js';

const f = useGatewayFixture({ tenant: false });

describe('resource keys at the edges', () => {
  it('two queues of one namespace share the key: one permit at a time, increasing tokens', async () => {
    const t = await newTenant(f.db, { queues: ['qa', 'qb'] });
    const qa = t.queues.qa!;
    const qb = t.queues.qb!;
    const w = await session(f.gw.url, t, { queues: [qa, qb], capacity: 4 });
    const ta = await submitTask(f.gw.url, t, { queue_id: qa, concurrency_key: 'shared/1' });
    const tb = await submitTask(f.gw.url, t, { queue_id: qb, concurrency_key: 'shared/1' });
    const first = await w.next('task.assign');
    await sleep(500);
    expect(w.frames.filter((f) => f.type === 'task.assign')).toEqual([]);
    expect([ta.id, tb.id]).toContain(first.task.id);
    await startAndFinish(w, first.attempt_id);
    const second = await w.next('task.assign');
    expect(second.task.id).toBe(first.task.id === ta.id ? tb.id : ta.id);
    expect(BigInt(second.concurrency_token)).toBeGreaterThan(BigInt(first.concurrency_token));
    await startAndFinish(w, second.attempt_id);
    w.close();
    await assertPermitInvariants(f.db.pool);
  });

  it('token exhaustion: the last token is 18446744073709551615, then the key is refused (no wrap), counted', async () => {
    const t = await newTenant(f.db);
    const key = 'exhaust/1';
    const w = await session(f.gw.url, t, { capacity: 1 });
    const t0 = await submitTask(f.gw.url, t, { concurrency_key: key });
    const a0 = await w.next('task.assign');
    expect(a0.task.id).toBe(t0.id);
    await startAndFinish(w, a0.attempt_id);
    await f.db.pool.query('UPDATE resource_keys SET highest_token = 18446744073709551614 WHERE namespace_id = ? AND concurrency_key = ?', [
      t.namespace_id,
      Buffer.from(key),
    ]);

    const before = await metric(f.gw.url, 'orbit_token_exhaustion_refusals_total');
    await submitTask(f.gw.url, t, { concurrency_key: key });
    const last = await w.next('task.assign');
    expect(last.concurrency_token).toBe('18446744073709551615');
    const api = await call(f.gw.url, 'GET', `/v1/attempts/${last.attempt_id}`, { token: t.token });
    expect(api.body.data.attempt.concurrency_token).toBe('18446744073709551615');
    expect(api.text).toContain('"concurrency_token":"18446744073709551615"');
    await startAndFinish(w, last.attempt_id);

    const refused = await submitTask(f.gw.url, t, { concurrency_key: key });
    await waitFor('exhaustion refusal counted', async () => (await metric(f.gw.url, 'orbit_token_exhaustion_refusals_total')) > before, 5000);
    await sleep(300);
    expect(await taskState(f.db.pool, refused.id)).toBe('WAITING');
    expect(w.frames.filter((f) => f.type === 'task.assign')).toEqual([]);
    expect(await keyRow(f.db.pool, t.namespace_id, key)).toMatchObject({ highest_token: '18446744073709551615', holder_attempt_id: null });
    const [n] = await f.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM attempts WHERE task_id = ?', [refused.id]);
    expect(Number(n[0]!.n)).toBe(0);

    // The refused task must not block the session: a free-key task still reaches a capacity-1 worker.
    const other = await submitTask(f.gw.url, t, { concurrency_key: 'exhaust/other' });
    const b = await w.next('task.assign', 3000);
    expect(b.task.id).toBe(other.id);
    expect(b.concurrency_token).toBe('1');
    await startAndFinish(w, b.attempt_id);
    expect(await taskState(f.db.pool, refused.id)).toBe('WAITING');
    w.close();
    await assertPermitInvariants(f.db.pool);
  });

  it('retry with backoff releases the key: another task of the key runs during the backoff', async () => {
    const t = await newTenant(f.db);
    const key = 'backoff/1';
    const w = await session(f.gw.url, t, { capacity: 1 });
    const ta = await submitTask(f.gw.url, t, { concurrency_key: key });
    const a1 = await w.next('task.assign');
    expect(a1.task.id).toBe(ta.id);
    const tb = await submitTask(f.gw.url, t, { concurrency_key: key });
    const r = await startAndFinish(w, a1.attempt_id, 'retry', { error: { code: 'UPSTREAM_503', message: 'later' }, retry_after_ms: 60_000 });
    expect(r.task_state).toBe('WAITING');
    const b = await w.next('task.assign', 3000);
    expect(b.task.id).toBe(tb.id);
    expect(BigInt(b.concurrency_token)).toBeGreaterThan(BigInt(a1.concurrency_token));
    expect((await keyRow(f.db.pool, t.namespace_id, key))!.holder_attempt_id).toBe(b.attempt_id);
    await startAndFinish(w, b.attempt_id);
    // End the backoff early (SQL), the retried task gets a still larger token.
    await setTaskTime(f.db.pool, ta.id, 'not_before', 'UTC_TIMESTAMP(3)');
    const c = await w.next('task.assign', 3000);
    expect(c.task.id).toBe(ta.id);
    expect(c.attempt_no).toBe(2);
    expect(BigInt(c.concurrency_token)).toBeGreaterThan(BigInt(b.concurrency_token));
    await startAndFinish(w, c.attempt_id);
    w.close();
    await assertPermitInvariants(f.db.pool);
  });

  it('unknown and expiry-while-running release the key (NEEDS_REVIEW); a resolve retry gets a larger token', async () => {
    const t = await newTenant(f.db);
    const key = 'review/1';
    const w = await session(f.gw.url, t, { capacity: 1 });
    const ta = await submitTask(f.gw.url, t, { concurrency_key: key });
    const a1 = await w.next('task.assign');
    const r = await startAndFinish(w, a1.attempt_id, 'unknown', { error: { code: 'TIMEOUT', message: 'maybe' } });
    expect(r.task_state).toBe('NEEDS_REVIEW');
    expect(await keyRow(f.db.pool, t.namespace_id, key)).toMatchObject({ holder_attempt_id: null });

    // Expiry while RUNNING: attempt UNKNOWN, task NEEDS_REVIEW, key released.
    const tb = await submitTask(f.gw.url, t, { concurrency_key: key });
    const a2 = await w.next('task.assign');
    expect(a2.task.id).toBe(tb.id);
    w.send({ type: 'start', attempt_id: a2.attempt_id });
    await w.next('start.ok');
    w.send({ type: 'capacity', capacity: 0 });
    await backdateLeases(f.db.pool, [a2.attempt_id]);
    await waitFor('running expiry to review', async () => (await taskState(f.db.pool, tb.id)) === 'NEEDS_REVIEW', 5000);
    expect(await keyRow(f.db.pool, t.namespace_id, key)).toMatchObject({ holder_attempt_id: null });
    const cancel = await w.next('task.cancel');
    expect(cancel).toMatchObject({ attempt_id: a2.attempt_id, reason: 'LEASE_EXPIRED' });
    const att = await call(f.gw.url, 'GET', `/v1/attempts/${a2.attempt_id}`, { token: t.token });
    expect(att.body.data.attempt).toMatchObject({ state: 'UNKNOWN', concurrency_token: a2.concurrency_token });

    // Resolve retry: the task waits again and its new attempt gets a larger token.
    const res = await call(f.gw.url, 'POST', `/v1/tasks/${ta.id}:resolve`, {
      token: t.token,
      key: ikey('resolve'),
      body: { resolution: 'retry', reason: 'checked' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.task.state).toBe('WAITING');
    w.send({ type: 'capacity', capacity: 1 });
    const a3 = await w.next('task.assign');
    expect(a3.task.id).toBe(ta.id);
    expect(BigInt(a3.concurrency_token)).toBeGreaterThan(BigInt(a2.concurrency_token));
    await startAndFinish(w, a3.attempt_id);
    w.close();
    await assertPermitInvariants(f.db.pool);
  });

  it('pause, drain and socket close release nothing until the lease expires', async () => {
    const t = await newTenant(f.db);
    const key = 'hold/1';
    const w = await session(f.gw.url, t, { capacity: 2 });
    await submitTask(f.gw.url, t, { concurrency_key: key });
    const a = await w.next('task.assign');
    w.send({ type: 'start', attempt_id: a.attempt_id });
    await w.next('start.ok');
    const held = await keyRow(f.db.pool, t.namespace_id, key);
    expect(held!.holder_attempt_id).toBe(a.attempt_id);
    const [qv] = await f.db.pool.query<RowDataPacket[]>('SELECT active_attempts FROM queues WHERE id = ?', [t.queue_id]);
    expect(Number(qv[0]!.active_attempts)).toBe(1);

    const q = await call(f.gw.url, 'GET', `/v1/queues/${t.queue_id}`, { token: t.token });
    const paused = await call(f.gw.url, 'POST', `/v1/queues/${t.queue_id}:pause`, {
      token: t.token,
      key: ikey('pause'),
      body: { expected_revision: q.body.data.queue.revision },
    });
    expect(paused.status, paused.text).toBe(200);
    await sleep(300);
    expect(await keyRow(f.db.pool, t.namespace_id, key)).toEqual(held);
    w.send({ type: 'drain' });
    await w.next('drain.ok');
    await sleep(300);
    expect(await keyRow(f.db.pool, t.namespace_id, key)).toEqual(held);
    w.ws.terminate();
    await sleep(500);
    expect(await keyRow(f.db.pool, t.namespace_id, key)).toEqual(held);
    const [still] = await f.db.pool.query<RowDataPacket[]>('SELECT state FROM attempts WHERE id = ?', [a.attempt_id]);
    expect(still[0]!.state).toBe('RUNNING');
    await assertPermitInvariants(f.db.pool);

    await backdateLeases(f.db.pool, [a.attempt_id]);
    await waitFor('release at expiry', async () => (await keyRow(f.db.pool, t.namespace_id, key))!.holder_attempt_id === null, 5000);
    const after = await keyRow(f.db.pool, t.namespace_id, key);
    expect(BigInt(after!.version)).toBe(BigInt(held!.version) + 1n);
    expect(after!.highest_token).toBe(held!.highest_token);
    await assertPermitInvariants(f.db.pool);
  });

  it("a stopped worker holding a key gets none of the key's next attempts; a live worker gets the task, and the stopped one gets work again once it answers", async () => {
    const t = await newTenant(f.db);
    const key = 'stopped/1';
    const attemptsOf = async (where: string, arg: string) =>
      (await f.db.pool.query<RowDataPacket[]>(`SELECT id, session_id, attempt_no, state FROM attempts WHERE ${where} = ? ORDER BY attempt_no`, [arg]))[0];
    // Capacity 1: the stopped worker's only slot is the one its expired attempt frees.
    const stopped = spawnWorker(f.gw.url, t.token, [t.queue_id], { WORKER_CAPACITY: '1', WORKER_LOG_RUNS: '1', WORKER_DELAY_MS: '2000000000' });
    try {
      await stopped.ready;
      const t1 = await submitTask(f.gw.url, t, { concurrency_key: key });
      const run = await waitFor('the handler runs', async () => stopped.lines.find((l) => l.ev === 'run' && l.task === t1.id), 10_000);
      const [a1] = await attemptsOf('task_id', t1.id);
      stopped.child.kill('SIGSTOP');
      const t2 = await submitTask(f.gw.url, t, { concurrency_key: key });
      const stallsBefore = await metric(f.gw.url, 'orbit_session_stalls_total');
      // The stopped worker renews nothing: its lease runs out (backdated instead of waited for).
      await backdateLeases(f.db.pool, [run.attempt]);
      await waitFor('the held attempt expires', async () => (await taskState(f.db.pool, t1.id)) === 'NEEDS_REVIEW', 5000);
      // The ping sent with the task.cancel stays unanswered past ORBIT_PONG_TIMEOUT_MS.
      await waitFor('a stall counted', async () => (await metric(f.gw.url, 'orbit_session_stalls_total')) > stallsBefore, 10_000);
      expect(await attemptsOf('task_id', t2.id)).toEqual([]);
      // A live worker gets the key's next task at once: attempt 1, not after a stopped attempt's lease.
      const live = await session(f.gw.url, t, { capacity: 1 });
      const a = await live.next('task.assign');
      expect(a).toMatchObject({ attempt_no: 1, task: { id: t2.id } });
      expect(BigInt(a.concurrency_token)).toBeGreaterThan(BigInt(run.token));
      expect((await attemptsOf('task_id', t2.id)).map((r) => r.session_id)).toEqual([live.ok.session_id]);
      // Nothing but its own attempt ever went to the stopped session, which is still open.
      expect((await attemptsOf('session_id', a1!.session_id)).map((r) => r.id)).toEqual([run.attempt]);
      const [sess] = await f.db.pool.query<RowDataPacket[]>('SELECT state FROM worker_sessions WHERE id = ?', [a1!.session_id]);
      expect(sess[0]!.state).toBe('OPEN');
      await startAndFinish(live, a.attempt_id);
      live.close();
      await live.closed;
      // Continued, it answers: the next task goes to it again.
      stopped.child.kill('SIGCONT');
      const t3 = await submitTask(f.gw.url, t);
      await waitFor('work for the answering worker', async () => (await attemptsOf('task_id', t3.id)).some((r) => r.session_id === a1!.session_id), 10_000);
    } finally {
      stopped.child.kill('SIGCONT');
      await stopped.kill9();
    }
    await assertPermitInvariants(f.db.pool);
  });
});
