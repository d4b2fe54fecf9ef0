// Lease extension of live attempts. Lease lengths come as literals from the cached queue
// configuration: a join with queues would share-lock the queue row and deadlock with results.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from './pool.js';
import { caseWhen, placeholders } from './placeholders.js';

/** A worker identity: the attempts it holds are named by namespace and worker id. */
export type WorkerRef = { namespaceId: string; workerId: string };

export type LeaseSeconds = readonly (readonly [queueId: string, seconds: number])[];

export async function renewLeases(c: Conn, who: WorkerRef, valid: string[], lease: LeaseSeconds): Promise<void> {
  if (lease.length === 0) return;
  await c.query(
    `UPDATE attempts SET lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL (${caseWhen('queue_id', lease.length)}) SECOND
          WHERE id IN (${placeholders(valid.length)}) AND namespace_id = ? AND worker_id = ? AND queue_id IN (${placeholders(lease.length)})
            AND state IN ('LEASED','RUNNING') AND lease_expires_at > UTC_TIMESTAMP(3)`,
    [...lease.flat(), ...valid, who.namespaceId, who.workerId, ...lease.map(([q]) => q)],
  );
}

/** After renewLeases, the ones renewed; the others are lost. */
export async function readLiveLeases(c: Conn, who: WorkerRef, valid: string[]): Promise<{ id: string; lease_expires_at: string }[]> {
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT id, lease_expires_at FROM attempts
        WHERE id IN (${placeholders(valid.length)}) AND namespace_id = ? AND worker_id = ? AND state IN ('LEASED','RUNNING') AND lease_expires_at > UTC_TIMESTAMP(3)`,
    [...valid, who.namespaceId, who.workerId],
  );
  return rows.map((r) => ({ id: r.id as string, lease_expires_at: r.lease_expires_at as string }));
}

/** The caller holds the rows and has checked that the session's worker owns them. */
export async function rebindAttempts(c: Conn, sessionId: string, lease: LeaseSeconds, ids: string[]): Promise<void> {
  const ph = placeholders(ids.length);
  await c.query(
    `UPDATE attempts SET session_id = ?, lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL (${caseWhen('queue_id', lease.length)}) SECOND
          WHERE id IN (${ph})`,
    [sessionId, ...lease.flat(), ...ids],
  );
}
