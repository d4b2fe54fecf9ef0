// Workflow runs under control (docs/workflows.md "Runs", "Endpoints"): pause and resume,
// cancel, quota, the run key, exactly-once children, the run reads and the SDK's step handler, on a
// real gateway with raw HTTP, raw WebSocket workers and the SDK. Start, advancement, for_each,
// run_if, delays, signals and review: workflows-runs.test.ts.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { call } from './support/http.js';
import { expectData, expectError } from './support/contract.js';
import { newTenant } from './support/db.js';
import { apiTask, connect, createQueue, expectNoFrame, nextOf, result } from './support/dispatch-fixture.js';
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
  waitStepState,
  useWorkflowRunFixture,
  startChainRun,
  expectRunInvariants,
  startFanOutRun,
} from './support/workflow-runs.js';

const { f, api } = useWorkflowRunFixture();
it('pause: a step whose parents finish becomes READY without tasks; resume creates them in its transaction', async () => {
  const { run, w } = await startChainRun(f, api());
  const a = await takeStarted(w);
  const paused = expectData(await runCommand(api(), run.id, 'pause'), 200).run;
  expect(paused.state).toBe('PAUSED');
  await result(w, a.attempt_id, 'succeeded');
  const mid = await getRun(api(), run.id);
  expect(stepOf(mid, 'b')).toEqual({ key: 'b', state: 'READY', task_ids: [] });
  await expectNoFrame(w, 'task.assign', 300);
  const resumed = expectData(await runCommand(api(), run.id, 'resume'), 200).run;
  expect(resumed.state).toBe('RUNNING');
  expect(stepOf(resumed, 'b')).toMatchObject({ state: 'ACTIVE', task_ids: [expect.any(String)] });
  await result(w, (await takeStarted(w)).attempt_id, 'succeeded');
  expect((await getRun(api(), run.id)).state).toBe('SUCCEEDED');
  for (const verb of ['pause', 'resume', 'cancel'] as const) expectError(await runCommand(api(), run.id, verb), 409, 'STATE_CONFLICT');
  expectError(await signal(api(), run.id, 'x'), 400, 'INVALID_ARGUMENT');
});

it('cancel: WAITING and LEASED tasks cancelled with their permits released and task.cancel sent; a RUNNING one is recorded; nothing starts after', async () => {
  const q = await createQueue(f);
  const { workflow } = await newWorkflow(api(), [
    taskStep('r1', q.id),
    taskStep('r2', q.id),
    taskStep('r3', q.id),
    taskStep('end', q.id, { after: ['r1', 'r2', 'r3'] }),
  ]);
  const run = await startRun(api(), workflow.id);
  const { w } = await connect(f, [q.id], { capacity: 2 });
  const running = await takeStarted(w);
  const leased = await nextOf(w, ['task.assign']);
  const c = expectData(await runCommand(api(), run.id, 'cancel', { reason: 'operator' }), 200).run;
  expect(c.state).toBe('CANCELLED');
  expect(c.finished_at).toEqual(expect.any(String));
  const byTask = new Map((await sqlStepTasks(f, run.id)).map((r) => [r.id, r.state]));
  expect(byTask.get(running.task.id)).toBe('RUNNING');
  expect(byTask.get(leased.task.id)).toBe('CANCELLED');
  expect([...byTask.values()].filter((s) => s === 'CANCELLED')).toHaveLength(2);
  const cancel = await nextOf(w, ['task.cancel']);
  expect(cancel.attempt_id).toBe(leased.attempt_id);
  const [qrow] = await f.db.pool.query<RowDataPacket[]>('SELECT active_attempts FROM queues WHERE id = ?', [q.id]);
  expect(Number(qrow[0]!.active_attempts)).toBe(1);
  for (const s of c.steps) expect(s.state).toBe('CANCELLED');
  await result(w, running.attempt_id, 'succeeded', { output: 1 });
  expect((await apiTask(f, running.task.id)).state).toBe('SUCCEEDED');
  const after = await getRun(api(), run.id);
  expect(after.state).toBe('CANCELLED');
  expect(stepOf(after, 'end').task_ids).toEqual([]);
  expectError(await runCommand(api(), run.id, 'cancel'), 409, 'STATE_CONFLICT');
});

it('quota: roots that do not fit are 429 with nothing created; a later step waits READY and the sweeper starts it when room appears', async () => {
  const t = await newTenant(f.db);
  const tapi = { url: f.gw.url, token: t.token };
  await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 2 WHERE id = (SELECT application_id FROM namespaces WHERE id = ?)', [t.namespace_id]);
  const wide = await newWorkflow(tapi, [taskStep('r1', t.queue_id), taskStep('r2', t.queue_id), taskStep('r3', t.queue_id)]);
  expectError(await startRunRaw(tapi, wide.workflow.id), 429, 'QUOTA_EXCEEDED');
  const [none] = await f.db.pool.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM workflow_runs WHERE workflow_id = ?', [wide.workflow.id]);
  expect(Number(none[0]!.n)).toBe(0);

  const fan = await newWorkflow(tapi, [taskStep('list', t.queue_id), taskStep('each', t.queue_id, { after: ['list'], for_each: 'list' })]);
  const run = await startRun(tapi, fan.workflow.id);
  const { w } = await connect(f, [t.queue_id], {}, t);
  const l = await takeStarted(w);
  await result(w, l.attempt_id, 'succeeded', { output: [1, 2, 3] });
  const mid = await getRun(tapi, run.id);
  expect(stepOf(mid, 'each')).toEqual({ key: 'each', state: 'READY', task_ids: [] });
  const [cause] = await f.db.pool.query<RowDataPacket[]>("SELECT ready_cause FROM workflow_run_steps WHERE run_id = ? AND step_key = 'each'", [run.id]);
  expect(cause[0]!.ready_cause).toBe('quota');
  await f.db.pool.query('UPDATE applications SET max_unfinished_tasks = 10 WHERE id = (SELECT application_id FROM namespaces WHERE id = ?)', [t.namespace_id]);
  const started = await waitStepState(tapi, run.id, 'each', 'ACTIVE');
  expect(stepOf(started, 'each').task_ids).toHaveLength(3);
  await serve(
    w,
    () => ({ outcome: 'succeeded' }),
    async () => (await getRun(tapi, run.id)).state === 'SUCCEEDED',
  );
});

it('use_run_key: runs on one key never hold it at once; tokens strictly increase across runs and steps', async () => {
  const q = await createQueue(f);
  const { workflow } = await newWorkflow(api(), [
    taskStep('k1', q.id, {}, { use_run_key: true }),
    taskStep('k2', q.id, { after: ['k1'] }, { use_run_key: true }),
  ]);
  const r1 = await startRun(api(), workflow.id, { concurrency_key: 'object/42' });
  const r2 = await startRun(api(), workflow.id, { concurrency_key: 'object/42' });
  expect(r1.concurrency_key).toBe('object/42');
  const { w } = await connect(f, [q.id], { capacity: 4, concurrency_keys: true });
  const tokens: bigint[] = [];
  for (let i = 0; i < 4; i++) {
    const a = await takeStarted(w);
    expect(a.task.concurrency_key).toBe('object/42');
    tokens.push(BigInt(a.concurrency_token));
    // The key is held: nothing else is assigned until this one ends.
    expect(w.frames.filter((x) => x.type === 'task.assign')).toEqual([]);
    await result(w, a.attempt_id, 'succeeded');
  }
  for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
  await waitRunState(api(), r1.id, 'SUCCEEDED');
  await waitRunState(api(), r2.id, 'SUCCEEDED');
});

describe('exactly once per (run, step, index)', () => {
  it('a replayed result and two concurrent results of a fan-out create the child task once', async () => {
    const { q, run } = await startFanOutRun(f, api(), 'after');
    const one = await connect(f, [q.id], { capacity: 1 });
    const two = await connect(f, [q.id], { capacity: 1 });
    const l = await takeStarted(one.w);
    const first = await result(one.w, l.attempt_id, 'succeeded', { output: ['x', 'y'] });
    const replay = await result(one.w, l.attempt_id, 'succeeded', { output: ['x', 'y'] });
    expect(replay).toMatchObject({ type: 'result.ok', deduplicated: true });
    expect(first.deduplicated).toBe(false);
    const e1 = await takeStarted(one.w);
    const e2 = await takeStarted(two.w);
    const [r1, r2] = await Promise.all([result(one.w, e1.attempt_id, 'succeeded', { output: 1 }), result(two.w, e2.attempt_id, 'succeeded', { output: 2 })]);
    expect([r1.type, r2.type]).toEqual(['result.ok', 'result.ok']);
    const rows = await sqlStepTasks(f, run.id);
    expect(rows.map((r) => `${r.step_key}/${r.item_index}`)).toEqual(['after/0', 'each/0', 'each/1', 'list/0']);
    // The guard itself: a second task row for an element is refused by the primary key.
    await expect(
      f.db.pool.query(
        "INSERT INTO workflow_step_tasks (run_id, step_key, item_index, namespace_id, application_id, task_id, created_at) SELECT run_id, step_key, item_index, namespace_id, application_id, ?, created_at FROM workflow_step_tasks WHERE run_id = ? AND step_key = 'after'",
        ['f'.repeat(32), run.id],
      ),
    ).rejects.toMatchObject({ code: 'ER_DUP_ENTRY' });
  });
});

describe('reads', () => {
  it('GET /v1/workflow-runs lists runs newest first without steps and input, filtered by workflow_id and state, paged', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [taskStep('a', q.id)]);
    const ids = [(await startRun(api(), workflow.id)).id, (await startRun(api(), workflow.id)).id, (await startRun(api(), workflow.id)).id];
    expectData(await runCommand(api(), ids[0]!, 'cancel'), 200);
    const page1 = expectData(await call(f.gw.url, 'GET', `/v1/workflow-runs?workflow_id=${workflow.id}&limit=2`, { token: f.t.token }), 200);
    expect(page1.runs.map((r: any) => r.id)).toEqual([ids[2], ids[1]]);
    expect(page1.runs[0].steps).toBeUndefined();
    expect(page1.runs[0].input).toBeUndefined();
    const page2 = expectData(
      await call(f.gw.url, 'GET', `/v1/workflow-runs?workflow_id=${workflow.id}&limit=2&cursor=${page1.next_cursor}`, { token: f.t.token }),
      200,
    );
    expect(page2).toEqual({ runs: [expect.objectContaining({ id: ids[0], state: 'CANCELLED' })], next_cursor: null });
    const cancelled = expectData(await call(f.gw.url, 'GET', `/v1/workflow-runs?workflow_id=${workflow.id}&state=CANCELLED`, { token: f.t.token }), 200);
    expect(cancelled.runs.map((r: any) => r.id)).toEqual([ids[0]]);
    for (const bad of ['state=DONE', 'limit=0', 'limit=501', 'workflow_id=x', 'cursor=zz', 'other=1'])
      expectError(await call(f.gw.url, 'GET', `/v1/workflow-runs?${bad}`, { token: f.t.token }), 400, 'INVALID_ARGUMENT');
    expectError(await call(f.gw.url, 'GET', `/v1/workflow-runs/${'0'.repeat(32)}`, { token: f.t.token }), 404, 'NOT_FOUND');
    for (const r of ids.slice(1)) expectData(await runCommand(api(), r, 'cancel'), 200);
  });
});

it('the SDK: stepHandler reads input, params, parents and item; e.workflow names the run and step', async () => {
  const { createWorker, stepHandler } = await import('../worker-sdk/index.js');
  const q = await createQueue(f);
  const { workflow } = await newWorkflow(api(), [
    taskStep('split', q.id, {}, { handler: 'wf.split', params: { n: 3 } }),
    taskStep('double', q.id, { after: ['split'], for_each: 'split' }, { handler: 'wf.double' }),
  ]);
  const seen: unknown[] = [];
  const worker = createWorker({
    url: f.gw.url,
    token: f.t.token,
    queues: [q.id],
    capacity: 4,
    logger: { info() {}, warn() {}, error() {} },
    handlers: {
      'wf.split': stepHandler<{ base: number }, { n: number }>(({ input, params, runId, step }) => {
        seen.push({ runId, step });
        return Array.from({ length: params.n }, (_, i) => input.base + i);
      }),
      'wf.double': stepHandler<{ base: number }, unknown, { split: number[] }, number>(({ item, index, parents }, e) => {
        seen.push({ index, w: e.workflow, n: parents.split.length });
        return item! * 2;
      }),
    },
  });
  try {
    await worker.ready;
    const run = await startRun(api(), workflow.id, { input: { base: 5 } });
    const done = await waitRunState(api(), run.id, 'SUCCEEDED', 15_000);
    expect(stepOf(done, 'double').output).toEqual([10, 12, 14]);
    expect(seen[0]).toEqual({ runId: run.id, step: 'split' });
    expect(seen.slice(1)).toEqual(expect.arrayContaining([0, 1, 2].map((i) => ({ index: i, w: { runId: run.id, step: 'double', index: i }, n: 3 }))));
  } finally {
    await worker.close();
  }
});

// Last: the invariants of docs/workflows.md over every run this file made (finished, cancelled, or left
// waiting on a delay, a signal, a task or review).
it('invariants: exactly once, no stuck run, parents before children, pinned queues, one grant per token', async () => {
  await expectRunInvariants(f, 10); // the runs this file's tests start (23 in the two files)
});
