// The task commands of docs/guarantees.md (:resolve of NEEDS_REVIEW, :cancel) against a real gateway
// process and a raw WebSocket worker; every state is checked through the HTTP API and in SQL, and
// the permit invariants are asserted after every test. Start, results, renew and the result stream:
// dispatch-transitions.test.ts.
import { describe, expect, it } from 'vitest';
import {
  apiAttempt,
  apiAttempts,
  cmd,
  connect,
  createQueue,
  expectEvents,
  expectNoFrame,
  type LeasedOptions,
  leasedTask,
  result,
  runningTask,
  sqlAttempt,
  sqlTask,
  start,
  submit,
  useDispatchFixture,
} from './support/dispatch-fixture.js';

const f = useDispatchFixture();

describe(':resolve', () => {
  async function inReview(opts: LeasedOptions = {}) {
    const x = await runningTask(f, opts);
    expect(await result(x.w, x.attemptId, 'unknown')).toMatchObject({ task_state: 'NEEDS_REVIEW' });
    return x;
  }

  it('succeeded → SUCCEEDED with events needs_review then succeeded', async () => {
    const { task } = await inReview();
    const r = await cmd(f, task.id, 'resolve', { resolution: 'succeeded', reason: 'checked upstream: applied' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ deduplicated: false, task: { state: 'SUCCEEDED', result: { outcome: 'succeeded' } } });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'SUCCEEDED', result_outcome: 'succeeded' });
    expect((await sqlTask(f, task.id)).finished_at).not.toBeNull();
    await expectEvents(f, task.id, ['task.needs_review', 'task.succeeded']);
  });

  it('failed → FAILED with events needs_review then failed', async () => {
    const { task } = await inReview();
    const r = await cmd(f, task.id, 'resolve', { resolution: 'failed', reason: 'not applied, give up' });
    expect(r.status).toBe(200);
    expect(r.body.data.task).toMatchObject({ state: 'FAILED', result: { outcome: 'failed' } });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'FAILED' });
    await expectEvents(f, task.id, ['task.needs_review', 'task.failed']);
  });

  it('retry → WAITING, then a new attempt with a larger token', async () => {
    const { w, task, assign } = await inReview({ hello: { concurrency_keys: true }, task: { concurrency_key: `obj/${Date.now()}` } });
    const r = await cmd(f, task.id, 'resolve', { resolution: 'retry', reason: 'not applied' });
    expect(r.status).toBe(200);
    expect(r.body.data.task).toMatchObject({ state: 'WAITING', result: null });
    const next = await w.next('task.assign');
    expect(next).toMatchObject({ attempt_no: 2, task: { id: task.id } });
    expect(BigInt(next.concurrency_token)).toBeGreaterThan(BigInt(assign.concurrency_token));
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'LEASED', current_attempt_id: next.attempt_id });
    await start(w, next.attempt_id);
    expect(await result(w, next.attempt_id, 'succeeded')).toMatchObject({ task_state: 'SUCCEEDED' });
    await expectEvents(f, task.id, ['task.needs_review', 'task.succeeded']);
    expect((await apiAttempts(f, task.id)).map((x) => x.state)).toEqual(['UNKNOWN', 'SUCCEEDED']);
  });

  it('in WAITING, LEASED, RUNNING or a terminal state → 409 STATE_CONFLICT, nothing changes', async () => {
    const q = await createQueue(f);
    const waiting = await submit(f, q.id);
    const res = await cmd(f, waiting.id, 'resolve', { resolution: 'succeeded' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('STATE_CONFLICT');

    const { w } = await connect(f, [q.id], { capacity: 1 });
    const a = await w.next('task.assign');
    expect((await cmd(f, waiting.id, 'resolve', { resolution: 'retry' })).body.error.code).toBe('STATE_CONFLICT');
    await start(w, a.attempt_id);
    expect((await cmd(f, waiting.id, 'resolve', { resolution: 'failed' })).body.error.code).toBe('STATE_CONFLICT');
    expect(await sqlTask(f, waiting.id)).toMatchObject({ state: 'RUNNING' });
    await result(w, a.attempt_id, 'succeeded');
    const done = await cmd(f, waiting.id, 'resolve', { resolution: 'failed' });
    expect(done.status).toBe(409);
    expect(done.body.error.code).toBe('STATE_CONFLICT');
    expect(await sqlTask(f, waiting.id)).toMatchObject({ state: 'SUCCEEDED' });
    await expectEvents(f, waiting.id, ['task.succeeded']);
  });
});

describe(':cancel', () => {
  it('WAITING → CANCELLED with one task.cancelled event', async () => {
    const q = await createQueue(f);
    const task = await submit(f, q.id);
    const r = await cmd(f, task.id, 'cancel', { reason: 'no longer needed' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ deduplicated: false, task: { state: 'CANCELLED', result: { outcome: 'cancelled' } } });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'CANCELLED', result_outcome: 'cancelled' });
    await expectEvents(f, task.id, ['task.cancelled']);
    // a worker arriving later never gets it
    const { w } = await connect(f, [q.id]);
    await expectNoFrame(w, 'task.assign', 500);
  });

  it('LEASED → attempt and task CANCELLED, the worker gets task.cancel; a later start or result → LEASE_LOST (not fatal)', async () => {
    const { w, task, attemptId } = await leasedTask(f, { hello: { capacity: 1 } });
    const r = await cmd(f, task.id, 'cancel', { reason: 'operator' });
    expect(r.status).toBe(200);
    expect(r.body.data.task.state).toBe('CANCELLED');
    expect(await w.next('task.cancel')).toEqual({ type: 'task.cancel', attempt_id: attemptId, reason: 'CANCELLED' });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'CANCELLED' });
    expect(await apiAttempt(f, attemptId)).toMatchObject({ state: 'CANCELLED' });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'CANCELLED', current_attempt_id: null });
    await expectEvents(f, task.id, ['task.cancelled']);

    w.send({ type: 'start', attempt_id: attemptId });
    expect(await w.next('error')).toMatchObject({ code: 'LEASE_LOST', attempt_id: attemptId, fatal: false });
    const late = await result(w, attemptId, 'succeeded', { output: { late: true } });
    expect(late).toMatchObject({ type: 'error', code: 'LEASE_LOST', attempt_id: attemptId, fatal: false });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'CANCELLED', result_outcome: 'cancelled' });
    await expectEvents(f, task.id, ['task.cancelled']);
    // the session stays open and its capacity was freed: it takes the next task
    const next = await submit(f, task.queue_id);
    expect((await w.next('task.assign')).task.id).toBe(next.id);
  });

  it('RUNNING or terminal → 409 STATE_CONFLICT', async () => {
    const { w, task, attemptId } = await runningTask(f);
    const r = await cmd(f, task.id, 'cancel', {});
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('STATE_CONFLICT');
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'RUNNING' });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'RUNNING' });
    await result(w, attemptId, 'succeeded');
    const r2 = await cmd(f, task.id, 'cancel', {});
    expect(r2.status).toBe(409);
    expect(r2.body.error.code).toBe('STATE_CONFLICT');
    await expectEvents(f, task.id, ['task.succeeded']);
  });

  it('a replay with the same Idempotency-Key → 200 deduplicated with the frozen response; nothing re-executed', async () => {
    const q = await createQueue(f);
    const task = await submit(f, q.id);
    const key = `cancel-${task.id}`;
    const first = await cmd(f, task.id, 'cancel', { reason: 'dup' }, key);
    expect(first.status).toBe(200);
    const again = await cmd(f, task.id, 'cancel', { reason: 'dup' }, key);
    expect(again.status).toBe(200);
    expect(again.body.data.deduplicated).toBe(true);
    expect(again.body.data.task).toEqual(first.body.data.task);
    await expectEvents(f, task.id, ['task.cancelled']);
    const other = await cmd(f, task.id, 'cancel', { reason: 'different' }, key);
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
  });
});
