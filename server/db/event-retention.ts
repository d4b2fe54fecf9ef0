// The statements of result-event pruning, run under the database-wide pruning lock. Pruning always
// removes a prefix of a namespace's stream.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from './pool.js';

/** Per namespace, the newest sequence that occurred before now − retention. */
export async function pruneCandidates(conn: Conn, retentionSeconds: number): Promise<{ namespace_id: string; upto: string }[]> {
  const [old] = await conn.query<RowDataPacket[]>(
    `SELECT namespace_id, MAX(sequence) AS upto FROM result_events
          WHERE occurred_at < UTC_TIMESTAMP(3) - INTERVAL ? SECOND GROUP BY namespace_id`,
    [retentionSeconds],
  );
  return old.map((r) => ({ namespace_id: r.namespace_id as string, upto: r.upto as string }));
}

/** The smallest unacknowledged delivery sequence of a live subscription, or null: events from
 * there on are kept, so a materialized delivery stays deliverable. */
export async function oldestUnackedSequence(conn: Conn, namespaceId: string): Promise<string | null> {
  const [keep] = await conn.query<RowDataPacket[]>(
    `SELECT MIN(d.sequence) AS s FROM subscriptions s
             JOIN deliveries d ON d.subscription_id = s.id AND d.state IN ('PENDING','LEASED','EXPIRED')
            WHERE s.namespace_id = ? AND s.retired_at IS NULL`,
    [namespaceId],
  );
  return keep[0]!.s === null ? null : (keep[0]!.s as string);
}

/** At most `batch` events with sequence ≤ `upto`, oldest first; the caller repeats while a full
 * batch was deleted. */
export async function deleteEventsUpTo(conn: Conn, namespaceId: string, upto: string, batch: number): Promise<number> {
  const [res] = await conn.query(`DELETE FROM result_events WHERE namespace_id = ? AND sequence <= ? ORDER BY sequence LIMIT ${batch}`, [namespaceId, upto]);
  return (res as { affectedRows: number }).affectedRows;
}
