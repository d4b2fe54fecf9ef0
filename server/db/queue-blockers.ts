// What still holds a queue at its retirement. The caller holds the queue row FOR UPDATE, so
// nothing can add work between these plain reads and the commit.
import type { RowDataPacket } from 'mysql2/promise';
import { UNFINISHED_TASK_STATES, type UnfinishedTaskState } from '@orbit/protocol/states';
import type { Conn, Pool } from './pool.js';

/** No index of tasks carries the state, so each count comes from where it is indexed. */
export async function unfinishedByState(
  db: Pool | Conn,
  queueId: string,
  namespaceId: string,
): Promise<{ counts: { state: UnfinishedTaskState; n: number }[]; oldestWaiting: string | null }> {
  const [rows] = await db.execute<RowDataPacket[]>(
    `SELECT 'WAITING' AS state, COUNT(*) AS n, MIN(created_at) AS oldest FROM waiting_tasks WHERE queue_id = ? AND namespace_id = ?
     UNION ALL
     SELECT state, COUNT(*), NULL FROM attempts WHERE state IN ('LEASED','RUNNING') AND queue_id = ? AND namespace_id = ? GROUP BY state
     UNION ALL
     SELECT 'NEEDS_REVIEW', COUNT(*), NULL FROM tasks WHERE queue_id = ? AND in_review = 1 AND namespace_id = ?`,
    [queueId, namespaceId, queueId, namespaceId, queueId, namespaceId],
  );
  const n = new Map(rows.map((r) => [r.state as string, Number(r.n)]));
  return {
    counts: UNFINISHED_TASK_STATES.filter((s) => (n.get(s) ?? 0) > 0).map((state) => ({ state, n: n.get(state)! })),
    oldestWaiting: (rows.find((r) => r.state === 'WAITING')?.oldest as string | null | undefined) ?? null,
  };
}

export async function needsReviewTaskIds(c: Conn, queueId: string): Promise<string[]> {
  const [ids] = await c.execute<RowDataPacket[]>(`SELECT id FROM tasks WHERE queue_id = ? AND in_review = 1 ORDER BY seq LIMIT 20`, [queueId]);
  return ids.map((r) => r.id as string);
}

export async function countLiveAttemptsOfQueue(c: Conn, queueId: string): Promise<number> {
  const [att] = await c.execute<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM attempts WHERE state IN ('LEASED','RUNNING') AND queue_id = ?`, [queueId]);
  return Number(att[0]!.n);
}

export async function countHeldKeysOfQueue(c: Conn, namespaceId: string, queueId: string): Promise<number> {
  const [keys] = await c.execute<RowDataPacket[]>(
    `SELECT COUNT(*) AS n FROM resource_keys rk JOIN attempts a ON a.id = rk.holder_attempt_id
      WHERE rk.namespace_id = ? AND rk.holder_attempt_id IS NOT NULL AND a.queue_id = ?`,
    [namespaceId, queueId],
  );
  return Number(keys[0]!.n);
}

/** A run start share-locks the queue row, so none can start before the commit. */
export async function unfinishedRunsOfQueue(c: Conn, queueId: string, limit: number): Promise<{ ids: string[]; count: number }> {
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT r.id, COUNT(*) OVER () AS n FROM workflow_version_queues q
       JOIN workflow_runs r ON r.workflow_id = q.workflow_id AND r.version = q.version AND r.state IN ('RUNNING','PAUSED')
      WHERE q.queue_id = ? ORDER BY r.seq LIMIT ${Number(limit)}`,
    [queueId],
  );
  return { ids: rows.map((r) => r.id as string), count: rows.length === 0 ? 0 : Number(rows[0]!.n) };
}
