// A worker's failed result of a fan-out element advances its run in the result transaction
// (workflows.md "Advancement"): the element's WAITING siblings are cancelled there. Their waiting
// rows and the keys of what that transaction revokes are written by the permit ledger's key phase,
// which ran before the advancement: the cancels it merged were dropped — the CANCELLED siblings kept
// their waiting rows (claimable, taking candidate-read slots; a keyed group's next row never
// flagged). frame-committer.ts now runs a second key phase after the advancement, and the ledger
// refuses key or waiting work recorded after its key phase. Through a real gateway and raw sessions.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { workflowViolations } from './support/workflow-invariants.js';
import { assertPermitInvariants } from './support/invariants.js';
import { connect, createQueue, nextOf, result, start, waitTaskState } from './support/dispatch-fixture.js';
import { getRun, newWorkflow, startRun, sqlStepTasks, takeStarted, taskStep, useWorkflowRunFixture } from './support/workflow-runs.js';

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

  it('keyed: the element handed the key goes on, the one still WAITING leaves its group, the key ends free', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), [
      taskStep('list', q.id),
      taskStep('each', q.id, { after: ['list'], for_each: 'list' }, { concurrency_key: 'one-at-a-time' }),
    ]);
    const run = await startRun(api(), workflow.id);
    const { w } = await connect(f, [q.id], { capacity: 2, concurrency_keys: true });
    const list = await takeStarted(w);
    expect((await result(w, list.attempt_id, 'succeeded', { output: ['x', 'y', 'z'] })).type).toBe('result.ok');
    // One key: one element holds it, the other two WAIT behind it.
    const e0 = await takeStarted(w);
    const others = (await sqlStepTasks(f, run.id)).filter((r) => r.step_key === 'each' && r.id !== e0.task.id).map((r) => r.id as string);
    expect((await waitingRowsOf(others)).sort()).toEqual([...others].sort());

    // Its failure hands the key to the next element (this session has a free slot) and, in the same
    // transaction, cancels the element still WAITING.
    expect((await result(w, e0.attempt_id, 'failed', { error: { code: 'BOOM', message: 'element failed' } })).type).toBe('result.ok');
    const states = async () => new Map((await sqlStepTasks(f, run.id)).filter((r) => others.includes(r.id)).map((r) => [r.id as string, r.state as string]));
    // result.ok follows the commit: the states are final here.
    const after = await states();
    expect([...after.values()].filter((s) => s === 'CANCELLED')).not.toEqual([]);
    expect([...after.values()].filter((s) => s === 'WAITING')).toEqual([]);
    expect(await waitingRowsOf(others)).toEqual([]);
    await assertPermitInvariants(f.db.pool);
    // Whatever was handed the key finishes; the key is free after it and the run ends FAILED.
    const handed = [...after.entries()].filter(([, s]) => s === 'LEASED').map(([id]) => id);
    for (const _ of handed) {
      const a = await nextOf(w, ['task.assign']);
      await start(w, a.attempt_id);
      expect((await result(w, a.attempt_id, 'succeeded', { output: null })).type).toBe('result.ok');
    }
    const [keyRows] = await f.db.pool.query<RowDataPacket[]>(
      "SELECT holder_attempt_id FROM resource_keys WHERE concurrency_key = 'one-at-a-time' AND namespace_id = (SELECT namespace_id FROM tasks WHERE id = ?)",
      [e0.task.id],
    );
    expect(keyRows.map((r) => r.holder_attempt_id)).toEqual([null]);
    expect((await getRun(api(), run.id)).state).toBe('FAILED');
    expect(await workflowViolations(f.db.pool)).toEqual([]);
    await assertPermitInvariants(f.db.pool);
  });
});
