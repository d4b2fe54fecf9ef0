// The database clock. Every stored time is the database's UTC_TIMESTAMP(3), never a gateway's
// clock, so times computed in the application start from this read.
import type { Conn } from './pool.js';

export async function dbNow(c: Conn): Promise<string> {
  const [[r]] = (await c.query('SELECT UTC_TIMESTAMP(3) AS now')) as unknown as [[{ now: string }]];
  return r.now;
}
