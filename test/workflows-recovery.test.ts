// Step tasks released at a reconnect (docs/workflows.md "Runs"; docs/worker-protocol.md hello: an
// unlisted never-started attempt is released at once). A release changes a step task's state like a
// result or an expiry does, so the run advances in the hello's own transaction: a fan-out step with
// a failed element cancels the released element's task instead of requeueing it, and finishes.
// Through a real gateway and raw WebSocket sessions that reconnect with the same worker_id. Last,
// the sweeper's workflow duties: one run it cannot advance does not stop the others' timeouts.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { expectData } from './support/contract.js';
import { workflowViolations } from './support/workflow-invariants.js';
import { assertPermitInvariants } from './support/invariants.js';
import { connect, createQueue, expectNoFrame, nextOf, result, sqlAttempts, start, waitTaskState } from './support/dispatch-fixture.js';
import {
  getRun,
  newWorkflow,
  runCommand,
  sqlStepTasks,
  startRun,
  stepOf,
  takeStarted,
  taskStep,
  waitRunState,
  waitStepState,
  useWorkflowRunFixture,
  startChainRun,
} from './support/workflow-runs.js';
import { newTenant } from './support/db.js';

const { f, api } = useWorkflowRunFixture();

/** Closes a raw session and waits until the gateway saw it go (its close handshake done). */
async function drop(w: { close(): void; closed: Promise<unknown> }): Promise<void> {
  w.close();
  await w.closed;
}

async function liveAttempts(taskId: string): Promise<RowDataPacket[]> {
  return (await sqlAttempts(f, taskId)).filter((a) => a.state === 'LEASED' || a.state === 'RUNNING');
}

describe('a step task released at reconnect advances its run in the hello transaction', () => {
  it('for_each with a failed element: the released element is cancelled (not requeued), the step and the run fail', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [taskStep('list', q.id), taskStep('each', q.id, { after: ['list'], for_each: 'list' })]);
    const run = await startRun(api(), workflow.id);
    const { w, workerId } = await connect(f, [q.id], { capacity: 2 });
    const list = await takeStarted(w);
    expect((await result(w, list.attempt_id, 'succeeded', { output: ['x', 'y'] })).type).toBe('result.ok');
    // Both elements assigned to this session (capacity 2): element 0 fails, element 1 is never started.
    const a1 = await nextOf(w, ['task.assign']);
    const a2 = await nextOf(w, ['task.assign']);
    const [e0, e1] = [a1, a2].sort((x, y) => x.task.workflow.index - y.task.workflow.index);
    await start(w, e0.attempt_id);
    expect((await result(w, e0.attempt_id, 'failed', { error: { code: 'BOOM', message: 'element 0 failed' } })).type).toBe('result.ok');
    // The step goes on while element 1 is leased (spec: leased or running tasks go on).
    expect(stepOf(await getRun(api(), run.id), 'each').state).toBe('ACTIVE');
    expect((await waitTaskState(f, e1.task.id, 'LEASED')).current_attempt_id).toBe(e1.attempt_id);

    // The session drops and comes back (same worker_id) without listing element 1's attempt.
    await drop(w);
    const back = await connect(f, [q.id], { worker_id: workerId, capacity: 2, resume: [] });
    expect(back.ok.type).toBe('hello.ok');

    // Released and, in the same transaction, cancelled: the step had a failed element.
    await waitTaskState(f, e1.task.id, 'CANCELLED', 1000);
    const attempts = await sqlAttempts(f, e1.task.id);
    expect(attempts.map((a) => [a.id, a.state, a.error_code])).toEqual([[e1.attempt_id, 'EXPIRED', 'LEASE_EXPIRED']]);
    const done = await getRun(api(), run.id);
    expect(done.state).toBe('FAILED');
    expect(stepOf(done, 'each')).toMatchObject({ state: 'FAILED' });
    expect((await sqlStepTasks(f, run.id)).map((r) => [r.step_key, Number(r.item_index), r.state])).toEqual([
      ['each', 0, 'FAILED'],
      ['each', 1, 'CANCELLED'],
      ['list', 0, 'SUCCEEDED'],
    ]);
    // Nothing requeued: no new attempt, nothing assigned to the new session.
    await expectNoFrame(back.w, 'task.assign', 500);
    expect(await liveAttempts(e1.task.id)).toEqual([]);
    expect(await workflowViolations(f.db.pool)).toEqual([]);
    await assertPermitInvariants(f.db.pool);
  });

  it('a run cancelled while its step task is leased: the task is cancelled at once; a hello that does not list it changes nothing', async () => {
    const { q, run, w, workerId } = await startChainRun(f, api());
    const a = await nextOf(w, ['task.assign']);
    expect((await waitTaskState(f, a.task.id, 'LEASED')).current_attempt_id).toBe(a.attempt_id);
    // Cancel while LEASED: cancelled as by a task :cancel, task.cancel to the session.
    expectData(await runCommand(api(), run.id, 'cancel', { reason: 'stop' }), 200);
    expect((await nextOf(w, ['task.cancel'])).attempt_id).toBe(a.attempt_id);
    await drop(w);
    const back = await connect(f, [q.id], { worker_id: workerId, resume: [] });
    expect(back.ok.type).toBe('hello.ok');
    await expectNoFrame(back.w, 'task.assign', 500);
    await waitTaskState(f, a.task.id, 'CANCELLED', 1000);
    expect((await sqlAttempts(f, a.task.id)).map((x) => [x.id, x.state, x.error_code])).toEqual([[a.attempt_id, 'CANCELLED', 'CANCELLED']]);
    expect(await liveAttempts(a.task.id)).toEqual([]);
    const done = await waitRunState(api(), run.id, 'CANCELLED');
    expect(done.steps.map((s: any) => [s.key, s.state])).toEqual([
      ['a', 'CANCELLED'],
      ['b', 'CANCELLED'],
    ]);
    expect((await sqlStepTasks(f, run.id)).map((r) => [r.step_key, r.state])).toEqual([['a', 'CANCELLED']]);
    expect(await workflowViolations(f.db.pool)).toEqual([]);
    await assertPermitInvariants(f.db.pool);
  });
});

describe('the workflow sweeper isolates each run', () => {
  it('a run whose advancement fails does not stop the signal timeouts of the runs after it', async () => {
    const { workflow } = await newWorkflow(api(), [{ key: 'wait', signal: { name: 'go', timeout_seconds: 3600 } }]);
    const bad = await startRun(api(), workflow.id);
    const good = await startRun(api(), workflow.id);
    // The bad run comes first (earlier deadline) and its row cannot be read (input not JSON): every
    // tick fails on it. Before the fix that failure ended the tick, so the good run never timed out.
    await f.db.pool.query("UPDATE workflow_runs SET input = '{' WHERE id = ?", [bad.id]);
    await f.db.pool.query(
      "UPDATE workflow_run_steps SET signal_deadline_at = UTC_TIMESTAMP(3) - INTERVAL IF(run_id = ?, 2, 1) SECOND WHERE run_id IN (?, ?) AND step_key = 'wait'",
      [bad.id, bad.id, good.id],
    );
    const done = await waitRunState(api(), good.id, 'FAILED');
    expect(stepOf(done, 'wait')).toMatchObject({ state: 'FAILED', error: { code: 'SIGNAL_TIMEOUT' } });
    // The bad run is left behind alone, still waiting; repaired, the next tick times it out too.
    const [[row]] = (await f.db.pool.query("SELECT state FROM workflow_run_steps WHERE run_id = ? AND step_key = 'wait'", [bad.id])) as any;
    expect(row.state).toBe('WAITING_SIGNAL');
    await f.db.pool.query("UPDATE workflow_runs SET input = 'null' WHERE id = ?", [bad.id]);
    expect(stepOf(await waitRunState(api(), bad.id, 'FAILED'), 'wait').error.code).toBe('SIGNAL_TIMEOUT');
  });
});

describe('the workflow sweeper reads each application apart', () => {
  it("another application's 100 quota-bound runs that cannot start do not hide this application's quota-bound step", async () => {
    const t = await newTenant(f.db);
    const tapi = { url: f.gw.url, token: t.token };
    const appOf = '(SELECT application_id FROM namespaces WHERE id = ?)';
    await f.db.pool.query(`UPDATE applications SET max_unfinished_tasks = 2 WHERE id = ${appOf}`, [t.namespace_id]);
    const fan = await newWorkflow(tapi, [taskStep('list', t.queue_id), taskStep('each', t.queue_id, { after: ['list'], for_each: 'list' })]);
    const run = await startRun(tapi, fan.workflow.id);
    const { w } = await connect(f, [t.queue_id], {}, t);
    const l = await takeStarted(w);
    await result(w, l.attempt_id, 'succeeded', { output: [1, 2, 3] });
    expect(stepOf(await getRun(tapi, run.id), 'each').state).toBe('READY');
    // An application whose id sorts before every real one ('!' is below nanoid's alphabet) with 100
    // runs' steps waiting for quota that the sweeper cannot start (their runs are gone). Before the
    // per-application read, one `ORDER BY application_id LIMIT 100` returned only these.
    const ghost = '!'.repeat(32);
    const rows = Array.from({ length: 100 }, (_, i) => [`ghost${String(i).padStart(27, '0')}`, 'each', ghost, ghost, i + 1]);
    await f.db.pool.query(
      `INSERT INTO workflow_run_steps (run_id, step_key, namespace_id, application_id, run_seq, state, ready_cause, updated_at) VALUES ${rows
        .map(() => "(?, ?, ?, ?, ?, 'READY', 'quota', UTC_TIMESTAMP(3))")
        .join(', ')}`,
      rows.flat(),
    );
    try {
      await f.db.pool.query(`UPDATE applications SET max_unfinished_tasks = 10 WHERE id = ${appOf}`, [t.namespace_id]);
      const started = await waitStepState(tapi, run.id, 'each', 'ACTIVE');
      expect(stepOf(started, 'each').task_ids).toHaveLength(3);
    } finally {
      await f.db.pool.query('DELETE FROM workflow_run_steps WHERE application_id = ?', [ghost]);
    }
  });
});
