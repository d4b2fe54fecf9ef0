// SQL operations on worker identities: one row per (namespace, worker_id), created by the first
// hello of that worker_id, which freezes its concurrency_keys capability; current_session_id names
// the newest session of the identity (a session that is no longer it was superseded).
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn, Pool, Tx } from './pool.js';
import { placeholders } from './placeholders.js';

/** lockWorkerIdentity(namespace_id, worker_id) → its frozen concurrency_keys flag (0 or 1), or
 * null when the identity does not exist yet; the row, when it exists, is locked FOR UPDATE. */
export async function lockWorkerIdentity(c: Tx, namespaceId: string, workerId: string): Promise<{ concurrency_keys: number } | null> {
  const [ids] = await c.execute<RowDataPacket[]>('SELECT concurrency_keys FROM worker_identities WHERE namespace_id = ? AND worker_id = ? FOR UPDATE', [
    namespaceId,
    workerId,
  ]);
  return ids[0] ? { concurrency_keys: Number(ids[0].concurrency_keys) } : null;
}

/** setCurrentSession(namespace_id, worker_id, session_id, agent): the identity's newest session. */
export async function setCurrentSession(c: Conn, namespaceId: string, workerId: string, sessionId: string, agent: string | null): Promise<void> {
  await c.execute('UPDATE worker_identities SET current_session_id = ?, agent = ?, updated_at = UTC_TIMESTAMP(3) WHERE namespace_id = ? AND worker_id = ?', [
    sessionId,
    agent,
    namespaceId,
    workerId,
  ]);
}

/** insertWorkerIdentity(namespace_id, worker_id, concurrency_keys, session_id, agent): the first
 * hello of a worker_id (its capability flag is frozen from here on). */
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

/** currentSessionsAmong(session_ids) → those of the sessions that are still the current session of
 * their identity (no lock; the reconciler closes the others: superseded on another node). */
export async function currentSessionsAmong(pool: Pool, sessionIds: string[]): Promise<string[]> {
  const [ids] = await pool.query<RowDataPacket[]>(
    `SELECT namespace_id, worker_id, current_session_id FROM worker_identities WHERE current_session_id IN (${placeholders(sessionIds.length)})`,
    sessionIds,
  );
  return ids.map((r) => r.current_session_id as string);
}
