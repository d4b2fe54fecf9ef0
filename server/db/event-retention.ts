// The statements of result-event pruning (server/events/retention.ts): on one connection that holds
// the database-wide pruning lock (mariadb/named-locks.ts, tryPruneLock), per namespace, the newest
// sequence past retention, the oldest sequence a live subscription still needs, then deletes of
// the prefix in batches. Pruning always removes a prefix of a namespace's stream.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from './pool.js';

/** pruneCandidates(retention_seconds) → per namespace, the newest sequence that occurred before
 * now − retention (database clock). */
export async function pruneCandidates(conn: Conn, retentionSeconds: number): Promise<{ namespace_id: string; upto: string }[]> {
  const [old] = await conn.query<RowDataPacket[]>(
    `SELECT namespace_id, MAX(sequence) AS upto FROM result_events
          WHERE occurred_at < UTC_TIMESTAMP(3) - INTERVAL ? SECOND GROUP BY namespace_id`,
    [retentionSeconds],
  );
  return old.map((r) => ({ namespace_id: r.namespace_id as string, upto: r.upto as string }));
}

/** oldestUnackedSequence(namespace_id) → the smallest sequence of a delivery not yet acknowledged
 * (PENDING, LEASED or EXPIRED) of a non-retired subscription of the namespace, or null: events
 * from there on are kept (a materialized delivery must stay deliverable). */
export async function oldestUnackedSequence(conn: Conn, namespaceId: string): Promise<string | null> {
  const [keep] = await conn.query<RowDataPacket[]>(
    `SELECT MIN(d.sequence) AS s FROM subscriptions s
             JOIN deliveries d ON d.subscription_id = s.id AND d.state IN ('PENDING','LEASED','EXPIRED')
            WHERE s.namespace_id = ? AND s.retired_at IS NULL`,
    [namespaceId],
  );
  return keep[0]!.s === null ? null : (keep[0]!.s as string);
}

/** deleteEventsUpTo(namespace_id, sequence, batch) → rows deleted: at most `batch` of the
 * namespace's events with sequence ≤ the given one, oldest first (the caller repeats while a full
 * batch was deleted). */
export async function deleteEventsUpTo(conn: Conn, namespaceId: string, upto: string, batch: number): Promise<number> {
  const [res] = await conn.query(`DELETE FROM result_events WHERE namespace_id = ? AND sequence <= ? ORDER BY sequence LIMIT ${batch}`, [namespaceId, upto]);
  return (res as { affectedRows: number }).affectedRows;
}
