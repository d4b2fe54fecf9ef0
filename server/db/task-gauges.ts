// Whole-database reads behind gauges. No locks, but each walks the WAITING rows, so callers run
// them every few seconds at most.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from './pool.js';

/** Per queue with WAITING tasks: its name, their count, and the age in microseconds of the
 * oldest due one (null when none is due yet), by the database clock. */
export async function waitingDepthByQueue(pool: Pool): Promise<{ queue_id: string; name: string; depth: number | string; age_us: number | string | null }[]> {
  // Age counts from when a task became due (not_before), not from its submission.
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT w.queue_id, q.name, COUNT(*) AS depth,
              TIMESTAMPDIFF(MICROSECOND, MIN(CASE WHEN w.not_before IS NULL OR w.not_before <= UTC_TIMESTAMP(3)
                THEN GREATEST(w.created_at, COALESCE(w.not_before, w.created_at)) END), UTC_TIMESTAMP(3)) AS age_us
         FROM waiting_tasks w JOIN queues q ON q.id = w.queue_id
        GROUP BY w.queue_id, q.name`,
  );
  return rows as { queue_id: string; name: string; depth: number | string; age_us: number | string | null }[];
}

export async function keyedWaitingByQueue(pool: Pool): Promise<{ queue_id: string; n: number | string }[]> {
  const [waiting] = await pool.query<RowDataPacket[]>(`SELECT queue_id, COUNT(*) AS n FROM waiting_tasks WHERE concurrency_key IS NOT NULL GROUP BY queue_id`);
  return waiting as { queue_id: string; n: number | string }[];
}
