// Flow-control state of a worker session mirrored into its row, so every node sees what the
// owning node knows. Best effort: the socket's node stays the authority for dispatch, and a lost
// update only leaves the listing stale until the next frame. Draining never revives a CLOSED row.
import type { Conn, Pool } from './pool.js';

export async function recordSessionCapacity(db: Pool | Conn, sessionId: string, capacity: number): Promise<void> {
  await db.execute(`UPDATE worker_sessions SET capacity = ? WHERE id = ? AND state <> 'CLOSED'`, [capacity, sessionId]);
}

export async function recordSessionDraining(db: Pool | Conn, sessionId: string): Promise<void> {
  await db.execute(`UPDATE worker_sessions SET state = 'DRAINING' WHERE id = ? AND state = 'OPEN'`, [sessionId]);
}
