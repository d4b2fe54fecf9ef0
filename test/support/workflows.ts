// Helpers of the workflow tests: version bodies, raw calls of the definition endpoints, and a run
// row written as the run start writes it (migration 000006), for the refusals that look at runs.
import type { Pool } from '../../server/db/pool.js';
import { newId } from '../../server/ids.js';
import { call, ikey, type RawResponse } from './http.js';
import { useGatewayFixture, type GatewayFixtureOptions } from './fixture.js';

export interface Api {
  url: string;
  token: string;
}

/** A task step's task on `queueId`; `over` replaces or adds fields. */
export function stepTask(queueId: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { queue_id: queueId, handler: 'doc.fetch', handler_version: 'v1', payload_version: 'v1', ...over };
}

/** A 3-step chain a → b → c on `queueId`. */
export function chain(queueId: string): { steps: Record<string, unknown>[] } {
  return {
    steps: [
      { key: 'a', task: stepTask(queueId) },
      { key: 'b', after: ['a'], task: stepTask(queueId) },
      { key: 'c', after: ['b'], task: stepTask(queueId) },
    ],
  };
}

let n = 0;
export const workflowName = (p = 'wf') => `${p}-${process.pid}-${++n}`;

export const createWorkflow = (a: Api, body: unknown, key = ikey('wf')): Promise<RawResponse> =>
  call(a.url, 'POST', '/v1/workflows', { token: a.token, key, body });

/** POST /v1/workflows/{id}/versions ('versions') or /v1/workflows/{id}:<action>. */
export const workflowCommand = (a: Api, id: string, action: string, body: unknown, key = ikey('wf')): Promise<RawResponse> =>
  call(a.url, 'POST', action === 'versions' ? `/v1/workflows/${id}/versions` : `/v1/workflows/${id}:${action}`, { token: a.token, key, body });

/** Creates a workflow; returns {workflow, version}; throws on anything but 201. */
export async function newWorkflow(a: Api, version: unknown, name = workflowName()): Promise<{ workflow: any; version: any }> {
  const r = await createWorkflow(a, { name, version });
  if (r.status !== 201) throw new Error(r.text);
  return r.body.data;
}

/** A run row as the run start writes it (its steps and tasks are not needed by the definition
 * side: only the run's state and version pin the workflow and its queues). Returns the run id. */
export async function insertRun(pool: Pool, workflow: { id: string; namespace_id: string }, version: number, state: string): Promise<string> {
  const id = newId();
  await pool.query(
    `INSERT INTO workflow_runs (id, namespace_id, application_id, workflow_id, version, state, input, concurrency_key, created_at, updated_at, created_by)
     SELECT ?, w.namespace_id, w.application_id, w.id, ?, ?, 'null', NULL, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), ? FROM workflows w WHERE w.id = ?`,
    [id, version, state, '0'.repeat(32), workflow.id],
  );
  return id;
}

export async function setRunState(pool: Pool, runId: string, state: string): Promise<void> {
  await pool.query("UPDATE workflow_runs SET state = ?, finished_at = IF(? IN ('RUNNING','PAUSED'), NULL, UTC_TIMESTAMP(3)) WHERE id = ?", [
    state,
    state,
    runId,
  ]);
}

/** countRows(pool, table, where) → COUNT(*) of the rows matching `where` (test SQL, trusted text). */
export async function countRows(pool: Pool, table: string, where = '1'): Promise<number> {
  const [rows] = (await pool.query(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`)) as unknown as [{ n: number | string }[]];
  return Number(rows[0]!.n);
}

/** Row counts of every workflow definition table and the receipts: a refused command changes none. */
export async function definitionRowCounts(pool: Pool): Promise<number[]> {
  const out: number[] = [];
  for (const t of ['workflows', 'workflow_versions', 'workflow_version_queues', 'receipts']) out.push(await countRows(pool, t));
  return out;
}

/** The set-up of the workflow endpoint suites (useGatewayFixture, test/support/fixture.ts): the
 * file's fixture, its tenant as an Api, and the row counters bound to its database. */
export function useWorkflowsFixture(opts: GatewayFixtureOptions = {}) {
  const f = useGatewayFixture(opts);
  return {
    f,
    api: (): Api => ({ url: f.gw.url, token: f.t.token }),
    count: (table: string, where?: string) => countRows(f.db.pool, table, where),
    /** Rows of every definition table and the receipts: a refused command must change none. */
    definitionRows: () => definitionRowCounts(f.db.pool),
  };
}
