// Workflow runs end to end (docs/workflows.md "Runs", "Endpoints"): a real gateway, raw
// HTTP, raw WebSocket workers and the SDK. Each rule by name; the advancement is checked to commit
// with the event that caused it (the child's task exists as soon as result.ok arrives, which is
// sent after the result's commit — no separate job). Pause, cancel, quota, the run key, exactly-once
// children, reads and the SDK: workflows-runs-control.test.ts.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { call, ikey } from './support/http.js';
import { expectData, expectError } from './support/contract.js';
import { apiTask, cmd, connect, createQueue, expectNoFrame, result } from './support/dispatch-fixture.js';
import {
  getRun,
  newWorkflow,
  runCommand,
  serve,
  signal,
  sqlStepTasks,
  startRun,
  startRunRaw,
  stepOf,
  takeStarted,
  taskStep,
  waitRunState,
  useWorkflowRunFixture,
  startChainRun,
  expectRunInvariants,
  startFanOutRun,
} from './support/workflow-runs.js';

const { f, api } = useWorkflowRunFixture();

describe('run start and chain advancement', () => {
  it('roots start in the run start; each result creates the next step task in its own transaction; outputs flow as parents', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [
      taskStep('a', q.id, {}, { params: { p: 1 } }),
      taskStep('b', q.id, { after: ['a'] }),
      taskStep('c', q.id, { after: ['b'] }),
    ]);
    const run = await startRun(api(), workflow.id, { input: { x: 1 } });
    expect(run).toMatchObject({ workflow_id: workflow.id, version: 1, state: 'RUNNING', input: { x: 1 }, finished_at: null });
    expect(run.concurrency_key).toBeUndefined();
    expect(stepOf(run, 'a')).toMatchObject({ state: 'ACTIVE', task_ids: [expect.any(String)] });
    expect(stepOf(run, 'b')).toEqual({ key: 'b', state: 'PENDING', task_ids: [] });

    const { w } = await connect(f, [q.id]);
    const a = await takeStarted(w);
    expect(a.task.workflow).toEqual({ run_id: run.id, step: 'a' });
    expect(a.task.payload).toEqual({ input: { x: 1 }, params: { p: 1 }, parents: {} });
    expect((await apiTask(f, a.task.id)).workflow).toEqual({ run_id: run.id, step: 'a' });

    expect((await result(w, a.attempt_id, 'succeeded', { output: { a: 1 } })).type).toBe('result.ok');
    // result.ok is sent after the commit: b's task committed with a's result. It may already be
    // LEASED to this worker (the commit wakes a claim round, which can win the race with this read).
    const afterA = (await sqlStepTasks(f, run.id)).map((r) => [r.step_key, r.state]);
    expect(afterA).toHaveLength(2);
    expect(afterA[0]).toEqual(['a', 'SUCCEEDED']);
    expect(afterA[1]![0]).toBe('b');
    expect(['WAITING', 'LEASED']).toContain(afterA[1]![1]);
    const b = await takeStarted(w);
    expect(b.task.payload).toEqual({ input: { x: 1 }, params: {}, parents: { a: { a: 1 } } });
    await result(w, b.attempt_id, 'succeeded', { output: 2 });
    const c = await takeStarted(w);
    expect(c.task.payload.parents).toEqual({ b: 2 });
    await result(w, c.attempt_id, 'succeeded');
    const done = await getRun(api(), run.id);
    expect(done.state).toBe('SUCCEEDED');
    expect(done.finished_at).toEqual(expect.any(String));
    expect(stepOf(done, 'a')).toMatchObject({ state: 'SUCCEEDED', output: { a: 1 }, task_ids: [a.task.id] });
    expect(stepOf(done, 'c')).toMatchObject({ state: 'SUCCEEDED', output: null });
    for (const s of done.steps) expect(Date.parse(s.finished_at!)).toBeGreaterThanOrEqual(Date.parse(s.started_at!));
  });

  it('receipts: a replay returns the same run; without version and naming the current version are different commands', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [taskStep('a', q.id)]);
    const key = ikey('run');
    const first = expectData(await startRunRaw(api(), workflow.id, { input: 7 }, key), 201);
    expect(first.deduplicated).toBe(false);
    expect(expectData(await startRunRaw(api(), workflow.id, { input: 7 }, key), 200)).toEqual({ ...first, deduplicated: true });
    expectError(await startRunRaw(api(), workflow.id, { input: 7, version: 1 }, key), 409, 'IDEMPOTENCY_CONFLICT');
    const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM workflow_runs WHERE workflow_id = ?', [workflow.id]);
    expect(Number(rows[0]!.n)).toBe(1);
    expectError(await startRunRaw(api(), '0'.repeat(32)), 404, 'NOT_FOUND');
    expectError(await startRunRaw(api(), workflow.id, { version: 2 }), 404, 'NOT_FOUND');
    expectError(await startRunRaw(api(), workflow.id, { extra: 1 }), 400, 'INVALID_ARGUMENT');
  });

  it('use_run_key without a concurrency_key is 400 naming the steps; nothing is created', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [taskStep('k', q.id, {}, { use_run_key: true })]);
    const e = expectError(await startRunRaw(api(), workflow.id, {}), 400, 'INVALID_ARGUMENT');
    expect(e.details).toMatchObject({ field: 'concurrency_key', steps: ['k'] });
    const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM workflow_runs WHERE workflow_id = ?', [workflow.id]);
    expect(Number(rows[0]!.n)).toBe(0);
  });
});

describe('retirement', () => {
  it('409 RESOURCE_RETIRED for a retired workflow and for a version naming a retired queue (any step); nothing is created', async () => {
    const q1 = await createQueue(f);
    const q2 = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [taskStep('a', q1.id), taskStep('b', q2.id, { after: ['a'] })]);
    // An unfinished run pins every queue of its version, reached or not.
    const run = await startRun(api(), workflow.id);
    const busy = await call(f.gw.url, 'POST', `/v1/queues/${q2.id}:retire`, {
      token: f.t.token,
      key: ikey('qr'),
      body: { expected_revision: '1', reason: 'old' },
    });
    expectError(busy, 409, 'RESOURCE_BUSY');
    expectData(await runCommand(api(), run.id, 'cancel'), 200);
    expectData(
      await call(f.gw.url, 'POST', `/v1/queues/${q2.id}:retire`, { token: f.t.token, key: ikey('qr'), body: { expected_revision: '1', reason: 'old' } }),
      200,
    );
    expectError(await startRunRaw(api(), workflow.id), 409, 'RESOURCE_RETIRED');
    const other = await newWorkflow(api(), [taskStep('a', q1.id)]);
    expectData(
      await call(f.gw.url, 'POST', `/v1/workflows/${other.workflow.id}:retire`, {
        token: f.t.token,
        key: ikey('wr'),
        body: { expected_revision: '1', reason: 'done' },
      }),
      200,
    );
    expectError(await startRunRaw(api(), other.workflow.id), 409, 'RESOURCE_RETIRED');
    const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM workflow_runs WHERE workflow_id IN (?, ?)', [
      workflow.id,
      other.workflow.id,
    ]);
    expect(Number(rows[0]!.n)).toBe(1);
  });
});

describe('for_each', () => {
  it('fans out one task per element; the step output is the outputs in element order, whatever order they finish in', async () => {
    const { q, run } = await startFanOutRun(f, api(), 'sum');
    const { w } = await connect(f, [q.id], { capacity: 8 });
    const l = await takeStarted(w);
    await result(w, l.attempt_id, 'succeeded', { output: [10, 20, 30] });
    const els = [await takeStarted(w), await takeStarted(w), await takeStarted(w)];
    expect(els.map((e) => e.task.workflow.index).sort()).toEqual([0, 1, 2]);
    for (const e of els)
      expect(e.task.payload).toMatchObject({ item: [10, 20, 30][e.task.workflow.index], index: e.task.workflow.index, parents: { list: [10, 20, 30] } });
    // Finish in reverse element order.
    for (const e of [...els].sort((x, y) => y.task.workflow.index - x.task.workflow.index)) {
      await result(w, e.attempt_id, 'succeeded', { output: e.task.payload.item * 2 });
    }
    const s = await takeStarted(w);
    expect(s.task.payload.parents).toEqual({ each: [20, 40, 60] });
    await result(w, s.attempt_id, 'succeeded');
    const done = await getRun(api(), run.id);
    expect(done.state).toBe('SUCCEEDED');
    const each = stepOf(done, 'each');
    expect(each.output).toEqual([20, 40, 60]);
    const byIndex = new Map(els.map((e) => [e.task.workflow.index, e.task.id]));
    expect(each.task_ids).toEqual([byIndex.get(0), byIndex.get(1), byIndex.get(2)]);
  });

  it('FOR_EACH_INVALID: a parent output that is not an array fails the step without a task; 0 elements succeed with []', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [taskStep('list', q.id), taskStep('each', q.id, { after: ['list'], for_each: 'list' })]);
    const { w } = await connect(f, [q.id]);
    const bad = await startRun(api(), workflow.id);
    const l = await takeStarted(w);
    await result(w, l.attempt_id, 'succeeded', { output: { not: 'an array' } });
    const failed = await getRun(api(), bad.id);
    expect(failed.state).toBe('FAILED');
    expect(stepOf(failed, 'each')).toMatchObject({ state: 'FAILED', task_ids: [], error: { code: 'FOR_EACH_INVALID' } });
    const empty = await startRun(api(), workflow.id);
    const l2 = await takeStarted(w);
    await result(w, l2.attempt_id, 'succeeded', { output: [] });
    const ok = await getRun(api(), empty.id);
    expect(ok.state).toBe('SUCCEEDED');
    expect(stepOf(ok, 'each')).toMatchObject({ state: 'SUCCEEDED', output: [], task_ids: [] });
  });
});

describe('run_if', () => {
  it('a failure skips all_succeeded children (parent_failed, counted as failed), runs any_failed and always; the run fails', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [
      taskStep('a', q.id),
      taskStep('b', q.id, { after: ['a'] }),
      taskStep('undo', q.id, { after: ['b'], run_if: 'any_failed' }),
      taskStep('fin', q.id, { after: ['a'], run_if: 'always' }),
    ]);
    const run = await startRun(api(), workflow.id);
    const { w } = await connect(f, [q.id]);
    const a = await takeStarted(w);
    await result(w, a.attempt_id, 'failed', { error: { code: 'BOOM', message: 'no' } });
    const mid = await getRun(api(), run.id);
    expect(stepOf(mid, 'a')).toMatchObject({ state: 'FAILED', error: { code: 'BOOM', message: 'no' } });
    expect(stepOf(mid, 'b')).toMatchObject({ state: 'SKIPPED', skipped_because: 'parent_failed' });
    expect(stepOf(mid, 'undo').state).toBe('ACTIVE');
    expect(stepOf(mid, 'fin').state).toBe('ACTIVE');
    const handlers = (
      await serve(
        w,
        () => ({ outcome: 'succeeded' }),
        async () => (await getRun(api(), run.id)).state !== 'RUNNING',
      )
    ).map((x) => x.task.workflow.step);
    expect(handlers.sort()).toEqual(['fin', 'undo']);
    expect((await getRun(api(), run.id)).state).toBe('FAILED');
  });

  it('a condition skip cascades as skipped: all_succeeded and any_failed children skip (condition), always runs; the run succeeds', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [
      taskStep('x', q.id),
      taskStep('y', q.id, { after: ['x'], run_if: 'any_failed' }),
      taskStep('z', q.id, { after: ['y'] }),
      taskStep('u', q.id, { after: ['y'], run_if: 'any_failed' }),
      taskStep('v', q.id, { after: ['y'], run_if: 'always' }),
    ]);
    const run = await startRun(api(), workflow.id);
    const { w } = await connect(f, [q.id]);
    const x = await takeStarted(w);
    await result(w, x.attempt_id, 'succeeded');
    const mid = await getRun(api(), run.id);
    for (const k of ['y', 'z', 'u']) expect(stepOf(mid, k)).toMatchObject({ state: 'SKIPPED', skipped_because: 'condition' });
    const v = await takeStarted(w);
    expect(v.task.workflow.step).toBe('v');
    expect(v.task.payload.parents).toEqual({});
    await result(w, v.attempt_id, 'succeeded');
    expect((await getRun(api(), run.id)).state).toBe('SUCCEEDED');
  });
});

it('delay_seconds: the step task not_before is the step start + delay (database clock)', async () => {
  const q = await createQueue(f);
  const { workflow } = await newWorkflow(api(), [taskStep('a', q.id), taskStep('later', q.id, { after: ['a'], delay_seconds: 60 })]);
  const run = await startRun(api(), workflow.id);
  const { w } = await connect(f, [q.id]);
  const a = await takeStarted(w);
  await result(w, a.attempt_id, 'succeeded');
  const later = stepOf(await getRun(api(), run.id), 'later');
  const t = await apiTask(f, later.task_ids[0]);
  expect(Date.parse(t.not_before!) - Date.parse(t.created_at)).toBe(60_000);
  expect(Math.abs(Date.parse(t.created_at) - Date.parse(later.started_at))).toBeLessThan(1000);
  await expectNoFrame(w, 'task.assign', 300);
});

describe('signals', () => {
  const steps = (q: string) => [
    taskStep('a', q),
    { key: 'approve', after: ['a'], signal: { name: 'approved', timeout_seconds: 3600 } },
    taskStep('pub', q, { after: ['approve'] }),
  ];

  it('an early signal is kept and consumed when its step starts; a second one is 409; an unknown name is 400', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), steps(q.id));
    const run = await startRun(api(), workflow.id);
    expectError(await signal(api(), run.id, 'nope'), 400, 'INVALID_ARGUMENT');
    const key = ikey('sig');
    const sent = expectData(await signal(api(), run.id, 'approved', { by: 'ann' }, key), 200);
    expect(stepOf(sent.run, 'approve').state).toBe('PENDING');
    expect(expectData(await signal(api(), run.id, 'approved', { by: 'ann' }, key), 200)).toEqual({ ...sent, deduplicated: true });
    expectError(await signal(api(), run.id, 'approved', { by: 'bob' }), 409, 'STATE_CONFLICT');
    const [kept] = await f.db.pool.query<RowDataPacket[]>('SELECT state FROM workflow_signals WHERE run_id = ?', [run.id]);
    expect(kept.map((r) => r.state)).toEqual(['KEPT']);
    const { w } = await connect(f, [q.id]);
    const a = await takeStarted(w);
    await result(w, a.attempt_id, 'succeeded');
    const after = await getRun(api(), run.id);
    expect(stepOf(after, 'approve')).toMatchObject({ state: 'SUCCEEDED', output: { by: 'ann' } });
    const pub = await takeStarted(w);
    expect(pub.task.payload.parents).toEqual({ approve: { by: 'ann' } });
    const [consumed] = await f.db.pool.query<RowDataPacket[]>('SELECT state, consumed_at FROM workflow_signals WHERE run_id = ?', [run.id]);
    expect(consumed[0]).toMatchObject({ state: 'CONSUMED', consumed_at: expect.any(String) });
  });

  it('a waiting step succeeds with the signal; a timed-out one fails SIGNAL_TIMEOUT by the sweeper (backdated), and a late signal is 409', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), steps(q.id));
    const { w } = await connect(f, [q.id]);
    const r1 = await startRun(api(), workflow.id);
    await result(w, (await takeStarted(w)).attempt_id, 'succeeded');
    expect(stepOf(await getRun(api(), r1.id), 'approve').state).toBe('WAITING_SIGNAL');
    const got = expectData(await signal(api(), r1.id, 'approved'), 200).run;
    expect(stepOf(got, 'approve')).toMatchObject({ state: 'SUCCEEDED', output: null });
    expect(stepOf(got, 'pub').state).toBe('ACTIVE');

    const r2 = await startRun(api(), workflow.id);
    await serve(
      w,
      () => ({ outcome: 'succeeded' }),
      async () => stepOf(await getRun(api(), r2.id), 'approve').state === 'WAITING_SIGNAL',
    );
    await f.db.pool.query("UPDATE workflow_run_steps SET signal_deadline_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE run_id = ? AND step_key = 'approve'", [
      r2.id,
    ]);
    const failed = await waitRunState(api(), r2.id, 'FAILED');
    expect(stepOf(failed, 'approve')).toMatchObject({ state: 'FAILED', error: { code: 'SIGNAL_TIMEOUT' } });
    expect(stepOf(failed, 'pub')).toMatchObject({ state: 'SKIPPED', skipped_because: 'parent_failed' });
    expectError(await signal(api(), r2.id, 'approved'), 409, 'STATE_CONFLICT');
  });
});

it('NEEDS_REVIEW keeps the step IN_REVIEW and the run from advancing until :resolve', async () => {
  const { run, w } = await startChainRun(f, api());
  const a = await takeStarted(w);
  await result(w, a.attempt_id, 'unknown', { error: { code: 'TIMEOUT', message: 'effect unknown' } });
  const mid = await getRun(api(), run.id);
  expect(mid.state).toBe('RUNNING');
  expect(stepOf(mid, 'a').state).toBe('IN_REVIEW');
  expect(stepOf(mid, 'b').state).toBe('PENDING');
  expectData(await cmd(f, a.task.id, 'resolve', { resolution: 'retry' }), 200);
  expect(stepOf(await getRun(api(), run.id), 'a').state).toBe('ACTIVE');
  const again = await takeStarted(w);
  await result(w, again.attempt_id, 'unknown');
  expect(stepOf(await getRun(api(), run.id), 'a').state).toBe('IN_REVIEW');
  expectData(await cmd(f, a.task.id, 'resolve', { resolution: 'succeeded' }), 200);
  const after = await getRun(api(), run.id);
  expect(stepOf(after, 'a')).toMatchObject({ state: 'SUCCEEDED', output: null });
  expect(stepOf(after, 'b').state).toBe('ACTIVE');
});

// Last: the invariants of docs/workflows.md over every run this file made (finished, cancelled, or left
// waiting on a delay, a signal, a task or review).
it('invariants: exactly once, no stuck run, parents before children, pinned queues, one grant per token', async () => {
  await expectRunInvariants(f, 13); // the runs this file's tests start (23 in the two files)
});
