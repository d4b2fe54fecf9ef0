// Recovery transitions of docs/guarantees.md and docs/worker-protocol.md against a real gateway process: the
// sweeper (lease expiry, deadlines; it runs every 500 ms in each gateway, leases are moved into the
// past in SQL), late results, reconnect with resume (and a hello whose credential was revoked),
// superseded sessions, and the lock order of a cancel racing a result. The permit invariants are
// asserted after every test.
import { beforeAll, describe, expect, it } from 'vitest';
import { openRaw } from './support/raw-worker.js';
import { assertPermitInvariants } from './support/invariants.js';
import { startGateway, type GatewayProcess } from './support/gateway.js';
import {
  apiAttempt,
  apiTask,
  cmd,
  connect,
  createQueue,
  expectEvents,
  expectNoFrame,
  expireDeadline,
  expireLease,
  result,
  setCapacity,
  sqlAttempt,
  sqlAttempts,
  sqlTask,
  start,
  submit,
  waitTaskState,
  useDispatchFixture,
} from './support/dispatch-fixture.js';
import { hello } from './support/raw-worker.js';
import { protocolHelpers } from './support/worker-protocol-fixture.js';
import { revokeCredential } from '../server/db/credentials.js';
import { metric } from './support/keys-helpers.js';
import { waitFor } from './support/wait.js';

const f = useDispatchFixture();

async function leased(opts: { task?: Record<string, unknown>; hello?: Record<string, unknown> } = {}) {
  const q = await createQueue(f);
  const { w, workerId } = await connect(f, [q.id], { capacity: 1, ...opts.hello });
  const task = await submit(f, q.id, opts.task);
  const assign = await w.next('task.assign');
  expect(assign.task.id).toBe(task.id);
  return { q, w, workerId, task, assign, attemptId: assign.attempt_id as string };
}

async function keyRow(namespaceId: string, key: string) {
  const [rows] = (await f.db.pool.query('SELECT highest_token, holder_attempt_id FROM resource_keys WHERE namespace_id = ? AND concurrency_key = ?', [
    namespaceId,
    Buffer.from(key, 'utf8'),
  ])) as any;
  return rows[0];
}

describe('sweeper: lease expiry', () => {
  it('LEASED past its lease → attempt EXPIRED, task WAITING (attempts_made unchanged), task.cancel LEASE_EXPIRED, reassigned as attempt 2', async () => {
    const { w, task, attemptId } = await leased();
    await setCapacity(w, 0); // hold the task in WAITING long enough to look at it
    await expireLease(f, attemptId);
    expect(await w.next('task.cancel', 5000)).toEqual({ type: 'task.cancel', attempt_id: attemptId, reason: 'LEASE_EXPIRED' });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'EXPIRED', error_code: 'LEASE_EXPIRED' });
    expect(await apiAttempt(f, attemptId)).toMatchObject({ state: 'EXPIRED' });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'WAITING', attempts_made: 0, attempts_created: 1, current_attempt_id: null });
    expect(await apiTask(f, task.id)).toMatchObject({ state: 'WAITING', attempts_made: 0, result: null });
    await expectEvents(f, task.id, []);

    await setCapacity(w, 1);
    const again = await w.next('task.assign');
    expect(again).toMatchObject({ attempt_no: 2, task: { id: task.id } });
    await start(w, again.attempt_id);
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'RUNNING', attempts_made: 1 });
    expect(await result(w, again.attempt_id, 'succeeded')).toMatchObject({ task_state: 'SUCCEEDED' });
  });

  it('RUNNING past its lease → attempt UNKNOWN, task NEEDS_REVIEW with one task.needs_review event', async () => {
    const { w, task, attemptId } = await leased();
    await start(w, attemptId);
    await expireLease(f, attemptId);
    await waitTaskState(f, task.id, 'NEEDS_REVIEW');
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'UNKNOWN', outcome: 'unknown' });
    expect(await apiTask(f, task.id)).toMatchObject({ state: 'NEEDS_REVIEW', attempts_made: 1, result: { outcome: 'unknown' } });
    await expectEvents(f, task.id, ['task.needs_review']);
    // the late result changes nothing
    const late = await result(w, attemptId, 'succeeded');
    expect(late).toMatchObject({ type: 'error', code: 'LEASE_LOST', attempt_id: attemptId, fatal: false });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'NEEDS_REVIEW' });
    await expectEvents(f, task.id, ['task.needs_review']);
    await cmd(f, task.id, 'resolve', { resolution: 'failed' });
  });

  it('a late result after expiry → LEASE_LOST and nothing changes; the key stays with the next attempt', async () => {
    const key = `late/${Date.now()}`;
    const { w, task, attemptId, assign } = await leased({ hello: { concurrency_keys: true }, task: { concurrency_key: key } });
    await expireLease(f, attemptId);
    await w.next('task.cancel', 5000);
    const again = await w.next('task.assign');
    expect(again.attempt_no).toBe(2);
    expect(BigInt(again.concurrency_token)).toBeGreaterThan(BigInt(assign.concurrency_token));
    const taskBefore = await sqlTask(f, task.id);
    const keyBefore = await keyRow(f.t.namespace_id, key);
    expect(keyBefore.holder_attempt_id).toBe(again.attempt_id);

    for (const outcome of ['succeeded', 'failed', 'retry', 'unknown']) {
      const late = await result(w, attemptId, outcome);
      expect(late).toMatchObject({ type: 'error', code: 'LEASE_LOST', attempt_id: attemptId, fatal: false });
    }
    w.send({ type: 'start', attempt_id: attemptId });
    expect(await w.next('error')).toMatchObject({ code: 'LEASE_LOST', attempt_id: attemptId });
    const { not_before_in_ms: _a, ...tb } = taskBefore;
    const { not_before_in_ms: _b, ...ta } = await sqlTask(f, task.id);
    expect(ta).toEqual(tb);
    expect(await keyRow(f.t.namespace_id, key)).toEqual(keyBefore);
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'EXPIRED', result_fingerprint: null });
    await expectEvents(f, task.id, []);
    await start(w, again.attempt_id);
    expect(await result(w, again.attempt_id, 'succeeded')).toMatchObject({ task_state: 'SUCCEEDED' });
    expect((await keyRow(f.t.namespace_id, key)).holder_attempt_id).toBeNull();
  });
});

describe('sweeper: deadlines', () => {
  it('WAITING past its deadline → DEADLINE_EXCEEDED with result outcome deadline_exceeded and one event', async () => {
    const q = await createQueue(f);
    const task = await submit(f, q.id);
    await expireDeadline(f, task.id);
    await waitTaskState(f, task.id, 'DEADLINE_EXCEEDED');
    const api = await apiTask(f, task.id);
    expect(api).toMatchObject({ state: 'DEADLINE_EXCEEDED', result: { outcome: 'deadline_exceeded' } });
    expect(api.finished_at).not.toBeNull();
    await expectEvents(f, task.id, ['task.deadline_exceeded']);
    const { w } = await connect(f, [q.id]);
    await expectNoFrame(w, 'task.assign', 400);
  });

  it('LEASED attempt of a task past its deadline → attempt CANCELLED, task DEADLINE_EXCEEDED, task.cancel DEADLINE_EXCEEDED', async () => {
    const { w, task, attemptId } = await leased();
    await expireDeadline(f, task.id);
    expect(await w.next('task.cancel', 5000)).toEqual({ type: 'task.cancel', attempt_id: attemptId, reason: 'DEADLINE_EXCEEDED' });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'CANCELLED', error_code: 'DEADLINE_EXCEEDED' });
    expect(await apiTask(f, task.id)).toMatchObject({ state: 'DEADLINE_EXCEEDED', result: { outcome: 'deadline_exceeded' } });
    await expectEvents(f, task.id, ['task.deadline_exceeded']);
    expect(await result(w, attemptId, 'succeeded')).toMatchObject({ type: 'error', code: 'LEASE_LOST' });
  });

  it('a RUNNING attempt past the task deadline may finish, but a retry after it fails the task', async () => {
    const { w, task, attemptId } = await leased({ task: { max_attempts: 5 } });
    await start(w, attemptId);
    await expireDeadline(f, task.id);
    await expectNoFrame(w, 'task.cancel', 1200); // two sweeper ticks
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'RUNNING' });
    expect(await result(w, attemptId, 'retry', { retry_after_ms: 0 })).toMatchObject({ task_state: 'FAILED' });
    await expectEvents(f, task.id, ['task.failed']);
  });
});

describe('reconnect and resume', () => {
  it('resume [attempt] → hello.ok.resumed has the same attempt id, state and token; a result on the new session is accepted', async () => {
    const key = `resume/${Date.now()}`;
    const { w, workerId, task, attemptId, assign } = await leased({ hello: { concurrency_keys: true }, task: { concurrency_key: key } });
    await start(w, attemptId);
    const before = await sqlAttempt(f, attemptId);
    w.close();
    await w.closed;
    await new Promise((r) => setTimeout(r, 50));
    const { w: w2, ok } = await connect(f, [task.queue_id], { worker_id: workerId, concurrency_keys: true, capacity: 1, resume: [attemptId] });
    expect(ok.lost).toEqual([]);
    expect(ok).toMatchObject({ worker_id: workerId, lease_ms: 5000 });
    expect(ok.resumed).toEqual([
      { attempt_id: attemptId, state: 'RUNNING', lease_expires_at: expect.any(String), concurrency_token: assign.concurrency_token },
    ]);
    const after = await sqlAttempt(f, attemptId);
    expect(after).toMatchObject({ state: 'RUNNING', session_id: ok.session_id, concurrency_token: before.concurrency_token });
    expect(new Date(ok.resumed[0].lease_expires_at).getTime()).toBeGreaterThanOrEqual(new Date(before.lease_expires_at.replace(' ', 'T') + 'Z').getTime());
    // resumed attempts count against capacity: nothing more is assigned to a capacity-1 session
    await submit(f, task.queue_id);
    await expectNoFrame(w2, 'task.assign', 500);
    const r = await result(w2, attemptId, 'succeeded', { output: { via: 'resume' } });
    expect(r).toEqual({ type: 'result.ok', attempt_id: attemptId, deduplicated: false, task_state: 'SUCCEEDED' });
    expect(await apiTask(f, task.id)).toMatchObject({ state: 'SUCCEEDED', result: { output: { via: 'resume' } } });
    expect((await w2.next('task.assign')).attempt_no).toBe(1);
  });

  it('a result sent on the old session is deduplicated when sent again on the new one', async () => {
    const { w, workerId, task, attemptId } = await leased();
    await start(w, attemptId);
    expect(await result(w, attemptId, 'succeeded', { output: { n: 1 } })).toMatchObject({ deduplicated: false });
    w.close();
    await w.closed;
    const { w: w2, ok } = await connect(f, [task.queue_id], { worker_id: workerId, capacity: 1, resume: [attemptId] });
    expect(ok).toMatchObject({ resumed: [], lost: [attemptId] });
    expect(await result(w2, attemptId, 'succeeded', { output: { n: 1 } })).toMatchObject({ type: 'result.ok', deduplicated: true, task_state: 'SUCCEEDED' });
    await expectEvents(f, task.id, ['task.succeeded']);
  });

  it('unlisted LEASED attempts are released at once (EXPIRED, task WAITING); unlisted RUNNING ones keep their lease; listed-but-expired and unknown ids go to lost', async () => {
    const q = await createQueue(f);
    const { w, workerId } = await connect(f, [q.id], { capacity: 3 });
    const tasks = [await submit(f, q.id), await submit(f, q.id), await submit(f, q.id)];
    const byTask = new Map<string, string>();
    for (let i = 0; i < 3; i++) {
      const a = await w.next('task.assign');
      byTask.set(a.task.id, a.attempt_id);
    }
    const [leasedT, runningT, expiredT] = tasks.map((t) => t.id) as [string, string, string];
    await start(w, byTask.get(runningT)!);
    w.close();
    await w.closed;
    // the third lease ran out; reconnect before the sweeper may see it (either way it is lost)
    await expireLease(f, byTask.get(expiredT)!);
    const ghost = 'a'.repeat(32);
    const { w: w2, ok } = await connect(f, [q.id], { worker_id: workerId, capacity: 0, resume: [byTask.get(expiredT)!, ghost] });
    expect(ok.resumed).toEqual([]);
    expect(new Set(ok.lost)).toEqual(new Set([byTask.get(expiredT), ghost]));
    // released at once, in the hello transaction
    expect(await sqlAttempt(f, byTask.get(leasedT)!)).toMatchObject({ state: 'EXPIRED' });
    expect(await sqlTask(f, leasedT)).toMatchObject({ state: 'WAITING', attempts_made: 0, current_attempt_id: null });
    expect(await sqlAttempt(f, byTask.get(runningT)!)).toMatchObject({ state: 'RUNNING' });
    expect(await sqlTask(f, runningT)).toMatchObject({ state: 'RUNNING' });
    await waitFor('expired attempt swept', async () => (await sqlAttempt(f, byTask.get(expiredT)!)).state === 'EXPIRED');
    // the running one runs out its lease and goes to review
    await expireLease(f, byTask.get(runningT)!);
    await waitTaskState(f, runningT, 'NEEDS_REVIEW');
    await expectEvents(f, runningT, ['task.needs_review']);
    await setCapacity(w2, 2);
    const got = new Set([(await w2.next('task.assign')).task.id, (await w2.next('task.assign')).task.id]);
    expect(got).toEqual(new Set([leasedT, expiredT]));
    await cmd(f, runningT, 'resolve', { resolution: 'succeeded' });
  });

  it('a hello whose credential was revoked after the upgrade is refused in its transaction: nothing rebound or released', async () => {
    const q = await createQueue(f);
    const c = await protocolHelpers(() => f).credential(f.t, ['workers:connect', 'workers:consume']);
    const tenant = { ...f.t, token: c.token };
    const { w, workerId } = await connect(f, [q.id], { capacity: 2 }, tenant);
    await submit(f, q.id);
    await submit(f, q.id);
    const [running, leasedA] = [(await w.next('task.assign')).attempt_id as string, (await w.next('task.assign')).attempt_id as string];
    await start(w, running);
    w.close();
    await w.closed;
    const rowsOf = () => Promise.all([running, leasedA].map((id) => sqlAttempt(f, id)));
    const before = await rowsOf();
    // The upgrade authenticates; the revocation commits before the hello frame is sent.
    const w2 = await openRaw(f.gw.url, c.token);
    f.workers.push(w2);
    expect(await revokeCredential(f.db.pool, c.id)).toBe(true);
    w2.send(hello([q.id], { worker_id: workerId, capacity: 2, resume: [running] }));
    expect(await w2.next('error')).toMatchObject({ code: 'UNAUTHENTICATED', fatal: true });
    expect((await w2.closed).code).toBe(1008);
    // Not rebound (the resumed one), not released (the unlisted LEASED one), no session row.
    expect(await rowsOf()).toEqual(before);
    const [rows] = (await f.db.pool.query('SELECT COUNT(*) AS n FROM worker_sessions WHERE worker_id = ?', [workerId])) as any;
    expect(Number(rows[0].n)).toBe(1);
    for (const id of [running, leasedA]) await expireLease(f, id);
    await waitFor('both swept', async () => (await rowsOf()).every((a) => a.state !== 'RUNNING' && a.state !== 'LEASED'));
  });

  it('a second session of the same worker_id closes the first with 4409 (STATE_CONFLICT, fatal) and takes over its attempts', async () => {
    const { w, workerId, task, attemptId, assign } = await leased();
    const { w: w2, ok } = await connect(f, [task.queue_id], { worker_id: workerId, capacity: 1, resume: [attemptId] });
    expect(ok.resumed).toEqual([{ attempt_id: attemptId, state: 'LEASED', lease_expires_at: expect.any(String) }]);
    expect(await w.next('error')).toMatchObject({ type: 'error', code: 'STATE_CONFLICT', fatal: true });
    expect((await w.closed).code).toBe(4409);
    expect(assign.attempt_id).toBe(attemptId);
    await start(w2, attemptId);
    expect(await result(w2, attemptId, 'succeeded')).toMatchObject({ task_state: 'SUCCEEDED' });
    expect(await sqlAttempts(f, task.id)).toHaveLength(1);
  });

  it('a first hello that is superseded before it sent anything else still receives the error before 4409', async () => {
    const q = await createQueue(f);
    const w = await openRaw(f.gw.url, f.t.token);
    f.workers.push(w);
    const workerId = `dup-${Date.now()}`;
    w.send({ type: 'hello', protocol: 1, worker_id: workerId, queues: [q.id], capacity: 1 });
    await w.next('hello.ok');
    const { ok } = await connect(f, [q.id], { worker_id: workerId, capacity: 1 });
    expect(ok.resumed).toEqual([]);
    const closed = await w.closed;
    expect(closed.code).toBe(4409);
    expect(w.frames.find((x) => x.type === 'error')).toMatchObject({ code: 'STATE_CONFLICT', fatal: true });
  });
});

describe('lock order', () => {
  it('a cancel and a result of one LEASED attempt, both queued behind its task row, do not deadlock: the cancel wins, nothing is retried', async () => {
    const { w, task, attemptId } = await leased();
    const retries = () => metric(f.gw.url, 'orbit_db_transaction_retries_total');
    const before = await retries();
    // Locking statements of the gateway's connections that have waited for a while (a claim's or a
    // sweep's SKIP LOCKED read never waits), by text: the cancel's `FROM tasks … FOR UPDATE`, the
    // result's `FROM attempts a JOIN tasks t … FOR UPDATE` (CONCAT: this query must not match itself).
    const waiting = async (from: string) => {
      const [rows] = (await f.db.pool.query(
        `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST
          WHERE DB = ? AND COMMAND IN ('Query', 'Execute') AND TIME_MS > 100 AND INFO LIKE CONCAT('%FROM ', ?, '%FOR ', 'UPDATE%')`,
        [f.db.name, from],
      )) as any;
      return Number(rows[0].n);
    };
    // A third transaction holds the task row, so both commands reach their second lock while the
    // other one holds its first: locking task → attempt against attempt → task then deadlocks.
    const x = await f.db.pool.getConnection();
    let cancelled: any;
    try {
      await x.query('START TRANSACTION');
      await x.query('SELECT id FROM tasks WHERE id = ? FOR UPDATE', [task.id]);
      const cancel = cmd(f, task.id, 'cancel', { reason: 'race' });
      await waitFor('the cancel waits', async () => (await waiting('tasks WHERE')) === 1);
      w.send({ type: 'result', attempt_id: attemptId, outcome: 'succeeded' });
      await waitFor('the result waits too', async () => (await waiting('attempts a JOIN tasks t')) === 1);
      await x.query('COMMIT');
      cancelled = await cancel;
    } finally {
      await x.query('ROLLBACK');
      x.release();
    }
    // No deadlock was rolled back and retried behind the callers' backs.
    expect((await retries()) - before).toBe(0);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(await w.next('error')).toMatchObject({ code: 'LEASE_LOST', attempt_id: attemptId, fatal: false });
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'CANCELLED' });
    expect(await sqlAttempt(f, attemptId)).toMatchObject({ state: 'CANCELLED' });
  });
});

describe('duplicates never release twice', () => {
  it('a replayed retry result of attempt 1 is deduplicated and leaves attempt 2 its key and permits', async () => {
    const key = `dup/${Date.now()}`;
    const { w, q, task, attemptId } = await leased({ hello: { concurrency_keys: true, capacity: 2 }, task: { concurrency_key: key, max_attempts: 3 } });
    await start(w, attemptId);
    const frame = { error: { code: 'E', message: 'again' }, retry_after_ms: 0 };
    expect(await result(w, attemptId, 'retry', frame)).toMatchObject({ deduplicated: false, task_state: 'WAITING' });
    const second = await w.next('task.assign');
    expect(second.attempt_no).toBe(2);
    await start(w, second.attempt_id);
    const replay = await result(w, attemptId, 'retry', frame);
    expect(replay).toEqual({ type: 'result.ok', attempt_id: attemptId, deduplicated: true, task_state: 'WAITING' });
    expect((await keyRow(f.t.namespace_id, key)).holder_attempt_id).toBe(second.attempt_id);
    const [[qrow]] = (await f.db.pool.query('SELECT active_attempts FROM queues WHERE id = ?', [q.id])) as any;
    expect(qrow.active_attempts).toBe(1);
    expect(await sqlTask(f, task.id)).toMatchObject({ state: 'RUNNING', current_attempt_id: second.attempt_id, attempts_made: 2 });
    await assertPermitInvariants(f.db.pool);
    // a different result for the finished attempt 1 is a conflict, not a release
    expect(await result(w, attemptId, 'succeeded')).toMatchObject({ type: 'error', code: 'STATE_CONFLICT', fatal: false });
    expect((await keyRow(f.t.namespace_id, key)).holder_attempt_id).toBe(second.attempt_id);
    expect(await result(w, second.attempt_id, 'succeeded')).toMatchObject({ task_state: 'SUCCEEDED' });
  });
});

describe('several gateway nodes', () => {
  let b: GatewayProcess;
  beforeAll(async () => {
    b = await startGateway(f.db.dsn);
  });

  it('a cancel through node A reaches the worker connected to node B (task.cancel CANCELLED)', async () => {
    const q = await createQueue(f);
    const w = await openRaw(b.url, f.t.token);
    f.workers.push(w);
    w.send({ type: 'hello', protocol: 1, worker_id: `nodeb-${Date.now()}`, queues: [q.id], capacity: 1 });
    await w.next('hello.ok');
    const task = await submit(f, q.id);
    const a = await w.next('task.assign', 3000);
    expect((await cmd(f, task.id, 'cancel', {})).status).toBe(200);
    expect(await w.next('task.cancel', 3000)).toEqual({ type: 'task.cancel', attempt_id: a.attempt_id, reason: 'CANCELLED' });
  });

  it('a second session of the worker_id on node B closes the first one on node A with 4409 and resumes its attempt', async () => {
    const { w, workerId, task, attemptId } = await leased();
    await start(w, attemptId);
    const w2 = await openRaw(b.url, f.t.token);
    f.workers.push(w2);
    w2.send({ type: 'hello', protocol: 1, worker_id: workerId, queues: [task.queue_id], capacity: 1, resume: [attemptId] });
    const ok = await w2.next('hello.ok');
    expect(ok.resumed).toEqual([{ attempt_id: attemptId, state: 'RUNNING', lease_expires_at: expect.any(String) }]);
    expect(await w.next('error', 3000)).toMatchObject({ code: 'STATE_CONFLICT', fatal: true });
    expect((await w.closed).code).toBe(4409);
    expect(await result(w2, attemptId, 'succeeded')).toMatchObject({ task_state: 'SUCCEEDED' });
  });
});
