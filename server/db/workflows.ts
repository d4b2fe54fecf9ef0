// SQL operations on workflow definitions. Lock order (docs/design.md "Workflows"): namespace row
// → workflow row → the version's queue rows in share mode → the task-creation path's locks.
import type { RowDataPacket } from 'mysql2/promise';
import type { Workflow } from '@orbit/protocol/workflow-views';
import { toIso, type Conn, type Pool } from './pool.js';
import { Conditions, placeholders, byIdRead } from './placeholders.js';

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

/** `lock` 'share' (a run start) serializes with retirement ('update') but not with other starts. */
export const getWorkflow = byIdRead<WorkflowRow>('workflows', COLUMNS);

/** A credential limited to some queues sees the workflows whose current version stays inside them. */
export async function listWorkflows(
  db: Pool | Conn,
  namespaceId: string,
  queueIds: '*' | string[],
  afterName: string | undefined,
  limit: number,
): Promise<WorkflowRow[]> {
  const where = new Conditions('w.namespace_id = ?', namespaceId);
  if (queueIds !== '*') {
    const allowed = queueIds.length === 0 ? '' : ` AND q.queue_id NOT IN (${placeholders(queueIds.length)})`;
    where.and(`NOT EXISTS (SELECT 1 FROM workflow_version_queues q WHERE q.workflow_id = w.id AND q.version = w.current_version${allowed})`, ...queueIds);
  }
  if (afterName !== undefined) where.and('w.name > ?', afterName);
  const cols = COLUMNS.split(', ')
    .map((c) => `w.${c}`)
    .join(', ');
  const [rows] = await db.query<WorkflowRow[]>(`SELECT ${cols} FROM workflows w WHERE ${where} ORDER BY w.name LIMIT ${Number(limit) + 1}`, where.args);
  return rows;
}

export async function insertWorkflow(c: Conn, w: Pick<WorkflowRow, 'id' | 'namespace_id' | 'application_id' | 'name'>, now: string): Promise<void> {
  await c.execute(
    `INSERT INTO workflows (id, namespace_id, application_id, name, revision, current_version, created_at, updated_at)
     VALUES (?, ?, ?, ?, 1, 1, ?, ?)`,
    [w.id, w.namespace_id, w.application_id, w.name, now, now],
  );
}

export async function setCurrentWorkflowVersion(c: Conn, id: string, number: number, now: string): Promise<void> {
  await c.execute('UPDATE workflows SET current_version = ?, revision = revision + 1, updated_at = ? WHERE id = ?', [number, now, id]);
}

/** Irreversible; frees its quota slot and keeps its name. */
export async function markWorkflowRetired(c: Conn, id: string, reason: string): Promise<void> {
  await c.execute(
    'UPDATE workflows SET retired_at = UTC_TIMESTAMP(3), retire_reason = ?, revision = revision + 1, updated_at = UTC_TIMESTAMP(3) WHERE id = ?',
    [reason, id],
  );
}

/** The caller holds the workflow row FOR UPDATE, so no run can start before the commit. */
export async function unfinishedRunsOfWorkflow(c: Conn, workflowId: string, limit: number): Promise<{ ids: string[]; count: number }> {
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT id, COUNT(*) OVER () AS n FROM workflow_runs WHERE workflow_id = ? AND state IN ('RUNNING','PAUSED') ORDER BY seq LIMIT ${Number(limit)}`,
    [workflowId],
  );
  return { ids: rows.map((r) => r.id as string), count: rows.length === 0 ? 0 : Number(rows[0]!.n) };
}
