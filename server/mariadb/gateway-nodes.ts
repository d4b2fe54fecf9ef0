// SQL of the single-writer check: which Galera node this gateway reaches, and the gateway_nodes rows.
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../db/pool.js';
import { errnoOf } from '../db/errors.js';

export interface DbNode {
  wsrepOn: boolean;
  nodeName: string | null;
}

/** A server without wsrep (MySQL, or MariaDB built without it). */
const UNKNOWN_SYSTEM_VARIABLE = 1193;

export async function readDbNode(pool: Pool): Promise<DbNode> {
  try {
    const [rows] = await pool.query<RowDataPacket[]>('SELECT @@global.wsrep_on AS wsrep_on, @@global.wsrep_node_name AS node_name');
    const on = Number(rows[0]!.wsrep_on) === 1;
    return { wsrepOn: on, nodeName: on ? String(rows[0]!.node_name) : null };
  } catch (err) {
    if (errnoOf(err) === UNKNOWN_SYSTEM_VARIABLE) return { wsrepOn: false, nodeName: null };
    throw err;
  }
}

export interface OtherWriter {
  node_id: string;
  wsrep_node_name: string;
  /** seen_at is later than the caller's `since`: the row was refreshed since. */
  fresh: boolean;
}

export async function otherWriters(pool: Pool, nodeId: string, nodeName: string, liveSeconds: number, since: string): Promise<OtherWriter[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT node_id, wsrep_node_name, seen_at > ? AS fresh FROM gateway_nodes
      WHERE node_id <> ? AND wsrep_on = 1 AND wsrep_node_name <> ? AND seen_at > UTC_TIMESTAMP(3) - INTERVAL ? SECOND
      ORDER BY node_id`,
    [since, nodeId, nodeName, liveSeconds],
  );
  return rows.map((r) => ({ node_id: r.node_id as string, wsrep_node_name: r.wsrep_node_name as string, fresh: Number(r.fresh) === 1 }));
}

export async function upsertGatewayNode(pool: Pool, nodeId: string, node: DbNode): Promise<void> {
  await pool.query(
    `INSERT INTO gateway_nodes (node_id, wsrep_on, wsrep_node_name, started_at, seen_at)
     VALUES (?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))
     ON DUPLICATE KEY UPDATE wsrep_on = VALUES(wsrep_on), wsrep_node_name = VALUES(wsrep_node_name), seen_at = VALUES(seen_at)`,
    [nodeId, node.wsrepOn ? 1 : 0, node.nodeName],
  );
}

export async function deleteGatewayNode(pool: Pool, nodeId: string): Promise<void> {
  await pool.query('DELETE FROM gateway_nodes WHERE node_id = ?', [nodeId]);
}

export async function pruneGatewayNodes(pool: Pool, staleSeconds: number): Promise<void> {
  await pool.query('DELETE FROM gateway_nodes WHERE seen_at < UTC_TIMESTAMP(3) - INTERVAL ? SECOND LIMIT 1000', [staleSeconds]);
}
