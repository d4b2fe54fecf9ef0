// Read model of one queue for its stats route: live counts by state and outcomes per minute over
// the last STATS_MINUTES. No locks.
import type { RowDataPacket } from 'mysql2/promise';
import type { MinuteBucket, QueueStats } from '@orbit/protocol/http-views';
import type { UnfinishedTaskState } from '@orbit/protocol/states';
import { toIso, type Conn, type Pool } from './pool.js';
import type { QueueRow } from './queues.js';
import { unfinishedByState } from './queue-blockers.js';
import { dbTimeToMs } from './time.js';

export const STATS_MINUTES = 15;

/** Event types that count as outcomes, and their bucket field. NEEDS_REVIEW is not an outcome:
 * its resolution is. */
const OUTCOME_FIELD: Record<string, keyof Omit<MinuteBucket, 'minute'>> = {
  'task.succeeded': 'succeeded',
  'task.failed': 'failed',
  'task.cancelled': 'cancelled',
  'task.deadline_exceeded': 'deadline_exceeded',
};

export async function queueStats(db: Pool | Conn, namespaceId: string, queue: QueueRow): Promise<QueueStats> {
  const { counts, oldestWaiting } = await unfinishedByState(db, queue.id, namespaceId);
  const byState = new Map(counts.map((r) => [r.state, r.n]));
  const n = (s: UnfinishedTaskState) => byState.get(s) ?? 0;

  // The window comes from the database clock, so every node answers with the same buckets.
  const [[clock]] = await db.query<RowDataPacket[]>(`SELECT DATE_FORMAT(UTC_TIMESTAMP() - INTERVAL ${STATS_MINUTES - 1} MINUTE, '%Y-%m-%d %H:%i:00') AS first`);
  const first = clock!.first as string;
  const startMs = dbTimeToMs(first);
  const minutes: MinuteBucket[] = Array.from({ length: STATS_MINUTES }, (_, i) => ({
    minute: new Date(startMs + i * 60_000).toISOString(),
    succeeded: 0,
    failed: 0,
    cancelled: 0,
    deadline_exceeded: 0,
  }));
  // Bounded above too: an event committed after the clock read belongs to a minute not shown.
  const [events] = await db.execute<RowDataPacket[]>(
    `SELECT DATE_FORMAT(occurred_at, '%Y-%m-%d %H:%i:00') AS minute, type, COUNT(*) AS n
       FROM result_events
      WHERE namespace_id = ? AND queue_id = ? AND occurred_at >= ? AND occurred_at < ? + INTERVAL ${STATS_MINUTES} MINUTE
      GROUP BY minute, type`,
    [namespaceId, queue.id, first, first],
  );
  for (const e of events) {
    const field = OUTCOME_FIELD[e.type as string];
    const i = Math.round((dbTimeToMs(e.minute as string) - startMs) / 60_000);
    const bucket = minutes[i];
    if (field && bucket) bucket[field] += Number(e.n);
  }
  return {
    waiting: n('WAITING'),
    leased: n('LEASED'),
    running: n('RUNNING'),
    needs_review: n('NEEDS_REVIEW'),
    active_attempts: queue.active_attempts,
    max_active_attempts: queue.max_active_attempts,
    oldest_waiting_at: toIso(oldestWaiting),
    minutes,
  };
}
