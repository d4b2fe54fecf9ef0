// The session settings of every connection (docs/design.md, "Where the SQL is"). sql_mode is an
// exact list: NO_BACKSLASH_ESCAPES would turn client-side escapes into an injection, and others
// change what the SQL means. ONLY_FULL_GROUP_BY is out: MariaDB's check ignores functional
// dependence.
import type { Pool } from 'mysql2/promise';

export const ORBIT_SQL_MODE = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';

/** Constants only, the same under any sql_mode. READ COMMITTED takes no gap locks, which keeps
 * concurrent claimers from deadlocking on ranges. */
export const SESSION_SETUP = [`SET SESSION sql_mode = '${ORBIT_SQL_MODE}'`, 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'];

interface CoreConnection {
  query(sql: string, cb: (err: Error | null) => void): unknown;
  destroy(): void;
  _handleFatalError?: (err: Error) => void;
}

/** Queues SESSION_SETUP before the connection's first user; a failure fails the connection. */
export function setupConnection(conn: CoreConnection): void {
  let failed = false;
  for (const sql of SESSION_SETUP) {
    conn.query(sql, (err) => {
      if (!err || failed) return;
      failed = true;
      const fatal = Object.assign(new Error(`cannot apply Orbit's session settings (${sql}): ${err.message}`), { code: (err as { code?: string }).code });
      // destroy() alone would leave the queued commands waiting.
      if (typeof conn._handleFatalError === 'function') conn._handleFatalError(fatal);
      else conn.destroy();
    });
  }
}

/** E.g. a proxy that drops session variables. */
export async function assertSessionSettings(pool: Pool): Promise<void> {
  const [rows] = await pool.query('SELECT @@SESSION.sql_mode AS mode');
  const got = String((rows as { mode: string }[])[0]!.mode);
  const want = ORBIT_SQL_MODE.split(',').sort().join(',');
  if (got.split(',').sort().join(',') !== want) {
    throw new Error(
      `the database session's sql_mode is ${JSON.stringify(got)}, not Orbit's ${JSON.stringify(ORBIT_SQL_MODE)} (is a proxy dropping SET SESSION?)`,
    );
  }
}
