// SQL operations on worker sessions. Each node refreshes its own rows, so a killed node's rows,
// which stay OPEN, drop out of "connected" once they go stale.
import type { RowDataPacket } from 'mysql2/promise';
import type { WorkerSession } from '@orbit/protocol/http-views';
import { toIso, type Conn, type Pool } from './pool.js';
import { placeholders } from './placeholders.js';

export const SESSION_STALE_SECONDS = 30;

/** A new hello supersedes every open session of the identity. */
export async function closeSupersededSessions(c: Conn, namespaceId: string, workerId: string): Promise<void> {
  await c.execute(
    `UPDATE worker_sessions SET state = 'CLOSED', closed_at = UTC_TIMESTAMP(3), close_code = 4409
        WHERE namespace_id = ? AND worker_id = ? AND state <> 'CLOSED'`,
    [namespaceId, workerId],
  );
}

export interface NewWorkerSession {
  id: string;
  namespaceId: string;
  workerId: string;
  credentialId: string;
  nodeId: string;
  queueIds: string[];
  capacity: number;
  concurrencyKeys: boolean;
  handlers: unknown;
}

export async function insertWorkerSession(c: Conn, s: NewWorkerSession): Promise<void> {
  await c.execute(
    `INSERT INTO worker_sessions (id, namespace_id, worker_id, credential_id, node_id, queue_ids, capacity, concurrency_keys, handlers, state, connected_at, last_seen_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'OPEN', UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
    [
      s.id,
      s.namespaceId,
      s.workerId,
      s.credentialId,
      s.nodeId,
      JSON.stringify(s.queueIds),
      s.capacity,
      s.concurrencyKeys ? 1 : 0,
      s.handlers ? JSON.stringify(s.handlers) : null,
    ],
  );
}

/** Releases nothing: attempts run on until result or expiry. */
export async function closeSessionRow(pool: Pool, sessionId: string, code: number): Promise<void> {
  const sql = `UPDATE worker_sessions SET state = 'CLOSED', closed_at = UTC_TIMESTAMP(3), close_code = ? WHERE id = ? AND state <> 'CLOSED'`;
  await pool.execute(sql, [code, sessionId]);
}

/** One application's sessions per call: a statement touches one application's rows. */
export async function touchSessions(pool: Pool, ids: string[]): Promise<void> {
  await pool.query(`UPDATE worker_sessions SET last_seen_at = UTC_TIMESTAMP(3) WHERE id IN (${placeholders(ids.length)})`, ids);
}

export async function capableSessionQueues(pool: Pool): Promise<{ queue_ids: string }[]> {
  const [sessions] = await pool.query<RowDataPacket[]>(
    `SELECT queue_ids FROM worker_sessions
        WHERE state <> 'CLOSED' AND concurrency_keys = 1 AND last_seen_at > UTC_TIMESTAMP(3) - INTERVAL ${SESSION_STALE_SECONDS} SECOND`,
  );
  return sessions as { queue_ids: string }[];
}

export async function listConnectedSessions(db: Pool | Conn, namespaceId: string, queueId?: string): Promise<WorkerSession[]> {
  const [rows] = await db.execute<RowDataPacket[]>(
    `SELECT s.id, s.worker_id, s.node_id, s.queue_ids, s.capacity, s.concurrency_keys, s.state, s.connected_at, s.last_seen_at,
            (SELECT COUNT(*) FROM attempts a
              WHERE a.namespace_id = s.namespace_id AND a.worker_id = s.worker_id AND a.is_live = 1 AND a.session_id = s.id) AS in_flight
       FROM worker_sessions s
      WHERE s.namespace_id = ? AND s.state <> 'CLOSED'
        AND s.last_seen_at > UTC_TIMESTAMP(3) - INTERVAL ${SESSION_STALE_SECONDS} SECOND
      ORDER BY s.connected_at, s.id`,
    [namespaceId],
  );
  const out: WorkerSession[] = [];
  for (const r of rows) {
    const queues = JSON.parse(r.queue_ids as string) as string[];
    if (queueId !== undefined && !queues.includes(queueId)) continue;
    out.push({
      worker_id: r.worker_id as string,
      session_id: r.id as string,
      node_id: r.node_id as string,
      queues,
      capacity: Number(r.capacity),
      in_flight: Number(r.in_flight),
      concurrency_keys: Number(r.concurrency_keys) === 1,
      draining: r.state === 'DRAINING',
      connected_at: toIso(r.connected_at as string)!,
      last_seen_at: toIso(r.last_seen_at as string)!,
    });
  }
  return out;
}

/** Flow-control state mirrored into the session's row, so every node sees what the owning node
 * knows. Best effort: the socket's node stays the authority for dispatch, and a lost update only
 * leaves the listing stale until the next frame. */
export async function recordSessionCapacity(db: Pool | Conn, sessionId: string, capacity: number): Promise<void> {
  await db.execute(`UPDATE worker_sessions SET capacity = ? WHERE id = ? AND state <> 'CLOSED'`, [capacity, sessionId]);
}

/** Draining never revives a CLOSED row. */
export async function recordSessionDraining(db: Pool | Conn, sessionId: string): Promise<void> {
  await db.execute(`UPDATE worker_sessions SET state = 'DRAINING' WHERE id = ? AND state = 'OPEN'`, [sessionId]);
}
