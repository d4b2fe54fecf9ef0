// Named locks of the database server: they serialize work across nodes, and a dead connection
// releases them.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from '../db/pool.js';

export async function getNamedLock(conn: Conn, name: string, waitSeconds: number): Promise<boolean> {
  const [rows] = (await conn.query('SELECT GET_LOCK(?, ?) AS got', [name, waitSeconds])) as unknown as [Array<{ got: number | null }>];
  return Number(rows[0]?.got) === 1;
}

export async function releaseNamedLock(conn: Conn, name: string): Promise<void> {
  await conn.query('SELECT RELEASE_LOCK(?)', [name]);
}

/** Without waiting: another node pruning means this one skips its round. The name carries the
 * database name, so databases sharing a server do not exclude each other. */
export async function tryPruneLock(conn: Conn): Promise<boolean> {
  const [lk] = await conn.query<RowDataPacket[]>(`SELECT GET_LOCK(CONCAT('orbit.prune-events.', DATABASE()), 0) AS ok`);
  return Number(lk[0]!.ok) === 1;
}

export async function releasePruneLock(conn: Conn): Promise<void> {
  await conn.query(`SELECT RELEASE_LOCK(CONCAT('orbit.prune-events.', DATABASE()))`);
}
