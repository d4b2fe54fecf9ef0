// A worker's failed result of a fan-out element advances its run in the result transaction
// (docs/workflows.md "Runs"): the element's WAITING siblings are cancelled there, with their
// waiting rows and keys. The same transaction may also refill the freed slot (refill.ts) or hand
// the released key to the next task of its key (handoff.ts); neither may lease a sibling the
// advancement cancels, so the advancement runs before them (frame-committer.ts). The refill case
// needs the element queue apart from the queue of the step before it: a refill's candidate read that
// finds nothing (the split's result, before its elements exist) marks the queue drained for a
// second (queue-hints.ts), and a failure within that second is not refilled at all. Through a
// real gateway and raw sessions.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { workflowViolations } from './support/workflow-invariants.js';
import { assertPermitInvariants } from './support/invariants.js';
import { connect, createQueue, expectNoFrame, result, waitTaskState } from './support/dispatch-fixture.js';
import { getRun, newWorkflow, startRun, sqlStepTasks, stepOf, takeStarted, taskStep, useWorkflowRunFixture } from './support/workflow-runs.js';

const { f, api } = useWorkflowRunFixture();

async function waitingRowsOf(taskIds: string[]): Promise<string[]> {
  const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT task_id FROM waiting_tasks WHERE task_id IN (?)', [taskIds]);
  return rows.map((r) => r.task_id as string);
}

describe('a failed element cancels its WAITING siblings in the result transaction', () => {
  it('unkeyed: the cancelled siblings leave waiting_tasks with their state', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [taskStep('list', q.id), taskStep('each', q.id, { after: ['list'], for_each: 'list' })]);
    const run = await startRun(api(), workflow.id);
    const { w } = await connect(f, [q.id], { capacity: 1 });
    const list = await takeStarted(w);
    expect((await result(w, list.attempt_id, 'succeeded', { output: ['x', 'y', 'z'] })).type).toBe('result.ok');
    // Capacity 1: one element assigned, the other two WAITING.
    const e = await takeStarted(w);
    const siblings = (await sqlStepTasks(f, run.id)).filter((r) => r.step_key === 'each' && r.id !== e.task.id).map((r) => r.id as string);
    expect(siblings).toHaveLength(2);
    expect((await waitingRowsOf(siblings)).sort()).toEqual([...siblings].sort());

    expect((await result(w, e.attempt_id, 'failed', { error: { code: 'BOOM', message: 'element failed' } })).type).toBe('result.ok');
    for (const id of siblings) await waitTaskState(f, id, 'CANCELLED', 2000);
    expect(await waitingRowsOf(siblings)).toEqual([]);
    expect((await getRun(api(), run.id)).state).toBe('FAILED');
    expect(await workflowViolations(f.db.pool)).toEqual([]);
    await assertPermitInvariants(f.db.pool);
  });

  it("capacity 1, a queue of its own: the failed element's freed slot is not refilled with a sibling", async () => {
    const qSplit = await createQueue(f);
    const qEach = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [taskStep('split', qSplit.id), taskStep('each', qEach.id, { after: ['split'], for_each: 'split' })]);
    const run = await startRun(api(), workflow.id);
    const { w: splitter } = await connect(f, [qSplit.id], { capacity: 1 });
    const { w } = await connect(f, [qEach.id], { capacity: 1 });
    const split = await takeStarted(splitter);
    expect((await result(splitter, split.attempt_id, 'succeeded', { output: [1, 2, 3] })).type).toBe('result.ok');
    // Capacity 1: one element assigned, the other two WAITING.
    const e = await takeStarted(w);
    const siblings = (await sqlStepTasks(f, run.id)).filter((r) => r.step_key === 'each' && r.id !== e.task.id).map((r) => r.id as string);
    expect((await waitingRowsOf(siblings)).sort()).toEqual([...siblings].sort());

    expect((await result(w, e.attempt_id, 'failed', { error: { code: 'BOOM', message: 'element failed' } })).type).toBe('result.ok');
    // result.ok follows the commit: what the result's transaction decided is all there now.
    await expectStepEnded(run.id, siblings);
    // No assignment follows (a refill's task.assign is sent after the result.ok).
    await expectNoFrame(w, 'task.assign', 500);
    expect(await workflowViolations(f.db.pool)).toEqual([]);
    await assertPermitInvariants(f.db.pool);
  });

  it('keyed: the released key goes to no sibling; every WAITING sibling is cancelled and the key ends free', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [
      taskStep('list', q.id),
      taskStep('each', q.id, { after: ['list'], for_each: 'list' }, { concurrency_key: 'one-at-a-time' }),
    ]);
    const run = await startRun(api(), workflow.id);
    const { w } = await connect(f, [q.id], { capacity: 2, concurrency_keys: true });
    const list = await takeStarted(w);
    expect((await result(w, list.attempt_id, 'succeeded', { output: ['x', 'y', 'z'] })).type).toBe('result.ok');
    // One key: one element holds it, the other two WAIT behind it; the session has a free slot,
    // so a hand-off of the released key would find a taker.
    const e0 = await takeStarted(w);
    const others = (await sqlStepTasks(f, run.id)).filter((r) => r.step_key === 'each' && r.id !== e0.task.id).map((r) => r.id as string);
    expect((await waitingRowsOf(others)).sort()).toEqual([...others].sort());

    expect((await result(w, e0.attempt_id, 'failed', { error: { code: 'BOOM', message: 'element failed' } })).type).toBe('result.ok');
    await expectStepEnded(run.id, others);
    await expectNoFrame(w, 'task.assign', 500);
    const [keyRows] = await f.db.pool.query<RowDataPacket[]>(
      "SELECT holder_attempt_id FROM resource_keys WHERE concurrency_key = 'one-at-a-time' AND namespace_id = (SELECT namespace_id FROM tasks WHERE id = ?)",
      [e0.task.id],
    );
    expect(keyRows.map((r) => r.holder_attempt_id)).toEqual([null]);
    expect(await workflowViolations(f.db.pool)).toEqual([]);
    await assertPermitInvariants(f.db.pool);
  });
});

/** The failed element's siblings CANCELLED without waiting rows, its step FAILED and its run FAILED,
 * read at once (one assertion, so a failure shows the whole state). */
async function expectStepEnded(runId: string, siblings: string[]): Promise<void> {
  const states = new Map((await sqlStepTasks(f, runId)).map((r) => [r.id as string, r.state as string]));
  const after = await getRun(api(), runId);
  expect({
    siblings: siblings.map((id) => states.get(id)),
    waitingRows: await waitingRowsOf(siblings),
    step: stepOf(after, 'each')?.state,
    run: after.state,
  }).toEqual({ siblings: siblings.map(() => 'CANCELLED'), waitingRows: [], step: 'FAILED', run: 'FAILED' });
}
