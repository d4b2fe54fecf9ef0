// SQL operations on workflow runs (workflow_runs, migration 000006). One function per statement.
// Lock order (docs/design.md "Workflows"): a run row is locked after the task rows of its
// transaction (results and the sweeper hold attempts and tasks first; run commands lock the run's
// tasks, then the run) and before the hot rows (queues, application, stream head).
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { WorkflowRunState } from '@orbit/protocol/states';
import type { WorkflowRunSummary } from '@orbit/protocol/workflow-views';
import { isId } from '@orbit/protocol/ids';
import { toIso, type Conn, type Pool, type Tx } from './pool.js';
import { placeholders } from './placeholders.js';

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

/** The listed shape: without steps and input. */
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

export interface NewRun {
  id: string;
  namespaceId: string;
  applicationId: string;
  workflowId: string;
  version: number;
  inputJson: string;
  concurrencyKey: string | null;
  createdBy: string;
}

/** insertRun(run) → its seq (start order) and created_at (database clock), state RUNNING. The run
 * row is new: no other transaction can lock it before the commit. */
export async function insertRun(c: Conn, r: NewRun): Promise<{ seq: string; createdAt: string }> {
  const [res] = await c.execute<ResultSetHeader>(
    `INSERT INTO workflow_runs (id, namespace_id, application_id, workflow_id, version, state, input, concurrency_key, created_at, updated_at, created_by)
     VALUES (?, ?, ?, ?, ?, 'RUNNING', ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), ?)`,
    [
      r.id,
      r.namespaceId,
      r.applicationId,
      r.workflowId,
      r.version,
      r.inputJson,
      r.concurrencyKey === null ? null : Buffer.from(r.concurrencyKey, 'utf8'),
      r.createdBy,
    ],
  );
  const [rows] = await c.execute<RowDataPacket[]>('SELECT seq, created_at FROM workflow_runs WHERE id = ?', [r.id]);
  return { seq: String(res.insertId || rows[0]!.seq), createdAt: rows[0]!.created_at as string };
}

/** getRun(namespace, id, lock?) → the run or null; `lock`: FOR UPDATE (the run commands, after
 * they locked the run's tasks). */
// Unlocked on the pool or any connection; locked only in a transaction (the lock lasts to its end).
export async function getRun(db: Pool | Conn, namespaceId: string, id: string): Promise<RunRow | null>;
export async function getRun(tx: Tx, namespaceId: string, id: string, lock: boolean): Promise<RunRow | null>;
export async function getRun(db: Pool | Conn, namespaceId: string, id: string, lock = false): Promise<RunRow | null> {
  if (!isId(id)) return null;
  const [rows] = await db.execute<RunRow[]>(`SELECT ${COLUMNS} FROM workflow_runs WHERE id = ? AND namespace_id = ?${lock ? ' FOR UPDATE' : ''}`, [
    id,
    namespaceId,
  ]);
  return rows[0] ?? null;
}

/** lockRuns(ids) → the runs, locked FOR UPDATE in id order (advancement: the runs whose step tasks
 * changed in this transaction; the caller already holds those tasks). */
export async function lockRuns(c: Tx, ids: string[]): Promise<RunRow[]> {
  if (ids.length === 0) return [];
  const sorted = [...new Set(ids)].sort();
  const [rows] = await c.query<RunRow[]>(`SELECT ${COLUMNS} FROM workflow_runs WHERE id IN (${placeholders(sorted.length)}) ORDER BY id FOR UPDATE`, sorted);
  return rows;
}

/** setRunState(id, state, cancel_reason?): the run's state, updated_at, and finished_at when the
 * state is final. The caller holds the run row. */
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
  /** seq of the last run of the previous page (newest first). */
  beforeSeq?: string;
  limit: number;
}

/** listRuns(filter) → runs newest first (seq DESC), at most limit + 1 (to know if more exist). No
 * lock. Indexes: (namespace_id, seq), (namespace_id, workflow_id, seq), (namespace_id, state, seq). */
export async function listRuns(pool: Pool, f: RunFilter): Promise<RunRow[]> {
  const where = ['namespace_id = ?'];
  const args: unknown[] = [f.namespaceId];
  if (f.workflowId !== undefined) {
    where.push('workflow_id = ?');
    args.push(f.workflowId);
  }
  if (f.state !== undefined) {
    where.push('state = ?');
    args.push(f.state);
  }
  if (f.beforeSeq !== undefined) {
    where.push('seq < ?');
    args.push(f.beforeSeq);
  }
  const [rows] = await pool.query<RunRow[]>(`SELECT ${COLUMNS} FROM workflow_runs WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`, [
    ...args,
    f.limit + 1,
  ]);
  return rows;
}

/** countRunsByState() → runs per state over every namespace (the metrics scrape; no lock). */
export async function countRunsByState(pool: Pool): Promise<{ state: WorkflowRunState; n: number }[]> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT state, COUNT(*) AS n FROM workflow_runs GROUP BY state');
  return rows.map((r) => ({ state: r.state as WorkflowRunState, n: Number(r.n) }));
}
