// The database clock. Every time Orbit stores is UTC_TIMESTAMP(3) of the database, never a
// gateway's clock, so times computed in the application start from this read.
import type { Conn } from './pool.js';

/** dbNow() → UTC_TIMESTAMP(3) of the database, as DATETIME(3) text. */
export async function dbNow(c: Conn): Promise<string> {
  const [[r]] = (await c.query('SELECT UTC_TIMESTAMP(3) AS now')) as unknown as [[{ now: string }]];
  return r.now;
}
