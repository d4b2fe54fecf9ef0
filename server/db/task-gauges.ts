// Whole-database reads behind gauges (every node sees the same numbers: the database is the only
// shared state). No locks; each walks the WAITING rows (waiting_tasks), so callers run them every few seconds at
// most (queue-metrics.ts caches for 2 s, the capability watch runs every ~5 s).
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from './pool.js';

/** waitingDepthByQueue() → per queue with WAITING tasks: its name, their count, and the age in
 * microseconds of the oldest due one (due since not_before, else since created_at; null when none
 * is due yet), by the database clock. */
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

/** keyedWaitingByQueue() → per queue, the count of WAITING tasks that carry a concurrency key. */
export async function keyedWaitingByQueue(pool: Pool): Promise<{ queue_id: string; n: number | string }[]> {
  const [waiting] = await pool.query<RowDataPacket[]>(`SELECT queue_id, COUNT(*) AS n FROM waiting_tasks WHERE concurrency_key IS NOT NULL GROUP BY queue_id`);
  return waiting as { queue_id: string; n: number | string }[];
}
