// SQL operations on the application quota counters.
import { checkedAssignment, type CheckedUpdate } from './conditional-commit.js';
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from './pool.js';

/** maxUnfinishedTasks(application_id) → the application's quota of unfinished tasks, or undefined
 * when there is no such application (stated in the 429 that refuses a submit). */
export async function maxUnfinishedTasks(c: Conn, applicationId: string): Promise<number | undefined> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT max_unfinished_tasks FROM applications WHERE id = ?', [applicationId]);
  return rows[0] ? Number(rows[0].max_unfinished_tasks) : undefined;
}

/** reserveUnfinishedTask(application_id) → false when the quota of unfinished tasks is reached.
 * Conditional update: the check and the increment are one statement (no snapshot read). */
export async function reserveUnfinishedTask(c: Conn, applicationId: string): Promise<boolean> {
  const [res] = await c.execute('UPDATE applications SET unfinished_tasks = unfinished_tasks + 1 WHERE id = ? AND unfinished_tasks < max_unfinished_tasks', [
    applicationId,
  ]);
  return (res as { affectedRows: number }).affectedRows === 1;
}

/** releaseUnfinishedTasks(application_id, n): tasks that became terminal. */
export async function releaseUnfinishedTasks(c: Conn, applicationId: string, n: number): Promise<void> {
  await c.execute('UPDATE applications SET unfinished_tasks = unfinished_tasks - ? WHERE id = ?', [n, applicationId]);
}

/** reserveUnfinishedTasks(application_id, k) → false when k more would pass the quota. The last
 * statement of a submit transaction (the application row is the widest, hottest lock a
 * transaction takes, so it is held only from here to the commit). */
export async function reserveUnfinishedTasks(c: Conn, applicationId: string, k: number): Promise<boolean> {
  const [res] = await c.execute(
    'UPDATE applications SET unfinished_tasks = unfinished_tasks + ? WHERE id = ? AND unfinished_tasks + ? <= max_unfinished_tasks',
    [k, applicationId, k],
  );
  return (res as { affectedRows: number }).affectedRows === 1;
}

/** unfinishedTasksReservation(application_id, k): reserveUnfinishedTasks as a checked update for
 * commitIfApplied (db/conditional-commit.ts): refused when k more would pass the quota. The
 * application is the submitting credential's, read in the same transaction. */
export function unfinishedTasksReservation(applicationId: string, k: number): CheckedUpdate {
  return {
    sql: `UPDATE applications SET ${checkedAssignment('applications', 'unfinished_tasks', 'unfinished_tasks + ? <= max_unfinished_tasks', 'unfinished_tasks + ?')} WHERE id = ?`,
    values: [k, k, applicationId],
  };
}
