// Named (advisory) locks of the database server, held by one connection: they live in the database,
// so they serialize work across every gateway node, and a dead connection releases them.
import type { RowDataPacket } from 'mysql2/promise';
import type { Conn } from '../db/pool.js';

/** getNamedLock(name, wait_seconds) → true when this connection now holds the lock; false when
 * another connection held it for the whole wait (or the server refused it). */
export async function getNamedLock(conn: Conn, name: string, waitSeconds: number): Promise<boolean> {
  const [rows] = (await conn.query('SELECT GET_LOCK(?, ?) AS got', [name, waitSeconds])) as unknown as [Array<{ got: number | null }>];
  return Number(rows[0]?.got) === 1;
}

/** releaseNamedLock(name): gives back a lock getNamedLock took on this connection. */
export async function releaseNamedLock(conn: Conn, name: string): Promise<void> {
  await conn.query('SELECT RELEASE_LOCK(?)', [name]);
}

/** tryPruneLock() → true when this connection now holds the event-pruning lock of this database
 * (no wait: another node pruning means this one skips its round). The name carries the database
 * name, so several Orbit databases on one server do not exclude each other. */
export async function tryPruneLock(conn: Conn): Promise<boolean> {
  const [lk] = await conn.query<RowDataPacket[]>(`SELECT GET_LOCK(CONCAT('orbit.prune-events.', DATABASE()), 0) AS ok`);
  return Number(lk[0]!.ok) === 1;
}

/** releasePruneLock(): gives back the lock tryPruneLock took. */
export async function releasePruneLock(conn: Conn): Promise<void> {
  await conn.query(`SELECT RELEASE_LOCK(CONCAT('orbit.prune-events.', DATABASE()))`);
}
