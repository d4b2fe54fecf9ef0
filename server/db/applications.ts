// SQL operations on the application quota counters.
import { checkedAssignment, type CheckedUpdate } from './conditional-commit.js';
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from './pool.js';

/** The quota stated in the 429 that refuses a submit, or undefined for no such application. */
export async function maxUnfinishedTasks(c: Conn, applicationId: string): Promise<number | undefined> {
  const [rows] = await c.execute<RowDataPacket[]>('SELECT max_unfinished_tasks FROM applications WHERE id = ?', [applicationId]);
  return rows[0] ? Number(rows[0].max_unfinished_tasks) : undefined;
}

/** A checked update for k more unfinished tasks, refused past the quota: the quota check of every
 * task creation. It is a submit's last statement because the application row is the hottest lock
 * a transaction takes, so it is held only from there to the commit. */
export function unfinishedTasksReservation(applicationId: string, k: number): CheckedUpdate {
  return {
    sql: `UPDATE applications SET ${checkedAssignment('applications', 'unfinished_tasks', 'unfinished_tasks + ? <= max_unfinished_tasks', 'unfinished_tasks + ?')} WHERE id = ?`,
    values: [k, k, applicationId],
    column: 'unfinished_tasks',
  };
}
