// Tests that move a task's times or state in SQL (instead of sleeping or dispatching) change the
// task's claimable copy too: since migration 000007 a WAITING task has a waiting_tasks row that
// claims, hand-offs and the deadline sweep read (not_before, deadline_at, created_at are copied).
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../../server/db/pool.js';

type TimeColumn = 'deadline_at' | 'not_before' | 'created_at';

/** Sets one time column of tasks `ids` to the SQL expression `expr` (e.g. "UTC_TIMESTAMP(3) -
 * INTERVAL 1 SECOND") in the task rows and in their waiting rows when they have one. */
export async function setTaskTime(pool: Pool, ids: string | string[], column: TimeColumn, expr: string, args: unknown[] = []): Promise<void> {
  const list = Array.isArray(ids) ? ids : [ids];
  await pool.query(
    `UPDATE tasks t LEFT JOIN waiting_tasks w ON (w.queue_id, w.priority, w.seq) = (t.queue_id, t.priority, t.seq)
        SET t.${column} = ${expr}, w.${column} = ${expr} WHERE t.id IN (?)`,
    [...args, ...args, list],
  );
  // A row given a not_before is always claimable, and its group's next row without not_before may
  // now be the head: flag them all (over-flagging keeps the invariant, waitingHeadViolations).
  if (column === 'not_before') await pool.query('UPDATE waiting_tasks SET claimable = 1 WHERE claimable = 0');
}

/** After tasks were inserted or moved out of WAITING in SQL: the waiting rows of the database made
 * to match (rows of tasks no longer WAITING deleted, missing ones of WAITING tasks inserted). */
export async function syncWaiting(pool: Pool): Promise<void> {
  await pool.query(`DELETE w FROM waiting_tasks w JOIN tasks t ON t.id = w.task_id WHERE t.state <> 'WAITING'`);
  await pool.query(
    `INSERT INTO waiting_tasks (queue_id, priority, seq, task_id, namespace_id, application_id, handler, handler_version, concurrency_key,
        not_before, deadline_at, created_at)
     SELECT t.queue_id, t.priority, t.seq, t.id, t.namespace_id, t.application_id, t.handler, t.handler_version, t.concurrency_key,
            t.not_before, t.deadline_at, t.created_at
       FROM tasks t WHERE t.state = 'WAITING'
        AND NOT EXISTS (SELECT 1 FROM waiting_tasks w WHERE (w.queue_id, w.priority, w.seq) = (t.queue_id, t.priority, t.seq))`,
  );
  // Rows deleted here may have been their group's head: flag every row (over-flagging keeps the
  // waiting-heads invariant; inserted rows are flagged by the column's default).
  await pool.query('UPDATE waiting_tasks SET claimable = 1 WHERE claimable = 0');
}

/** The rows that break the waiting-heads flag rule (migration 000009, db/waiting-tasks.ts): an
 * unkeyed row or a row with not_before unflagged, or a group (namespace, key, queue, handler,
 * version) whose first row without not_before in claim order is unflagged (of `namespaceId`, or
 * of every namespace). Empty when it holds. */
export async function waitingHeadViolations(pool: Pool, namespaceId?: string): Promise<RowDataPacket[]> {
  const ns = namespaceId === undefined ? '' : ' AND namespace_id = ?';
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT 'unflagged row' AS what, task_id, queue_id, priority, seq FROM waiting_tasks
      WHERE claimable = 0 AND (concurrency_key IS NULL OR not_before IS NOT NULL)${ns}
     UNION ALL
     SELECT 'unflagged head', task_id, queue_id, priority, seq FROM (
       SELECT task_id, queue_id, priority, seq, claimable,
              ROW_NUMBER() OVER (PARTITION BY namespace_id, concurrency_key, queue_id, handler, handler_version ORDER BY priority DESC, seq) AS n
         FROM waiting_tasks WHERE concurrency_key IS NOT NULL AND not_before IS NULL${ns}) g
      WHERE n = 1 AND claimable = 0`,
    namespaceId === undefined ? [] : [namespaceId, namespaceId],
  );
  return rows;
}
