// The reads behind a queue retirement's refusal (server/events/retire.ts, queueBlockers): what
// still holds the queue. The caller holds the queue row FOR UPDATE, so nothing can add work to the
// queue between these plain reads and the commit.
import type { RowDataPacket } from 'mysql2/promise';
import type { UnfinishedTaskState } from '@orbit/protocol/states';
import type { Conn } from './pool.js';

/** unfinishedTaskCounts(queue_id) → [state, count] of the queue's WAITING, LEASED, RUNNING and
 * NEEDS_REVIEW tasks, by state name. */
export async function unfinishedTaskCounts(c: Conn, queueId: string): Promise<{ state: UnfinishedTaskState; n: number | string }[]> {
  const [tasks] = await c.execute<RowDataPacket[]>(
    `SELECT state, COUNT(*) AS n FROM tasks WHERE queue_id = ? AND state IN ('WAITING','LEASED','RUNNING','NEEDS_REVIEW') GROUP BY state ORDER BY state`,
    [queueId],
  );
  return tasks as { state: UnfinishedTaskState; n: number | string }[];
}

/** needsReviewTaskIds(queue_id) → the first 20 NEEDS_REVIEW task ids of the queue, oldest first
 * (named in the refusal so the operator can resolve them). */
export async function needsReviewTaskIds(c: Conn, queueId: string): Promise<string[]> {
  const [ids] = await c.execute<RowDataPacket[]>(`SELECT id FROM tasks WHERE queue_id = ? AND state = 'NEEDS_REVIEW' ORDER BY seq LIMIT 20`, [queueId]);
  return ids.map((r) => r.id as string);
}

/** countLiveAttemptsOfQueue(queue_id) → LEASED and RUNNING attempts of the queue. */
export async function countLiveAttemptsOfQueue(c: Conn, queueId: string): Promise<number> {
  const [att] = await c.execute<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM attempts WHERE state IN ('LEASED','RUNNING') AND queue_id = ?`, [queueId]);
  return Number(att[0]!.n);
}

/** countHeldKeysOfQueue(namespace_id, queue_id) → resource keys of the namespace whose holder is
 * an attempt of the queue. */
export async function countHeldKeysOfQueue(c: Conn, namespaceId: string, queueId: string): Promise<number> {
  const [keys] = await c.execute<RowDataPacket[]>(
    `SELECT COUNT(*) AS n FROM resource_keys rk JOIN attempts a ON a.id = rk.holder_attempt_id
      WHERE rk.namespace_id = ? AND rk.holder_attempt_id IS NOT NULL AND a.queue_id = ?`,
    [namespaceId, queueId],
  );
  return Number(keys[0]!.n);
}

/** unfinishedRunsOfQueue(queue_id, limit) → ids of RUNNING and PAUSED workflow runs whose version
 * names the queue in any step (reached or not), oldest first, at most `limit`, and their total. By
 * workflow_version_queues' primary key (queue prefix), then workflow_runs (workflow_id, state,
 * version). A run start share-locks the queue row, so none can start between this read and the
 * commit. */
export async function unfinishedRunsOfQueue(c: Conn, queueId: string, limit: number): Promise<{ ids: string[]; count: number }> {
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT r.id, COUNT(*) OVER () AS n FROM workflow_version_queues q
       JOIN workflow_runs r ON r.workflow_id = q.workflow_id AND r.version = q.version AND r.state IN ('RUNNING','PAUSED')
      WHERE q.queue_id = ? ORDER BY r.seq LIMIT ${Number(limit)}`,
    [queueId],
  );
  return { ids: rows.map((r) => r.id as string), count: rows.length === 0 ? 0 : Number(rows[0]!.n) };
}
