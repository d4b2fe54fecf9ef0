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

/** releaseUnfinishedTasks(application_id, n): tasks that became terminal. */
export async function releaseUnfinishedTasks(c: Conn, applicationId: string, n: number): Promise<void> {
  await c.execute('UPDATE applications SET unfinished_tasks = unfinished_tasks - ? WHERE id = ?', [n, applicationId]);
}

/** unfinishedTasksReservation(application_id, k): k more unfinished tasks, a checked update
 * (db/conditional-commit.ts) refused when they would pass the quota — the one definition of the
 * quota check of every task creation (commitIfApplied with a submit's COMMIT, applyChecked inside
 * a schedule's or workflow's transaction). The last statement of a submit transaction (the
 * application row is the widest, hottest lock a transaction takes, so it is held only from there
 * to the commit). The application is the submitting credential's (applications are never
 * deleted, so the row exists). */
export function unfinishedTasksReservation(applicationId: string, k: number): CheckedUpdate {
  return {
    sql: `UPDATE applications SET ${checkedAssignment('applications', 'unfinished_tasks', 'unfinished_tasks + ? <= max_unfinished_tasks', 'unfinished_tasks + ?')} WHERE id = ?`,
    values: [k, k, applicationId],
    column: 'unfinished_tasks',
  };
}
