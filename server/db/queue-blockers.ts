// The reads behind a queue retirement's refusal (server/events/retire.ts, queueBlockers): what
// still holds the queue. The caller holds the queue row FOR UPDATE, so nothing can add work to the
// queue between these plain reads and the commit.
import type { RowDataPacket } from 'mysql2/promise';
import { UNFINISHED_TASK_STATES, type UnfinishedTaskState } from '@orbit/protocol/states';
import type { Conn, Pool } from './pool.js';

/** unfinishedByState(queue_id, namespace_id) → count of the queue's WAITING, LEASED, RUNNING and
 * NEEDS_REVIEW tasks (those with any), in that order, and the oldest WAITING one's acceptance
 * time. No index of tasks carries the state (migration 000007), so each comes from where it is
 * indexed: WAITING from waiting_tasks (its primary key starts with the queue), LEASED and RUNNING
 * from the live attempts (one per such task, in the same state; ix_attempts_live_expiry), and
 * NEEDS_REVIEW from ix_tasks_review. One statement. */
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

/** needsReviewTaskIds(queue_id) → the first 20 NEEDS_REVIEW task ids of the queue, oldest first
 * (named in the refusal so the operator can resolve them; ix_tasks_review). */
export async function needsReviewTaskIds(c: Conn, queueId: string): Promise<string[]> {
  const [ids] = await c.execute<RowDataPacket[]>(`SELECT id FROM tasks WHERE queue_id = ? AND in_review = 1 ORDER BY seq LIMIT 20`, [queueId]);
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
