// Contract of the workflow definition endpoints (docs/workflows.md "Endpoints") with raw HTTP against a
// real gateway: create, publish, retire, reads and paging; the 409s, the 429 quota, receipts, scopes.
// Every 400 of the version validation: workflows-http-validation.test.ts. The queues of a version and queue retirement:
// workflows-http-queues.test.ts.
import { describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { call, ikey } from './support/http.js';
import { expectData, expectError, expectHexId, limitedCredential } from './support/contract.js';
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

const { f, api, count, definitionRows } = useWorkflowsFixture();
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /v1/workflows', () => {
  it('creates: 201 {workflow, version, deduplicated}; the version shows every default; one workflow_version_queues row per queue', async () => {
    const q2 = await createQueue(f, { retry: { max_attempts: 7 } });
    const name = workflowName();
    const version = {
      steps: [
        { key: 'fetch', task: stepTask(f.t.queue_id, { params: { mode: 'full' }, use_run_key: true, max_attempts: 3 }) },
        { key: 'split', after: ['fetch'], task: stepTask(q2.id) },
        { key: 'index', after: ['split'], for_each: 'split', task: stepTask(q2.id, { concurrency_key: 'index/main' }) },
        { key: 'approve', after: ['split'], signal: { name: 'approved' } },
        { key: 'publish', after: ['index', 'approve'], task: stepTask(f.t.queue_id, { deadline_seconds: 600 }), delay_seconds: 60 },
        { key: 'undo', after: ['publish'], run_if: 'any_failed', task: stepTask(f.t.queue_id) },
      ],
    };
    const data = expectData(await createWorkflow(api(), { name, version }), 201);
    expect(Object.keys(data).sort()).toEqual(['deduplicated', 'version', 'workflow']);
    expect(data.deduplicated).toBe(false);
    const w = data.workflow;
    expectHexId(w.id);
    expect(Object.keys(w).sort()).toEqual(['created_at', 'current_version', 'id', 'name', 'namespace_id', 'revision', 'updated_at']);
    expect(w).toMatchObject({ namespace_id: f.t.namespace_id, name, revision: '1', current_version: 1 });
    expect(w.created_at).toMatch(ISO_MS);
    expect(data.version.number).toBe(1);
    expect(data.version.created_at).toMatch(ISO_MS);
    const [fetch, split, index, approve, publish, undo] = data.version.steps;
    // max_attempts: given (3), else the queue's retry.max_attempts (7 for q2, the default 5 otherwise).
    expect(fetch).toEqual({
      key: 'fetch',
      after: [],
      delay_seconds: 0,
      task: {
        queue_id: f.t.queue_id,
        handler: 'doc.fetch',
        handler_version: 'v1',
        payload_version: 'v1',
        priority: 0,
        max_attempts: 3,
        deadline_seconds: expect.any(Number),
        params: { mode: 'full' },
        use_run_key: true,
      },
    });
    expect(split).toMatchObject({ key: 'split', after: ['fetch'], run_if: 'all_succeeded', task: { max_attempts: 7, params: {}, use_run_key: false } });
    expect(index).toMatchObject({ for_each: 'split', task: { concurrency_key: 'index/main', queue_id: q2.id } });
    expect(approve).toEqual({ key: 'approve', after: ['split'], run_if: 'all_succeeded', signal: { name: 'approved', timeout_seconds: 86400 } });
    expect(publish).toMatchObject({ delay_seconds: 60, after: ['index', 'approve'] });
    expect(undo).toMatchObject({ run_if: 'any_failed' });
    expect(publish.task.max_attempts).toBe(
      (await call(f.gw.url, 'GET', `/v1/queues/${f.t.queue_id}`, { token: f.t.token })).body.data.queue.retry.max_attempts,
    );
    const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT queue_id, version FROM workflow_version_queues WHERE workflow_id = ? ORDER BY queue_id', [
      w.id,
    ]);
    expect(rows.map((r) => [r.queue_id, Number(r.version)])).toEqual([f.t.queue_id, q2.id].sort().map((q) => [q, 1]));
    // The reads answer what the create answered.
    expect(expectData(await call(f.gw.url, 'GET', `/v1/workflows/${w.id}`, { token: f.t.token }), 200)).toEqual({ workflow: w });
    expect(expectData(await call(f.gw.url, 'GET', `/v1/workflows/${w.id}/versions/1`, { token: f.t.token }), 200)).toEqual({ version: data.version });
  });

  it('receipts: a replay answers the frozen reply (200, deduplicated) even after a publish; the same key with another body is 409 IDEMPOTENCY_CONFLICT', async () => {
    const key = ikey();
    const body = { name: workflowName(), version: chain(f.t.queue_id) };
    const first = expectData(await createWorkflow(api(), body, key), 201);
    expectData(await workflowCommand(api(), first.workflow.id, 'versions', { expected_revision: '1', version: chain(f.t.queue_id) }), 201);
    const again = expectData(await createWorkflow(api(), body, key), 200);
    expect(again).toEqual({ ...first, deduplicated: true });
    expect(again.workflow.revision).toBe('1');
    expectError(await createWorkflow(api(), { ...body, name: workflowName() }, key), 409, 'IDEMPOTENCY_CONFLICT');
    expect(await count('workflows', `name = '${body.name}'`)).toBe(1);
    // A publish replays too, frozen.
    const pkey = ikey();
    const pbody = { expected_revision: '2', version: chain(f.t.queue_id) };
    const p = expectData(await workflowCommand(api(), first.workflow.id, 'versions', pbody, pkey), 201);
    expect(p.version.number).toBe(3);
    expect(expectData(await workflowCommand(api(), first.workflow.id, 'versions', pbody, pkey), 200)).toEqual({ ...p, deduplicated: true });
    expect(await count('workflow_versions', `workflow_id = '${first.workflow.id}'`)).toBe(3);
  });

  it('concurrent commands with one Idempotency-Key execute once', async () => {
    const key = ikey();
    const body = { name: workflowName(), version: chain(f.t.queue_id) };
    const rs = await Promise.all(Array.from({ length: 8 }, () => createWorkflow(api(), body, key)));
    const statuses = rs.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.every((s) => s === 201 || s === 200)).toBe(true);
    expect(new Set(rs.map((r) => r.body.data.workflow.id)).size).toBe(1);
    expect(await count('workflows', `name = '${body.name}'`)).toBe(1);
    expect(await count('workflow_versions', `workflow_id = '${rs[0]!.body.data.workflow.id}'`)).toBe(1);
  });

  it('names are unique in the namespace forever (409 STATE_CONFLICT, also after retirement); another namespace may use the name', async () => {
    const name = workflowName();
    const { workflow } = await newWorkflow(api(), chain(f.t.queue_id), name);
    expect(expectError(await createWorkflow(api(), { name, version: chain(f.t.queue_id) }), 409, 'STATE_CONFLICT').details).toEqual({ field: 'name' });
    expectData(await workflowCommand(api(), workflow.id, 'retire', { expected_revision: '1', reason: 'done' }), 200);
    expectError(await createWorkflow(api(), { name, version: chain(f.t.queue_id) }), 409, 'STATE_CONFLICT');
    const other = await newTenant(f.db);
    expectData(await createWorkflow({ url: f.gw.url, token: other.token }, { name, version: chain(other.queue_id) }), 201);
  });

  it('at most 1 000 non-retired workflows per namespace: 429 QUOTA_EXCEEDED, nothing created; retiring one frees a slot', async () => {
    const t = await newTenant(f.db);
    const a = { url: f.gw.url, token: t.token };
    const { workflow } = await newWorkflow(a, chain(t.queue_id));
    // 999 more definitions written directly: the quota counts rows, however they came.
    const values = Array.from(
      { length: 999 },
      (_, i) => `(LPAD(HEX(${i + 1}), 32, 'f'), '${t.namespace_id}', '${t.application_id}', 'bulk-${i}', 1, 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
    );
    await f.db.pool.query(
      `INSERT INTO workflows (id, namespace_id, application_id, name, revision, current_version, created_at, updated_at) VALUES ${values.join(',')}`,
    );
    const before = await definitionRows();
    const e = expectError(await createWorkflow(a, { name: workflowName(), version: chain(t.queue_id) }), 429, 'QUOTA_EXCEEDED');
    expect(e.message).toMatch(/1000 non-retired workflows \(limit 1000\)/);
    expect(await definitionRows()).toEqual(before);
    expectData(await workflowCommand(a, workflow.id, 'retire', { expected_revision: '1', reason: 'make room' }), 200);
    expectData(await createWorkflow(a, { name: workflowName(), version: chain(t.queue_id) }), 201);
    expectError(await createWorkflow(a, { name: workflowName(), version: chain(t.queue_id) }), 429, 'QUOTA_EXCEEDED');
  });
});

describe('publish and retire', () => {
  it('publish: version n+1, revision bumps, older versions unchanged; a stale expected_revision is 409 STATE_CONFLICT', async () => {
    const { workflow, version: v1 } = await newWorkflow(api(), chain(f.t.queue_id));
    const v2body = { steps: [{ key: 'only', signal: { name: 'go', timeout_seconds: 60 } }] };
    const d = expectData(await workflowCommand(api(), workflow.id, 'versions', { expected_revision: '1', version: v2body }), 201);
    expect(d.workflow).toMatchObject({ id: workflow.id, revision: '2', current_version: 2 });
    expect(d.version).toMatchObject({ number: 2, steps: [{ key: 'only', after: [], signal: { name: 'go', timeout_seconds: 60 } }] });
    const e = expectError(
      await workflowCommand(api(), workflow.id, 'versions', { expected_revision: '1', version: chain(f.t.queue_id) }),
      409,
      'STATE_CONFLICT',
    );
    expect(e.details).toEqual({ field: 'expected_revision' });
    const list = expectData(await call(f.gw.url, 'GET', `/v1/workflows/${workflow.id}/versions`, { token: f.t.token }), 200);
    expect(list.versions).toEqual([v1, d.version]);
    // A version without task steps names no queue.
    expect(await count('workflow_version_queues', `workflow_id = '${workflow.id}' AND version = 2`)).toBe(0);
  });

  it('retire: revision bumps, retired_at set; refused with RESOURCE_BUSY naming up to 10 RUNNING/PAUSED runs; afterwards publish and retire are 409 RESOURCE_RETIRED', async () => {
    const { workflow } = await newWorkflow(api(), chain(f.t.queue_id));
    const runs: string[] = [];
    for (let i = 0; i < 11; i++) runs.push(await insertRun(f.db.pool, workflow, 1, i % 2 ? 'PAUSED' : 'RUNNING'));
    await insertRun(f.db.pool, workflow, 1, 'SUCCEEDED');
    const before = await definitionRows();
    const e = expectError(await workflowCommand(api(), workflow.id, 'retire', { expected_revision: '1', reason: 'old' }), 409, 'RESOURCE_BUSY');
    expect(e.details).toEqual({ reasons: ['workflow_runs'], blockers: [{ reason: 'workflow_runs', count: 11, run_ids: runs.slice(0, 10) }] });
    expect(e.message).toContain(runs[0]);
    expect(e.message).not.toContain(runs[10]);
    expect(await definitionRows()).toEqual(before);
    for (const [i, id] of runs.entries()) await setRunState(f.db.pool, id, ['SUCCEEDED', 'FAILED', 'CANCELLED'][i % 3]!);
    const d = expectData(await workflowCommand(api(), workflow.id, 'retire', { expected_revision: '1', reason: 'old' }), 200);
    expect(Object.keys(d).sort()).toEqual(['deduplicated', 'workflow']);
    expect(d.workflow).toMatchObject({ revision: '2', current_version: 1 });
    expect(d.workflow.retired_at).toMatch(ISO_MS);
    expectError(await workflowCommand(api(), workflow.id, 'retire', { expected_revision: '2', reason: 'again' }), 409, 'RESOURCE_RETIRED');
    expectError(await workflowCommand(api(), workflow.id, 'versions', { expected_revision: '2', version: chain(f.t.queue_id) }), 409, 'RESOURCE_RETIRED');
    // Reads keep working.
    expect(expectData(await call(f.gw.url, 'GET', `/v1/workflows/${workflow.id}`, { token: f.t.token }), 200).workflow).toEqual(d.workflow);
  });

  it('retire body: reason 1-512 characters, expected_revision required', async () => {
    const { workflow } = await newWorkflow(api(), chain(f.t.queue_id));
    expectError(await workflowCommand(api(), workflow.id, 'retire', { expected_revision: '1', reason: '' }), 400, 'INVALID_ARGUMENT');
    expectError(await workflowCommand(api(), workflow.id, 'retire', { expected_revision: '1', reason: 'x'.repeat(513) }), 400, 'INVALID_ARGUMENT');
    expectError(await workflowCommand(api(), workflow.id, 'retire', { reason: 'x' }), 400, 'INVALID_ARGUMENT');
    expectError(await workflowCommand(api(), '0'.repeat(32), 'retire', { expected_revision: '1', reason: 'x' }), 404, 'NOT_FOUND');
  });
});

describe('reads', () => {
  it('lists by name with limit 1-500 and an opaque cursor; bad limit, cursor or parameter is 400', async () => {
    const t = await newTenant(f.db);
    const a = { url: f.gw.url, token: t.token };
    const names = ['c-wf', 'a-wf', 'b-wf'];
    for (const n of names) await newWorkflow(a, chain(t.queue_id), n);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const d: any = expectData(await call(f.gw.url, 'GET', `/v1/workflows?limit=1${cursor ? `&cursor=${cursor}` : ''}`, { token: t.token }), 200);
      expect(d.workflows.length).toBeLessThanOrEqual(1);
      seen.push(...d.workflows.map((w: any) => w.name));
      cursor = d.next_cursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(['a-wf', 'b-wf', 'c-wf']);
    expect(pages).toBe(3);
    const all = expectData(await call(f.gw.url, 'GET', '/v1/workflows', { token: t.token }), 200);
    expect(all.workflows.map((w: any) => w.name)).toEqual(['a-wf', 'b-wf', 'c-wf']);
    expect(all.next_cursor).toBeNull();
    for (const q of ['limit=0', 'limit=501', 'limit=abc', 'cursor=zzz', 'colour=red', 'limit=1&limit=2']) {
      expectError(await call(f.gw.url, 'GET', `/v1/workflows?${q}`, { token: t.token }), 400, 'INVALID_ARGUMENT');
    }
    expectData(await call(f.gw.url, 'GET', '/v1/workflows?limit=500', { token: t.token }), 200);
  });

  it('a malformed or unknown id, another namespace\u2019s workflow and a malformed or unknown version number are 404', async () => {
    const { workflow } = await newWorkflow(api(), chain(f.t.queue_id));
    const other = await newTenant(f.db);
    for (const p of [
      '/v1/workflows/not-an-id',
      `/v1/workflows/${'0'.repeat(32)}`,
      `/v1/workflows/${workflow.id.toUpperCase()}`,
      '/v1/workflows/%C3%A9/versions',
    ]) {
      expectError(await call(f.gw.url, 'GET', p, { token: f.t.token }), 404, 'NOT_FOUND');
    }
    expectError(await call(f.gw.url, 'GET', `/v1/workflows/${workflow.id}`, { token: other.token }), 404, 'NOT_FOUND');
    for (const n of ['0', '2', 'abc', '01', '1e0', '99999999999']) {
      expectError(await call(f.gw.url, 'GET', `/v1/workflows/${workflow.id}/versions/${n}`, { token: f.t.token }), 404, 'NOT_FOUND');
    }
    expectError(await call(f.gw.url, 'GET', `/v1/workflows/${workflow.id}?x=1`, { token: f.t.token }), 400, 'INVALID_ARGUMENT');
  });

  it('scopes: reads need workflows:manage, workflows:run or tasks:read; commands need workflows:manage', async () => {
    const { workflow } = await newWorkflow(api(), chain(f.t.queue_id));
    for (const scope of ['workflows:manage', 'workflows:run', 'tasks:read'] as const) {
      const c = await limitedCredential(f.db, f.t.namespace_id, [scope]);
      expectData(await call(f.gw.url, 'GET', `/v1/workflows/${workflow.id}/versions`, { token: c.token }), 200);
      expectData(await call(f.gw.url, 'GET', '/v1/workflows', { token: c.token }), 200);
    }
    const none = await limitedCredential(f.db, f.t.namespace_id, ['tasks:submit', 'queues:manage', 'schedules:manage']);
    expectError(await call(f.gw.url, 'GET', `/v1/workflows/${workflow.id}`, { token: none.token }), 403, 'PERMISSION_DENIED');
    const runner = await limitedCredential(f.db, f.t.namespace_id, ['workflows:run', 'tasks:read']);
    const a = { url: f.gw.url, token: runner.token };
    expectError(await createWorkflow(a, { name: workflowName(), version: chain(f.t.queue_id) }), 403, 'PERMISSION_DENIED');
    expectError(await workflowCommand(a, workflow.id, 'versions', { expected_revision: '1', version: chain(f.t.queue_id) }), 403, 'PERMISSION_DENIED');
    expectError(await workflowCommand(a, workflow.id, 'retire', { expected_revision: '1', reason: 'x' }), 403, 'PERMISSION_DENIED');
  });
});
