// SQL operations on workflow versions: published once, never changed.
import type { RowDataPacket } from 'mysql2/promise';
import type { WorkflowStep, WorkflowVersion } from '@orbit/protocol/workflow-views';
import { toIso, type Conn, type Pool, type Tx } from './pool.js';
import { placeholders, placeholderRows } from './placeholders.js';
import type { QueueRow } from './queues.js';

export interface StoredWorkflowVersion {
  workflowId: string;
  number: number;
  namespaceId: string;
  applicationId: string;
  steps: WorkflowStep[];
  queueIds: string[];
  createdAt: string;
  createdBy: string;
}

/** What a read returns; the ids and the author are read by nothing. */
export type ReadWorkflowVersion = Pick<StoredWorkflowVersion, 'number' | 'steps' | 'queueIds' | 'createdAt'>;

const COLUMNS = 'number, steps, queue_ids, created_at';

function parsed(r: RowDataPacket): ReadWorkflowVersion {
  return {
    number: Number(r.number),
    steps: JSON.parse(r.steps as string) as WorkflowStep[],
    queueIds: JSON.parse(r.queue_ids as string) as string[],
    createdAt: r.created_at as string,
  };
}

export function workflowVersionView(v: ReadWorkflowVersion): WorkflowVersion {
  return { number: v.number, created_at: toIso(v.createdAt)!, steps: v.steps };
}

/** No lock: a version never changes once committed. */
export async function getVersion(db: Pool | Conn, workflowId: string, number: number): Promise<ReadWorkflowVersion | null> {
  const [rows] = await db.execute<RowDataPacket[]>(`SELECT ${COLUMNS} FROM workflow_versions WHERE workflow_id = ? AND number = ?`, [workflowId, number]);
  return rows[0] ? parsed(rows[0]) : null;
}

export async function listVersions(db: Pool | Conn, workflowId: string): Promise<ReadWorkflowVersion[]> {
  const [rows] = await db.execute<RowDataPacket[]>(`SELECT ${COLUMNS} FROM workflow_versions WHERE workflow_id = ? ORDER BY number`, [workflowId]);
  return rows.map(parsed);
}

/** The version row only; insertVersionQueues writes its queue rows. */
export async function insertVersion(c: Conn, v: StoredWorkflowVersion): Promise<void> {
  await c.execute(
    `INSERT INTO workflow_versions (workflow_id, number, namespace_id, application_id, steps, step_count, queue_ids, created_at, created_by)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [v.workflowId, v.number, v.namespaceId, v.applicationId, JSON.stringify(v.steps), v.steps.length, JSON.stringify(v.queueIds), v.createdAt, v.createdBy],
  );
}

export async function insertVersionQueues(
  c: Conn,
  v: Pick<StoredWorkflowVersion, 'workflowId' | 'number' | 'namespaceId' | 'applicationId' | 'queueIds'>,
): Promise<void> {
  if (v.queueIds.length === 0) return;
  const args: unknown[] = [];
  for (const q of v.queueIds) args.push(q, v.workflowId, v.number, v.namespaceId, v.applicationId);
  await c.query(
    `INSERT INTO workflow_version_queues (queue_id, workflow_id, version, namespace_id, application_id) VALUES ${placeholderRows(v.queueIds.length, '(?, ?, ?, ?, ?)')}`,
    args,
  );
}

export type VersionQueueRow = RowDataPacket & Pick<QueueRow, 'id' | 'retired_at'>;

/** Share-locked to the commit in id order. Queue retirement locks the row exclusively, so
 * whichever commits first wins. */
export async function lockVersionQueues(c: Tx, namespaceId: string, queueIds: readonly string[]): Promise<VersionQueueRow[]> {
  if (queueIds.length === 0) return [];
  const sorted = [...new Set(queueIds)].sort();
  const [rows] = await c.query<VersionQueueRow[]>(
    `SELECT id, retired_at FROM queues WHERE namespace_id = ? AND id IN (${placeholders(sorted.length)}) ORDER BY id LOCK IN SHARE MODE`,
    [namespaceId, ...sorted],
  );
  return rows;
}

/** The authorization check, without reading the steps. */
export async function versionQueueIds(db: Pool | Conn, workflowId: string, number: number): Promise<string[] | null> {
  const [rows] = await db.execute<RowDataPacket[]>('SELECT queue_ids FROM workflow_versions WHERE workflow_id = ? AND number = ?', [workflowId, number]);
  return rows[0] ? (JSON.parse(rows[0].queue_ids as string) as string[]) : null;
}
