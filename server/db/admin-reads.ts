// orbit-admin's reads: no credential, every namespace, no locks. Operator tools only.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from './pool.js';
import type { TaskState } from '@orbit/protocol/states';
import { TASK_COLUMNS, type TaskRow } from './tasks.js';
import type { QueueRow } from './queues.js';

export type AdminQueueRow = Pick<QueueRow, 'id' | 'name' | 'namespace_id' | 'paused' | 'retired_at' | 'max_active_attempts'> &
  RowDataPacket & { namespace: string; waiting: number | string; running: number | string };

/** Every queue with its namespace's name and its WAITING and LEASED+RUNNING counts. */
export async function queuesWithCounts(pool: Pool): Promise<AdminQueueRow[]> {
  const [rows] = await pool.query<AdminQueueRow[]>(
    `SELECT q.id, q.name, n.name AS namespace, q.namespace_id, q.paused, q.retired_at, q.max_active_attempts,
            (SELECT COUNT(*) FROM waiting_tasks w WHERE w.queue_id = q.id) AS waiting,
            (SELECT COUNT(*) FROM attempts a WHERE a.state IN ('LEASED','RUNNING') AND a.queue_id = q.id) AS running
       FROM queues q JOIN namespaces n ON n.id = q.namespace_id ORDER BY n.name, q.name`,
  );
  return rows;
}

/** The queues, in any namespace, whose id or name is `ref`. */
export async function queuesByRef(pool: Pool, ref: string): Promise<{ id: string; namespace_id: string; namespace: string }[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    'SELECT q.id, q.namespace_id, n.name AS namespace FROM queues q JOIN namespaces n ON n.id = q.namespace_id WHERE q.id = ? OR q.name = ?',
    [ref, ref],
  );
  return rows as { id: string; namespace_id: string; namespace: string }[];
}

/** The queue's newest tasks, optionally of one state. */
export async function tasksOfQueue(pool: Pool, queueId: string, state: TaskState | undefined, limit: number): Promise<TaskRow[]> {
  const [rows] = await pool.query<TaskRow[]>(
    `SELECT ${TASK_COLUMNS} FROM tasks
      WHERE namespace_id = (SELECT namespace_id FROM queues WHERE id = ?) AND queue_id = ?${state ? ' AND state = ?' : ''}
      ORDER BY seq DESC LIMIT ?`,
    state ? [queueId, queueId, state, limit] : [queueId, queueId, limit],
  );
  return rows;
}

export async function taskById(pool: Pool, id: string): Promise<TaskRow | null> {
  const [rows] = await pool.query<TaskRow[]>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ?`, [id]);
  return rows[0] ?? null;
}
