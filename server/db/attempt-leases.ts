// Lease extension of live attempts: `renew` frames (server/dispatch/renew.ts) and the resume of
// listed attempts at a hello (server/gateway/hello.ts). Lease lengths go in as literals, per queue
// (`lease`: [queue_id, seconds] pairs from the cached queue configuration, server/db/queue-config.ts):
// a join with queues here took a shared lock on the queue row, which deadlocked with results
// releasing permits on it. Lease times are computed by the database clock.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from './pool.js';
import { placeholders } from './placeholders.js';

export type LeaseSeconds = readonly (readonly [queueId: string, seconds: number])[];

/** renewLeases({namespace_id, worker_id}, ids, lease): each listed attempt of this worker identity
 * that is LEASED or RUNNING and unexpired gets lease_expires_at = now + its queue's lease. An
 * attempt of a queue not in `lease` is left alone. */
export async function renewLeases(c: Conn, who: { namespaceId: string; workerId: string }, valid: string[], lease: LeaseSeconds): Promise<void> {
  if (lease.length === 0) return;
  await c.query(
    `UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL (CASE queue_id ${lease.map(() => 'WHEN ? THEN ?').join(' ')} END) SECOND
          WHERE id IN (${placeholders(valid.length)}) AND namespace_id = ? AND worker_id = ? AND queue_id IN (${placeholders(lease.length)})
            AND state IN ('LEASED','RUNNING') AND lease_expires_at > UTC_TIMESTAMP(3)`,
    [...lease.flat(), ...valid, who.namespaceId, who.workerId, ...lease.map(([q]) => q)],
  );
}

/** readLiveLeases({namespace_id, worker_id}, ids) → id and lease_expires_at of the listed attempts
 * of this worker identity that are LEASED or RUNNING and unexpired (after renewLeases: the ones
 * renewed; the others are lost). */
export async function readLiveLeases(
  c: Conn,
  who: { namespaceId: string; workerId: string },
  valid: string[],
): Promise<{ id: string; lease_expires_at: string }[]> {
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT id, lease_expires_at FROM attempts
        WHERE id IN (${placeholders(valid.length)}) AND namespace_id = ? AND worker_id = ? AND state IN ('LEASED','RUNNING') AND lease_expires_at > UTC_TIMESTAMP(3)`,
    [...valid, who.namespaceId, who.workerId],
  );
  return rows.map((r) => ({ id: r.id as string, lease_expires_at: r.lease_expires_at as string }));
}

/** rebindAttempts(session_id, lease, ids): resumed attempts move to the new session and their
 * lease restarts at now + their queue's lease. The caller holds the rows locked and has checked
 * they are live and owned by the session's worker identity. */
export async function rebindAttempts(c: Conn, sessionId: string, lease: LeaseSeconds, ids: string[]): Promise<void> {
  const ph = placeholders(ids.length);
  await c.query(
    `UPDATE attempts SET session_id = ?, lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL (CASE queue_id ${lease.map(() => 'WHEN ? THEN ?').join(' ')} END) SECOND
          WHERE id IN (${ph})`,
    [sessionId, ...lease.flat(), ...ids],
  );
}
