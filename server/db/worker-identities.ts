// SQL operations on worker identities: one row per (namespace, worker_id), created by its first
// hello, which freezes its concurrency_keys capability. current_session_id names the newest
// session; any other session of the identity is superseded.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn, Pool, Tx } from './pool.js';
import { placeholders } from './placeholders.js';

/** The frozen concurrency_keys flag, or null when the identity does not exist yet; an existing row
 * is locked FOR UPDATE. */
export async function lockWorkerIdentity(c: Tx, namespaceId: string, workerId: string): Promise<{ concurrency_keys: number } | null> {
  const sql = 'SELECT concurrency_keys FROM worker_identities WHERE namespace_id = ? AND worker_id = ? FOR UPDATE';
  const [ids] = await c.execute<RowDataPacket[]>(sql, [namespaceId, workerId]);
  return ids[0] ? { concurrency_keys: Number(ids[0].concurrency_keys) } : null;
}

export async function setCurrentSession(c: Conn, namespaceId: string, workerId: string, sessionId: string, agent: string | null): Promise<void> {
  const sql = 'UPDATE worker_identities SET current_session_id = ?, agent = ?, updated_at = UTC_TIMESTAMP(3) WHERE namespace_id = ? AND worker_id = ?';
  await c.execute(sql, [sessionId, agent, namespaceId, workerId]);
}

export async function insertWorkerIdentity(
  c: Conn,
  w: { namespaceId: string; workerId: string; concurrencyKeys: boolean; sessionId: string; agent: string | null },
): Promise<void> {
  await c.execute(
    `INSERT INTO worker_identities (namespace_id, worker_id, concurrency_keys, current_session_id, agent, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
    [w.namespaceId, w.workerId, w.concurrencyKeys ? 1 : 0, w.sessionId, w.agent],
  );
}

/** The sessions still current for their identity (the reconciler closes the others). */
export async function currentSessionsAmong(pool: Pool, sessionIds: string[]): Promise<string[]> {
  const [ids] = await pool.query<RowDataPacket[]>(
    `SELECT namespace_id, worker_id, current_session_id FROM worker_identities WHERE current_session_id IN (${placeholders(sessionIds.length)})`,
    sessionIds,
  );
  return ids.map((r) => r.current_session_id as string);
}
