// State transitions of docs/guarantees.md driven by a raw WebSocket worker (start, results, renew, the
// result stream) against a real gateway process; every state is checked through the HTTP API and in
// SQL, and the permit invariants are asserted after every test. The task commands (:resolve,
// :cancel): dispatch-task-commands.test.ts.
import { describe, expect, it } from 'vitest';
import {
  apiAttempt,
  apiAttempts,
  apiTask,
  cmd,
  connect,
  createQueue,
  dbMs,
  expectEvents,
  expectNoFrame,
  leasedTask,
  makeDue,
  result,
  runningTask,
  setCapacity,
  sqlAttempt,
  sqlEvents,
  sqlTask,
  start,
  submit,
  useDispatchFixture,
} from './support/dispatch-fixture.js';
import { waitFor } from './support/wait.js';

const f = useDispatchFixture();

describe('start', () => {
  it('LEASED → RUNNING: task RUNNING, attempts_made 1, lease renewed; a repeated start answers start.ok again', async () => {
    const { w, task, assign, attemptId } = await leasedTask(f);
    expect(assign.attempt_no).toBe(1);
    expect((await apiTask(f, task.id)).state).toBe('LEASED');
    expect((await sqlAttempt(f, attemptId)).state).toBe('LEASED');

    const ok = await start(w, attemptId);
    expect(ok).toEqual({ type: 'start.ok', attempt_id: attemptId, lease_expires_at: expect.any(String) });
    const api = await apiTask(f, task.id);
    expect(api).toMatchObject({ state: 'RUNNING', attempts_made: 1, result: null });
    const row = await sqlTask(f, task.id);
    expect(row).toMatchObject({ state: 'RUNNING', attempts_made: 1, attempts_created: 1, current_attempt_id: attemptId });
    const a = await sqlAttempt(f, attemptId);
    expect(a.state).toBe('RUNNING');
    expect(a.started_at).not.toBeNull();
    expect(new Date(ok.lease_expires_at).getTime()).toBe(dbMs(a.lease_expires_at));
    // start renews the lease to now + lease_seconds (5 s)
    expect(dbMs(a.lease_expires_at) - dbMs(a.started_at)).toBeGreaterThanOrEqual(4900);
    expect((await apiAttempt(f, attemptId)).state).toBe('RUNNING');

    const again = await start(w, attemptId);
    expect(again.attempt_id).toBe(attemptId);
    expect((await sqlTask(f, task.id)).attempts_made).toBe(1);
  });
  it('start or result from another worker identity → LEASE_LOST, an unknown attempt id → NOT_FOUND; none is fatal and nothing changes', async () => {
    const { w, q, task, assign, attemptId } = await leasedTask(f);
    const row = await sqlAttempt(f, attemptId);
    expect(new Date(assign.lease_expires_at).getTime()).toBe(dbMs(row.lease_expires_at));
    expect(dbMs(row.lease_expires_at) - dbMs(row.leased_at)).toBe(5000);
    const other = await connect(f, [q.id], { capacity: 0 });
    other.w.send({ type: 'start', attempt_id: attemptId });
    expect(await other.w.next('error')).toMatchObject({ code: 'LEASE_LOST', attempt_id: attemptId, fatal: false });
    expect(await result(other.w, attemptId, 'succeeded')).toMatchObject({ type: 'error', code: 'LEASE_LOST', fatal: false });
    const ghost = '0'.repeat(31) + '1';
    expect(await result(other.w, ghost, 'succeeded')).toMatchObject({ type: 'error', code: 'NOT_FOUND', attempt_id: ghost, fatal: false });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'LEASED', lease_expires_at: row.lease_expires_at });
    expect((await sqlTask(f, task.id)).state).toBe('LEASED');
    // the owner still can, and a result straight from LEASED is accepted
    expect(await result(w, attemptId, 'succeeded')).toMatchObject({ type: 'result.ok', task_state: 'SUCCEEDED' });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'SUCCEEDED' });
    await expectEvents(f, task.id, ['task.succeeded']);
  });
});

describe('results', () => {
  it('succeeded → attempt and task SUCCEEDED with the output, one task.succeeded event', async () => {
    const { w, task, attemptId } = await runningTask(f);
    const r = await result(w, attemptId, 'succeeded', { output: { v: 42 } });
    expect(r).toEqual({ type: 'result.ok', attempt_id: attemptId, deduplicated: false, task_state: 'SUCCEEDED' });
    const api = await apiTask(f, task.id);
    expect(api).toMatchObject({ state: 'SUCCEEDED', attempts_made: 1, result: { outcome: 'succeeded', output: { v: 42 } } });
    expect(api.finished_at).not.toBeNull();
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'SUCCEEDED', current_attempt_id: null, result_outcome: 'succeeded' });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'SUCCEEDED', outcome: 'succeeded' });
    await expectEvents(f, task.id, ['task.succeeded']);
    expect((await sqlEvents(f, task.id))[0]!.result).toEqual({ outcome: 'succeeded', output: { v: 42 } });
  });

  it('failed → attempt and task FAILED with the error, one task.failed event', async () => {
    const { w, task, attemptId } = await runningTask(f);
    const r = await result(w, attemptId, 'failed', { error: { code: 'BAD_INPUT', message: 'no such object' } });
    expect(r).toMatchObject({ type: 'result.ok', task_state: 'FAILED', deduplicated: false });
    const api = await apiTask(f, task.id);
    expect(api).toMatchObject({ state: 'FAILED', result: { outcome: 'failed', error: { code: 'BAD_INPUT', message: 'no such object' } } });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'FAILED', error_code: 'BAD_INPUT' });
    expect((await apiAttempts(f, task.id))[0]).toMatchObject({ state: 'FAILED', outcome: 'failed', error: { code: 'BAD_INPUT' } });
    await expectEvents(f, task.id, ['task.failed']);
  });

  it('retry with retry_after_ms → attempt RETRY, task WAITING with not_before = now + retry_after_ms; reassigned once due as attempt 2', async () => {
    const { w, task, attemptId } = await runningTask(f, { task: { max_attempts: 3 } });
    const r = await result(w, attemptId, 'retry', { error: { code: 'UPSTREAM_503', message: 'busy' }, retry_after_ms: 30_000 });
    expect(r).toMatchObject({ type: 'result.ok', task_state: 'WAITING' });
    const a = await sqlAttempt(f, attemptId);
    expect(a.state).toBe('RETRY');
    const row = await sqlTask(f, task.id);
    expect(row).toMatchObject({ state: 'WAITING', attempts_made: 1, current_attempt_id: null });
    const delta = dbMs(row.not_before) - dbMs(a.finished_at);
    // not_before is computed after finished_at in the same transaction: never earlier
    expect(delta).toBeGreaterThanOrEqual(30_000);
    expect(delta).toBeLessThanOrEqual(30_500);
    expect(Number(row.not_before_in_ms)).toBeGreaterThan(25_000);
    const api = await apiTask(f, task.id);
    expect(api).toMatchObject({ state: 'WAITING', attempts_made: 1, result: null });
    expect(new Date(api.not_before!).getTime()).toBe(dbMs(row.not_before));
    expect(await sqlEvents(f, task.id)).toEqual([]);
    await expectNoFrame(w, 'task.assign');

    await makeDue(f, task.id);
    const again = await w.next('task.assign');
    expect(again).toMatchObject({ attempt_no: 2, task: { id: task.id } });
    expect(again.attempt_id).not.toBe(attemptId);
    await start(w, again.attempt_id);
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'RUNNING', attempts_made: 2, attempts_created: 2 });
    expect(await result(w, again.attempt_id, 'succeeded')).toMatchObject({ task_state: 'SUCCEEDED' });
    expect((await apiAttempts(f, task.id)).map((x) => [x.attempt_no, x.state])).toEqual([
      [1, 'RETRY'],
      [2, 'SUCCEEDED'],
    ]);
    await expectEvents(f, task.id, ['task.succeeded']);
  });

  it('retry without retry_after_ms uses the queue policy: initial × multiplier^(n−1) ± 20 % jitter', async () => {
    const { w, task, attemptId } = await runningTask(f, {
      queue: { retry: { max_attempts: 5, initial_backoff_ms: 60_000, max_backoff_ms: 600_000, multiplier: 3 } },
    });
    expect(task.max_attempts).toBe(5);
    expect(await result(w, attemptId, 'retry', { error: { code: 'E', message: 'x' } })).toMatchObject({ task_state: 'WAITING' });
    let row = await sqlTask(f, task.id);
    let delta = dbMs(row.not_before) - dbMs((await sqlAttempt(f, attemptId)).finished_at);
    expect(delta).toBeGreaterThanOrEqual(48_000);
    expect(delta).toBeLessThanOrEqual(72_000 + 500);

    await makeDue(f, task.id);
    const second = await w.next('task.assign');
    expect(second.attempt_no).toBe(2);
    await start(w, second.attempt_id);
    expect(await result(w, second.attempt_id, 'retry')).toMatchObject({ task_state: 'WAITING' });
    row = await sqlTask(f, task.id);
    delta = dbMs(row.not_before) - dbMs((await sqlAttempt(f, second.attempt_id)).finished_at);
    expect(delta).toBeGreaterThanOrEqual(144_000);
    expect(delta).toBeLessThanOrEqual(216_000 + 500);
    expect(row.attempts_made).toBe(2);
    await cmd(f, task.id, 'cancel', {}); // leave nothing waiting
  });

  it('retry when attempts_made = max_attempts → task FAILED (attempt RETRY), one task.failed event', async () => {
    const { w, task, attemptId } = await runningTask(f, { task: { max_attempts: 2 } });
    expect(await result(w, attemptId, 'retry', { retry_after_ms: 0 })).toMatchObject({ task_state: 'WAITING' });
    const second = await w.next('task.assign');
    expect(second.attempt_no).toBe(2);
    await start(w, second.attempt_id);
    const r = await result(w, second.attempt_id, 'retry', { error: { code: 'UPSTREAM_503', message: 'still busy' }, retry_after_ms: 0 });
    expect(r).toMatchObject({ type: 'result.ok', task_state: 'FAILED' });
    expect(await sqlAttempt(f, second.attempt_id)).toMatchObject({ state: 'RETRY' });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'FAILED', attempts_made: 2, result_outcome: 'failed' });
    expect(await apiTask(f, task.id)).toMatchObject({ state: 'FAILED', result: { outcome: 'failed', error: { code: 'UPSTREAM_503' } } });
    await expectEvents(f, task.id, ['task.failed']);
    await expectNoFrame(w, 'task.assign');
  });

  it('retry whose backoff would pass the deadline → task FAILED', async () => {
    const { w, task, attemptId } = await runningTask(f, { task: { deadline_seconds: 20, max_attempts: 5 } });
    const r = await result(w, attemptId, 'retry', { retry_after_ms: 60_000 });
    expect(r).toMatchObject({ task_state: 'FAILED' });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'RETRY' });
    expect(await apiTask(f, task.id)).toMatchObject({ state: 'FAILED', attempts_made: 1, result: { outcome: 'failed' } });
    await expectEvents(f, task.id, ['task.failed']);
  });

  it('unknown → attempt UNKNOWN, task NEEDS_REVIEW with result outcome unknown, one task.needs_review event', async () => {
    const { w, task, attemptId } = await runningTask(f);
    const r = await result(w, attemptId, 'unknown', { error: { code: 'TIMEOUT', message: 'no answer from upstream' } });
    expect(r).toMatchObject({ task_state: 'NEEDS_REVIEW' });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'UNKNOWN', outcome: 'unknown' });
    const api = await apiTask(f, task.id);
    expect(api).toMatchObject({ state: 'NEEDS_REVIEW', finished_at: null, result: { outcome: 'unknown', error: { code: 'TIMEOUT' } } });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'NEEDS_REVIEW', current_attempt_id: null });
    await expectEvents(f, task.id, ['task.needs_review']);
    expect((await sqlEvents(f, task.id))[0]!.result).toMatchObject({ outcome: 'unknown' });
    await expectNoFrame(w, 'task.assign', 300);
    expect(await cmd(f, task.id, 'resolve', { resolution: 'failed' })).toMatchObject({ status: 200 });
    // The lifecycle table's resolve-failed error, with the default message when no reason is given.
    const resolved = { outcome: 'failed', error: { code: 'RESOLVED', message: 'resolved as failed' } };
    expect(await apiTask(f, task.id)).toMatchObject({ state: 'FAILED', result: resolved });
  });
});

describe('renew', () => {
  it('extends lease_expires_at of live attempts; expired, foreign and unknown ids come back in lost', async () => {
    const q = await createQueue(f);
    const a = await connect(f, [q.id], { capacity: 2 });
    const b = await connect(f, [q.id], { capacity: 1 });
    await setCapacity(b.w, 0);
    const t1 = await submit(f, q.id);
    const t2 = await submit(f, q.id);
    const x1 = await a.w.next('task.assign');
    const x2 = await a.w.next('task.assign');
    expect(new Set([x1.task.id, x2.task.id])).toEqual(new Set([t1.id, t2.id]));
    await start(a.w, x1.attempt_id);
    // pull x1's lease in to 2 s from now, expire x2's
    await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL 2 SECOND WHERE id = ?', [x1.attempt_id]);
    await f.db.pool.query('UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) - INTERVAL 10000 MICROSECOND WHERE id = ?', [x2.attempt_id]);
    const unknown = 'f'.repeat(32);
    const dbClock = async () => dbMs(((await f.db.pool.query('SELECT UTC_TIMESTAMP(3) AS now')) as any)[0][0].now);
    const sentAt = await dbClock();
    a.w.send({ type: 'renew', attempt_ids: [x1.attempt_id, x2.attempt_id, unknown] });
    const ok = await a.w.next('renew.ok');
    const repliedAt = await dbClock();
    expect(ok.leases).toHaveLength(1);
    expect(ok.leases[0].attempt_id).toBe(x1.attempt_id);
    expect(new Set(ok.lost)).toEqual(new Set([x2.attempt_id, unknown]));
    const row = await sqlAttempt(f, x1.attempt_id);
    expect(new Date(ok.leases[0].lease_expires_at).getTime()).toBe(dbMs(row.lease_expires_at));
    // The lease is the queue's 5 s from the renew's database time: between the database clock
    // read just before the frame was sent and the one just after its reply.
    expect(dbMs(row.lease_expires_at)).toBeGreaterThanOrEqual(sentAt + 5000);
    expect(dbMs(row.lease_expires_at)).toBeLessThanOrEqual(repliedAt + 5000);
    expect(row.state).toBe('RUNNING');

    // another worker identity renewing a's attempt: lost, and a's lease is untouched
    b.w.send({ type: 'renew', attempt_ids: [x1.attempt_id] });
    expect(await b.w.next('renew.ok')).toEqual({ type: 'renew.ok', leases: [], lost: [x1.attempt_id] });
    expect((await sqlAttempt(f, x1.attempt_id)).lease_expires_at).toBe(row.lease_expires_at);
    // the sweeper then expires x2 (LEASED); the task is assigned again (a's capacity was freed)
    await waitFor('x2 EXPIRED', async () => (await sqlAttempt(f, x2.attempt_id)).state === 'EXPIRED');
    const again = await a.w.next('task.assign');
    expect(again).toMatchObject({ attempt_no: 2, task: { id: x2.task.id } });
    await result(a.w, x1.attempt_id, 'succeeded');
    await result(a.w, again.attempt_id, 'succeeded');
  });
});

describe('result stream', () => {
  it('each terminal transition and NEEDS_REVIEW appends exactly one event; sequences strictly increase; the head is the highest', async () => {
    // This test's events are its queue's: an attempt left by an earlier test of the file may expire
    // meanwhile and append its own event to the namespace's stream (seen: a task.needs_review).
    const q = await createQueue(f);
    const { w } = await connect(f, [q.id], { capacity: 1 });
    const tasks = [];
    for (const outcome of ['succeeded', 'failed', 'unknown', 'retry']) {
      const task = await submit(f, q.id, { max_attempts: 1 });
      const a = await w.next('task.assign');
      await start(w, a.attempt_id);
      await result(w, a.attempt_id, outcome);
      tasks.push(task.id);
    }
    const cancelled = await submit(f, q.id, { not_before: new Date(Date.now() + 3600_000).toISOString() });
    await cmd(f, cancelled.id, 'cancel', {});
    await cmd(f, tasks[2]!, 'resolve', { resolution: 'succeeded' });
    const [rows] = (await f.db.pool.query('SELECT sequence, type, task_id FROM result_events WHERE namespace_id = ? AND queue_id = ? ORDER BY sequence', [
      f.t.namespace_id,
      q.id,
    ])) as any;
    expect(rows.map((r: any) => [r.task_id, r.type])).toEqual([
      [tasks[0], 'task.succeeded'],
      [tasks[1], 'task.failed'],
      [tasks[2], 'task.needs_review'],
      [tasks[3], 'task.failed'],
      [cancelled.id, 'task.cancelled'],
      [tasks[2], 'task.succeeded'],
    ]);
    const seqs = rows.map((r: any) => BigInt(r.sequence));
    for (let i = 1; i < seqs.length; i++) expect(seqs[i] > seqs[i - 1]).toBe(true);
    // The head is the namespace's highest sequence (one statement: one snapshot of both).
    const [[head]] = (await f.db.pool.query(
      'SELECT (SELECT last_sequence FROM stream_heads WHERE namespace_id = ?) AS last_sequence, (SELECT MAX(sequence) FROM result_events WHERE namespace_id = ?) AS top',
      [f.t.namespace_id, f.t.namespace_id],
    )) as any;
    expect(BigInt(head.last_sequence)).toBe(BigInt(head.top));
    expect(BigInt(head.last_sequence) >= seqs[seqs.length - 1]!).toBe(true);
    // sanity: the HTTP view of the reviewed task matches its last event
    expect((await apiTask(f, tasks[2]!)).state).toBe('SUCCEEDED');
  });
});
