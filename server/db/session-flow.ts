// Flow-control state of a worker session, mirrored into its row so that every node (and
// GET /v1/workers) sees what the owning node knows: the intake capacity of the newest `capacity`
// frame and whether the worker asked to drain. Best effort: the socket's node stays the authority
// for dispatch; a lost update only makes the listing stale until the next frame.
//
//   recordSessionCapacity(db, session_id, capacity)  capacity of the newest capacity frame
//   recordSessionDraining(db, session_id)            OPEN → DRAINING (never revives a CLOSED row)
import type { Conn, Pool } from './pool.js';

export async function recordSessionCapacity(db: Pool | Conn, sessionId: string, capacity: number): Promise<void> {
  await db.execute(`UPDATE worker_sessions SET capacity = ? WHERE id = ? AND state <> 'CLOSED'`, [capacity, sessionId]);
}

export async function recordSessionDraining(db: Pool | Conn, sessionId: string): Promise<void> {
  await db.execute(`UPDATE worker_sessions SET state = 'DRAINING' WHERE id = ? AND state = 'OPEN'`, [sessionId]);
}
