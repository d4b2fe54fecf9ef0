// SQL operations on workflow runs. A run row is locked after its transaction's task rows and
// before the hot rows (docs/design.md "Workflows").
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { WorkflowRunState } from '@orbit/protocol/states';
import type { WorkflowRunSummary } from '@orbit/protocol/workflow-views';
import { toIso, type Conn, type Pool, type Tx } from './pool.js';
import { Conditions, placeholders, byIdRead } from './placeholders.js';

export interface RunRow extends RowDataPacket {
  id: string;
  namespace_id: string;
  application_id: string;
  workflow_id: string;
  version: number;
  seq: string;
  state: WorkflowRunState;
  input: string;
  concurrency_key: Buffer | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  cancel_reason: string | null;
  created_by: string;
}

const COLUMNS = `id, namespace_id, application_id, workflow_id, version, seq, state, input, concurrency_key, created_at, updated_at,
  finished_at, cancel_reason, created_by`;

export function runSummaryView(r: RunRow): WorkflowRunSummary {
  const v: WorkflowRunSummary = {
    id: r.id,
    workflow_id: r.workflow_id,
    version: Number(r.version),
    state: r.state,
    created_at: toIso(r.created_at)!,
    updated_at: toIso(r.updated_at)!,
    finished_at: toIso(r.finished_at),
  };
  if (r.concurrency_key !== null) v.concurrency_key = r.concurrency_key.toString('utf8');
  return v;
}

const INSERTED = [
  'id',
  'namespace_id',
  'application_id',
  'workflow_id',
  'version',
  'input',
  'concurrency_key',
  'created_by',
] as const satisfies readonly (keyof RunRow)[];

/** The run's seq. */
export async function insertRun(c: Conn, r: Pick<RunRow, (typeof INSERTED)[number]>): Promise<string> {
  const [res] = await c.execute<ResultSetHeader>(
    `INSERT INTO workflow_runs (${INSERTED.join(', ')}, state, created_at, updated_at)
     VALUES (${placeholders(INSERTED.length)}, 'RUNNING', UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
    INSERTED.map((n) => r[n]),
  );
  // seq is the table's AUTO_INCREMENT column: the insert reports it.
  return String(res.insertId);
}

/** `lock` 'update' is taken by run commands after the run's tasks. */
export const getRun = byIdRead<RunRow>('workflow_runs', COLUMNS);

/** The caller already holds their changed tasks. */
export async function lockRuns(c: Tx, ids: string[]): Promise<RunRow[]> {
  if (ids.length === 0) return [];
  const sorted = [...new Set(ids)].sort();
  const [rows] = await c.query<RunRow[]>(`SELECT ${COLUMNS} FROM workflow_runs WHERE id IN (${placeholders(sorted.length)}) ORDER BY id FOR UPDATE`, sorted);
  return rows;
}

export async function setRunState(c: Conn, id: string, state: WorkflowRunState, cancelReason: string | null = null): Promise<void> {
  const final = state === 'SUCCEEDED' || state === 'FAILED' || state === 'CANCELLED';
  await c.execute(
    `UPDATE workflow_runs SET state = ?, updated_at = UTC_TIMESTAMP(3)${final ? ', finished_at = UTC_TIMESTAMP(3)' : ''}${
      cancelReason !== null ? ', cancel_reason = ?' : ''
    } WHERE id = ?`,
    cancelReason !== null ? [state, cancelReason, id] : [state, id],
  );
}

export interface RunFilter {
  namespaceId: string;
  workflowId?: string;
  state?: WorkflowRunState;
  beforeSeq?: string;
  limit: number;
}

export async function listRuns(pool: Pool, f: RunFilter): Promise<RunRow[]> {
  const where = new Conditions('namespace_id = ?', f.namespaceId);
  if (f.workflowId !== undefined) where.and('workflow_id = ?', f.workflowId);
  if (f.state !== undefined) where.and('state = ?', f.state);
  if (f.beforeSeq !== undefined) where.and('seq < ?', f.beforeSeq);
  const [rows] = await pool.query<RunRow[]>(`SELECT ${COLUMNS} FROM workflow_runs WHERE ${where} ORDER BY seq DESC LIMIT ?`, [...where.args, f.limit + 1]);
  return rows;
}

/** The rows of runs or of their steps by state, for the gauges. */
export async function countByState(pool: Pool, table: 'workflow_runs' | 'workflow_run_steps'): Promise<{ state: string; n: number }[]> {
  const [rows] = await pool.query<RowDataPacket[]>(`SELECT state, COUNT(*) AS n FROM ${table} GROUP BY state`);
  return rows.map((r) => ({ state: r.state as string, n: Number(r.n) }));
}
