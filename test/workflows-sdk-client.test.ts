// The SDK's HTTP client methods for workflow definitions against a real gateway: typed results,
// receipts (a replay is deduplicated), errors as OrbitApiError with code, status and details. The
// run methods (startWorkflowRun … getWorkflowRun) are exercised with the run endpoints.
import { describe, expect, it } from 'vitest';
import { createClient, OrbitApiError, type WorkflowVersionInput } from '../worker-sdk/index.js';
import { useGatewayFixture } from './support/fixture.js';
import { ikey } from './support/http.js';
import { insertRun, workflowName } from './support/workflows.js';

const f = useGatewayFixture();
const client = () => createClient({ url: f.gw.url, token: f.t.token });
const task = () => ({ queue_id: f.t.queue_id, handler: 'doc.fetch', handler_version: 'v1', payload_version: 'v1' });
const version = (): WorkflowVersionInput => ({
  steps: [
    { key: 'fetch', task: task() },
    { key: 'approve', after: ['fetch'], signal: { name: 'approved' } },
    { key: 'publish', after: ['approve'], task: { ...task(), params: { to: 'web' } } },
  ],
});

async function refusal(p: Promise<unknown>): Promise<OrbitApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OrbitApiError);
  return err as OrbitApiError;
}

describe('SDK workflow definition methods (real gateway)', () => {
  it('createWorkflow, publishWorkflowVersion, retireWorkflow and the reads', async () => {
    const c = client();
    const name = workflowName('sdk');
    const key = ikey('sdk');
    const created = await c.createWorkflow({ name, version: version() }, { idempotencyKey: key });
    expect(created.deduplicated).toBe(false);
    expect(created.workflow).toMatchObject({ name, revision: '1', current_version: 1, namespace_id: f.t.namespace_id });
    expect(created.version.steps.map((s) => s.key)).toEqual(['fetch', 'approve', 'publish']);
    expect(created.version.steps[2]!.task!.params).toEqual({ to: 'web' });
    expect(await c.createWorkflow({ name, version: version() }, { idempotencyKey: key })).toEqual({ ...created, deduplicated: true });
    const id = created.workflow.id;

    const published = await c.publishWorkflowVersion(
      id,
      { expected_revision: 1n, version: { steps: [{ key: 'one', task: task() }] } },
      { idempotencyKey: ikey('sdk') },
    );
    expect(published.workflow).toMatchObject({ revision: '2', current_version: 2 });
    expect(published.version.number).toBe(2);

    expect(await c.getWorkflow(id)).toEqual(published.workflow);
    expect((await c.listWorkflowVersions(id)).map((v) => v.number)).toEqual([1, 2]);
    expect(await c.getWorkflowVersion(id, 1)).toEqual(created.version);
    const page = await c.listWorkflows({ limit: 500 });
    expect(page.workflows.map((w) => w.id)).toContain(id);
    expect(page.next_cursor).toBeNull();

    const run = await insertRun(f.db.pool, created.workflow, 2, 'RUNNING');
    const busy = await refusal(c.retireWorkflow(id, { expected_revision: '2', reason: 'old' }, { idempotencyKey: ikey('sdk') }));
    expect(busy.code).toBe('RESOURCE_BUSY');
    expect(busy.status).toBe(409);
    expect(busy.details?.blockers).toEqual([{ reason: 'workflow_runs', count: 1, run_ids: [run] }]);
    await f.db.pool.query("UPDATE workflow_runs SET state = 'CANCELLED' WHERE id = ?", [run]);
    const retired = await c.retireWorkflow(id, { expected_revision: '2', reason: 'old' }, { idempotencyKey: ikey('sdk') });
    expect(retired.workflow.retired_at).toEqual(expect.any(String));
    expect(retired.workflow.revision).toBe('3');
  });

  it('refusals carry the code, status and details; a command without idempotencyKey is refused before any request', async () => {
    const c = client();
    const bad = await refusal(
      c.createWorkflow(
        {
          name: workflowName('sdk'),
          version: {
            steps: [
              { key: 'a', after: ['b'], task: task() },
              { key: 'b', after: ['a'], task: task() },
            ],
          },
        },
        { idempotencyKey: ikey('sdk') },
      ),
    );
    expect(bad.code).toBe('INVALID_ARGUMENT');
    expect(bad.status).toBe(400);
    expect(bad.details).toMatchObject({ steps: ['a', 'b'] });
    expect((await refusal(c.getWorkflow('0'.repeat(32)))).code).toBe('NOT_FOUND');
    expect((await refusal(c.getWorkflowVersion('0'.repeat(32), 1))).status).toBe(404);
    const noKey = await refusal(c.createWorkflow({ name: workflowName('sdk'), version: version() }, undefined as never));
    expect(noKey.status).toBe(0);
    expect(noKey.details).toEqual({ field: 'Idempotency-Key' });
  });
});
