// Read model of connected worker sessions for GET /v1/workers, across every gateway node (the
// sessions table is the shared record; a node only knows its own sockets).
//
//   listConnectedSessions(db, namespace_id, queue_id?) → WorkerSession[] (all queues of each session)
//     namespace_id  the credential's namespace
//     queue_id      only sessions whose hello named this queue (already validated and authorized)
//
// "Connected" = not CLOSED and seen within SESSION_STALE_SECONDS: each node refreshes
// last_seen_at of its own sessions every few seconds, so the row of a node killed with -9 (which
// stays OPEN) drops out of the list once it goes stale.
import type { RowDataPacket } from 'mysql2/promise';
import type { WorkerSession } from '@orbit/protocol/http-views';
import { SESSION_STALE_SECONDS } from '../gateway/capability-watch.js';
import type { Conn, Pool } from './pool.js';
import { toIso } from './pool.js';

export async function listConnectedSessions(db: Pool | Conn, namespaceId: string, queueId?: string): Promise<WorkerSession[]> {
  const [rows] = await db.execute<RowDataPacket[]>(
    `SELECT s.id, s.worker_id, s.node_id, s.queue_ids, s.capacity, s.concurrency_keys, s.state, s.connected_at, s.last_seen_at,
            (SELECT COUNT(*) FROM attempts a WHERE a.session_id = s.id AND a.state IN ('LEASED', 'RUNNING')) AS in_flight
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
