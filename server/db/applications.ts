// SQL operations on the application quota counters.
import type { Conn } from './pool.js';

/** reserveUnfinishedTask(application_id) → false when the quota of unfinished tasks is reached.
 * Conditional update: the check and the increment are one statement (no snapshot read). */
export async function reserveUnfinishedTask(c: Conn, applicationId: string): Promise<boolean> {
  const [res] = await c.execute(
    'UPDATE applications SET unfinished_tasks = unfinished_tasks + 1 WHERE id = ? AND unfinished_tasks < max_unfinished_tasks',
    [applicationId],
  );
  return (res as { affectedRows: number }).affectedRows === 1;
}

/** releaseUnfinishedTasks(application_id, n): tasks that became terminal. */
export async function releaseUnfinishedTasks(c: Conn, applicationId: string, n: number): Promise<void> {
  await c.execute('UPDATE applications SET unfinished_tasks = unfinished_tasks - ? WHERE id = ?', [n, applicationId]);
}
