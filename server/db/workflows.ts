// SQL operations on workflow definitions (workflows.md). Each function is one statement. Times are
// DATETIME(3) strings in UTC; the database clock decides every "now".
//
// Locks, in the repository's order (docs/design.md "Workflows"): namespace row (create: name and
// quota) → workflow row (FOR UPDATE by publish and retire; a run start takes it in share mode, so a
// retirement that read no unfinished run cannot commit beside a run that starts) → the version's
// queue rows in share mode (db/workflow-versions.ts lockVersionQueues; queue retirement takes one
// exclusively, then reads the unfinished runs that pin it) → the task-creation path's own locks.
import type { RowDataPacket } from 'mysql2/promise';
import type { Workflow } from '@orbit/protocol/workflow-views';
import { isId } from '@orbit/protocol/ids';
import type { Conn, Pool, Tx } from './pool.js';
import { toIso } from './pool.js';
import { placeholders } from './placeholders.js';

export interface WorkflowRow extends RowDataPacket {
  id: string;
  namespace_id: string;
  application_id: string;
  name: string;
  revision: string;
  current_version: number;
  created_at: string;
  updated_at: string;
  retired_at: string | null;
}

const COLUMNS = 'id, namespace_id, application_id, name, revision, current_version, created_at, updated_at, retired_at';

/** The wire shape (protocol/workflow-views.ts). */
export function workflowView(r: WorkflowRow): Workflow {
  const v: Workflow = {
    id: r.id,
    namespace_id: r.namespace_id,
    name: r.name,
    revision: String(r.revision),
    current_version: Number(r.current_version),
    created_at: toIso(r.created_at)!,
    updated_at: toIso(r.updated_at)!,
  };
  if (r.retired_at) v.retired_at = toIso(r.retired_at)!;
  return v;
}

/** getWorkflow(namespace_id, id, lock?) → row or null. 'update': publish and retire; 'share': a run
 * start (serializes with retirement, lets concurrent starts through). A malformed id → null, no SQL. */
// Unlocked on the pool or any connection; locked only in a transaction (the lock lasts to its end).
export async function getWorkflow(db: Pool | Conn, namespaceId: string, id: string): Promise<WorkflowRow | null>;
export async function getWorkflow(tx: Tx, namespaceId: string, id: string, lock: 'none' | 'share' | 'update'): Promise<WorkflowRow | null>;
export async function getWorkflow(db: Pool | Conn, namespaceId: string, id: string, lock: 'none' | 'share' | 'update' = 'none'): Promise<WorkflowRow | null> {
  if (!isId(id)) return null;
  const suffix = lock === 'share' ? ' LOCK IN SHARE MODE' : lock === 'update' ? ' FOR UPDATE' : '';
  const [rows] = await db.execute<WorkflowRow[]>(`SELECT ${COLUMNS} FROM workflows WHERE id = ? AND namespace_id = ?${suffix}`, [id, namespaceId]);
  return rows[0] ?? null;
}

/** listWorkflows(namespace_id, queue_ids, after_name?, limit) → rows by name, at most limit + 1. A
 * credential limited to some queues sees the workflows whose current version names none outside
 * them (workflow_version_queues by its primary key's queue prefix is not usable here; the
 * anti-join reads the current version's few rows per workflow). */
export async function listWorkflows(
  db: Pool | Conn,
  namespaceId: string,
  queueIds: '*' | string[],
  afterName: string | undefined,
  limit: number,
): Promise<WorkflowRow[]> {
  const where = ['w.namespace_id = ?'];
  const args: unknown[] = [namespaceId];
  if (queueIds !== '*') {
    const allowed = queueIds.length === 0 ? '' : ` AND q.queue_id NOT IN (${placeholders(queueIds.length)})`;
    where.push(`NOT EXISTS (SELECT 1 FROM workflow_version_queues q WHERE q.workflow_id = w.id AND q.version = w.current_version${allowed})`);
    args.push(...queueIds);
  }
  if (afterName !== undefined) {
    where.push('w.name > ?');
    args.push(afterName);
  }
  const cols = COLUMNS.split(', ')
    .map((c) => `w.${c}`)
    .join(', ');
  const [rows] = await db.query<WorkflowRow[]>(`SELECT ${cols} FROM workflows w WHERE ${where.join(' AND ')} ORDER BY w.name LIMIT ${Number(limit) + 1}`, args);
  return rows;
}

/** countActiveWorkflows(namespace_id) → non-retired workflows (the namespace quota). The caller
 * holds the namespace row FOR UPDATE, so two creates cannot both take the last slot. */
export async function countActiveWorkflows(c: Conn, namespaceId: string): Promise<number> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT COUNT(*) AS n FROM workflows WHERE namespace_id = ? AND retired_at IS NULL', [namespaceId]);
  return Number(rows[0]!.n);
}

export interface NewWorkflow {
  id: string;
  namespaceId: string;
  applicationId: string;
  name: string;
  now: string;
}

/** insertWorkflow(id, namespace_id, application_id, name, now): revision 1, version 1 current; a used
 * name (retired ones included) → ER_DUP_ENTRY. */
export async function insertWorkflow(c: Conn, w: NewWorkflow): Promise<void> {
  await c.execute(
    `INSERT INTO workflows (id, namespace_id, application_id, name, revision, current_version, created_at, updated_at)
     VALUES (?, ?, ?, ?, 1, 1, ?, ?)`,
    [w.id, w.namespaceId, w.applicationId, w.name, w.now, w.now],
  );
}

/** setCurrentWorkflowVersion(id, number, now): a publication; bumps revision. The caller holds the row FOR UPDATE. */
export async function setCurrentWorkflowVersion(c: Conn, id: string, number: number, now: string): Promise<void> {
  await c.execute('UPDATE workflows SET current_version = ?, revision = revision + 1, updated_at = ? WHERE id = ?', [number, now, id]);
}

/** markWorkflowRetired(id, reason): irreversible; frees its slot of the namespace quota, keeps its
 * name; bumps revision. The caller holds the row FOR UPDATE. */
export async function markWorkflowRetired(c: Conn, id: string, reason: string): Promise<void> {
  await c.execute(
    'UPDATE workflows SET retired_at = UTC_TIMESTAMP(3), retire_reason = ?, revision = revision + 1, updated_at = UTC_TIMESTAMP(3) WHERE id = ?',
    [reason, id],
  );
}

/** unfinishedRunsOfWorkflow(workflow_id, limit) → ids of its RUNNING and PAUSED runs, oldest first,
 * at most `limit`, and their total (workflow_runs (workflow_id, state, version)). The caller holds
 * the workflow row FOR UPDATE and a run start takes it in share mode, so none can start between
 * this read and the commit. */
export async function unfinishedRunsOfWorkflow(c: Conn, workflowId: string, limit: number): Promise<{ ids: string[]; count: number }> {
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT id, COUNT(*) OVER () AS n FROM workflow_runs WHERE workflow_id = ? AND state IN ('RUNNING','PAUSED') ORDER BY seq LIMIT ${Number(limit)}`,
    [workflowId],
  );
  return { ids: rows.map((r) => r.id as string), count: rows.length === 0 ? 0 : Number(rows[0]!.n) };
}
