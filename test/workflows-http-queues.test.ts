// Workflow versions and their queues (docs/workflows.md "Definitions and versions", "Workflows and queue retirement") with raw HTTP
// against a real gateway: each queue a version names must exist (404), be authorized (403) and not
// be retired (409 RESOURCE_RETIRED, also for a publish waiting on a retirement in flight); a
// limited credential sees only the workflows whose queues it may use; a queue is not retired while
// a RUNNING or PAUSED run's version names it, reached or not.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { call, ikey } from './support/http.js';
import { expectData, expectError, limitedCredential } from './support/contract.js';
import { newTenant } from './support/db.js';
import { createQueue } from './support/dispatch-fixture.js';
import {
  chain,
  createWorkflow,
  insertRun,
  newWorkflow,
  setRunState,
  stepTask,
  workflowCommand,
  workflowName,
  useWorkflowsFixture,
} from './support/workflows.js';
import { waitFor } from './support/wait.js';

const { f, api, count, definitionRows } = useWorkflowsFixture();

async function retireQueue(queueId: string, token = f.t.token) {
  const q = (await call(f.gw.url, 'GET', `/v1/queues/${queueId}`, { token })).body.data.queue;
  return call(f.gw.url, 'POST', `/v1/queues/${queueId}:retire`, { token, key: ikey('rq'), body: { expected_revision: q.revision, reason: 'test' } });
}

describe('queues of a version', () => {
  it('absent → 404 at the step naming it; another namespace\u2019s → 404; outside queue_ids → 403; retired → 409 RESOURCE_RETIRED; nothing written', async () => {
    const other = await newTenant(f.db);
    const q2 = await createQueue(f);
    const before = await definitionRows();
    const version = (queueId: string) => ({
      steps: [
        { key: 'a', task: stepTask(f.t.queue_id) },
        { key: 'b', after: ['a'], task: stepTask(queueId) },
      ],
    });
    expect(expectError(await createWorkflow(api(), { name: workflowName(), version: version('f'.repeat(32)) }), 404, 'NOT_FOUND').details?.field).toBe(
      'version.steps.1.task.queue_id',
    );
    expectError(await createWorkflow(api(), { name: workflowName(), version: version(other.queue_id) }), 404, 'NOT_FOUND');
    // A queue name instead of its id: the 404 says which id it has.
    expect(expectError(await createWorkflow(api(), { name: workflowName(), version: version('initial') }), 404, 'NOT_FOUND').details?.queue_id).toBe(
      f.t.queue_id,
    );
    const limited = await limitedCredential(f.db, f.t.namespace_id, ['workflows:manage'], [f.t.queue_id]);
    expectError(await createWorkflow({ url: f.gw.url, token: limited.token }, { name: workflowName(), version: version(q2.id) }), 403, 'PERMISSION_DENIED');
    // Authorized for every queue of the version: accepted.
    const both = await limitedCredential(f.db, f.t.namespace_id, ['workflows:manage'], [f.t.queue_id, q2.id]);
    const { workflow } = await newWorkflow({ url: f.gw.url, token: both.token }, version(q2.id));
    expectData(await retireQueue(q2.id), 200);
    const mid = await definitionRows();
    const e = expectError(await createWorkflow(api(), { name: workflowName(), version: version(q2.id) }), 409, 'RESOURCE_RETIRED');
    expect(e.details).toEqual({ field: 'version.steps.1.task.queue_id', queue_id: q2.id });
    expectError(await workflowCommand(api(), workflow.id, 'versions', { expected_revision: '1', version: version(q2.id) }), 409, 'RESOURCE_RETIRED');
    expect(await definitionRows()).toEqual(mid);
    expect(mid[0]).toBe(before[0]! + 1);
  });

  it('a limited credential sees (lists, reads, commands) only workflows whose current version names queues it may use', async () => {
    const q2 = await createQueue(f);
    const only1 = await limitedCredential(f.db, f.t.namespace_id, ['workflows:manage'], [f.t.queue_id]);
    const a1 = { url: f.gw.url, token: only1.token };
    const { workflow: mine } = await newWorkflow(api(), chain(f.t.queue_id));
    const { workflow: theirs } = await newWorkflow(api(), chain(q2.id));
    expectData(await call(f.gw.url, 'GET', `/v1/workflows/${mine.id}`, { token: only1.token }), 200);
    expectError(await call(f.gw.url, 'GET', `/v1/workflows/${theirs.id}`, { token: only1.token }), 403, 'PERMISSION_DENIED');
    expectError(await call(f.gw.url, 'GET', `/v1/workflows/${theirs.id}/versions/1`, { token: only1.token }), 403, 'PERMISSION_DENIED');
    expectError(await workflowCommand(a1, theirs.id, 'retire', { expected_revision: '1', reason: 'x' }), 403, 'PERMISSION_DENIED');
    const names: string[] = [];
    for (let cursor: string | null = null; ;) {
      const d: any = expectData(await call(f.gw.url, 'GET', `/v1/workflows?limit=500${cursor ? `&cursor=${cursor}` : ''}`, { token: only1.token }), 200);
      names.push(...d.workflows.map((w: any) => w.name));
      cursor = d.next_cursor;
      if (!cursor) break;
    }
    expect(names).toContain(mine.name);
    expect(names).not.toContain(theirs.name);
    // Publishing mine onto q2 takes it out of this credential's sight (and it cannot do that itself).
    expectError(await workflowCommand(a1, mine.id, 'versions', { expected_revision: '1', version: chain(q2.id) }), 403, 'PERMISSION_DENIED');
    expectData(await workflowCommand(api(), mine.id, 'versions', { expected_revision: '1', version: chain(q2.id) }), 201);
    expectError(await call(f.gw.url, 'GET', `/v1/workflows/${mine.id}`, { token: only1.token }), 403, 'PERMISSION_DENIED');
  });
});

describe('queue retirement and workflow runs', () => {
  it('refused with RESOURCE_BUSY (reason workflow_runs, run ids) while a RUNNING or PAUSED run\u2019s version names the queue, reached or not', async () => {
    const q = await createQueue(f);
    // The queue is only in a compensation branch no run has reached.
    const version = {
      steps: [
        { key: 'a', task: stepTask(f.t.queue_id) },
        { key: 'undo', after: ['a'], run_if: 'any_failed', task: stepTask(q.id) },
      ],
    };
    const { workflow } = await newWorkflow(api(), version);
    // Version 2 no longer names the queue: its runs do not pin it.
    expectData(await workflowCommand(api(), workflow.id, 'versions', { expected_revision: '1', version: chain(f.t.queue_id) }), 201);
    await insertRun(f.db.pool, workflow, 2, 'RUNNING');
    const running = await insertRun(f.db.pool, workflow, 1, 'RUNNING');
    const paused = await insertRun(f.db.pool, workflow, 1, 'PAUSED');
    await insertRun(f.db.pool, workflow, 1, 'FAILED');
    const e = expectError(await retireQueue(q.id), 409, 'RESOURCE_BUSY');
    expect(e.details?.reasons).toEqual(['workflow_runs']);
    expect(e.details?.blockers).toEqual([{ reason: 'workflow_runs', count: 2, run_ids: [running, paused] }]);
    expect(e.message).toContain(running);
    await setRunState(f.db.pool, running, 'SUCCEEDED');
    expect(expectError(await retireQueue(q.id), 409, 'RESOURCE_BUSY').details?.blockers).toEqual([{ reason: 'workflow_runs', count: 1, run_ids: [paused] }]);
    await setRunState(f.db.pool, paused, 'CANCELLED');
    expectData(await retireQueue(q.id), 200);
    // The queue the other runs use is untouched by all this; and the retired one cannot be named again.
    expectError(await workflowCommand(api(), workflow.id, 'versions', { expected_revision: '2', version }), 409, 'RESOURCE_RETIRED');
  });

  it('a publish waits for a queue retirement in flight (share lock on the queue row) and is then refused RESOURCE_RETIRED', async () => {
    const q = await createQueue(f);
    const { workflow } = await newWorkflow(api(), chain(f.t.queue_id));
    // A retirement in flight: the queue row locked and changed, not committed.
    const conn = await f.db.pool.getConnection();
    try {
      await conn.query('BEGIN');
      await conn.query('UPDATE queues SET paused = 1, retired_at = UTC_TIMESTAMP(3) WHERE id = ?', [q.id]);
      let settled = false;
      const pub = workflowCommand(api(), workflow.id, 'versions', { expected_revision: '1', version: chain(q.id) }).finally(() => (settled = true));
      // The publish must be waiting on the queue row (a plain read would not wait, see the
      // committed, unretired queue, and publish a version naming a queue retired a moment later).
      await waitFor('the publish to wait on the queue row lock', async () => {
        if (settled) return true;
        // PROCESSLIST shows the gateway's connections (same database user): its statement is the
        // share-locking read of the version's queues, still running.
        const [rows] = await f.db.pool.query<RowDataPacket[]>(
          "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT id, retired_at FROM queues WHERE namespace_id%LOCK IN SHARE MODE'",
        );
        return Number(rows[0]!.n) > 0;
      });
      await conn.query('COMMIT');
      expect(expectError(await pub, 409, 'RESOURCE_RETIRED').details?.queue_id).toBe(q.id);
    } finally {
      conn.release();
    }
    expect(await count('workflow_versions', `workflow_id = '${workflow.id}'`)).toBe(1);
  });
});
