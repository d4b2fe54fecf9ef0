// The session settings every Orbit connection runs under, whatever the server's defaults are
// (docs/design.md, "Session settings"). createPool installs them on each new pooled connection.
//
// sql_mode is set to an exact list, not patched: a server (or a managed service) may default to
// NO_BACKSLASH_ESCAPES — then the backslash escapes mysql2's client-side `format` writes (every
// value of db/pipeline.ts's multi-statement texts) no longer escape, so `it's` ends the literal
// and a payload could append a statement — or to ANSI_QUOTES, PIPES_AS_CONCAT,
// NO_UNSIGNED_SUBTRACTION, EMPTY_STRING_IS_NULL or SIMULTANEOUS_ASSIGNMENT, each of which changes
// what some of Orbit's SQL means. The list is MariaDB's default minus NO_AUTO_CREATE_USER (it only
// concerns GRANT, and MySQL 8 refuses the name): the mode the suite runs under.
//   STRICT_TRANS_TABLES     a value that does not fit (too long, out of range, invalid UTF-8) is an
//                           error, never silently truncated or clipped: nothing is stored changed.
//   ERROR_FOR_DIVISION_BY_ZERO  x/0 in a write is an error, not NULL.
//   NO_ENGINE_SUBSTITUTION  a migration asking for InnoDB fails instead of getting another engine.
// ONLY_FULL_GROUP_BY is left out on purpose: MariaDB's check does not know functional dependence,
// and Orbit's reads are written and tested without it.
import type { Pool } from 'mysql2/promise';

export const ORBIT_SQL_MODE = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';

/** The statements a new connection runs before any other, in this order. Constants only (they
 * must mean the same under any sql_mode: single-quoted text without a backslash). READ COMMITTED:
 * locking reads and conditional updates see the latest committed rows and InnoDB takes no gap
 * locks, which keeps concurrent claimers from deadlocking on ranges. */
export const SESSION_SETUP = [`SET SESSION sql_mode = '${ORBIT_SQL_MODE}'`, 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'];

/** mysql2's core (callback) connection, as the pool's 'connection' event hands it over. */
interface CoreConnection {
  query(sql: string, cb: (err: Error | null) => void): unknown;
  destroy(): void;
  _handleFatalError?: (err: Error) => void;
}

/**
 * setupConnection(conn): queues SESSION_SETUP on a connection the pool has just opened. Called
 * from the pool's 'connection' event, which mysql2 emits before it hands the connection to its
 * first user, so these statements run before that user's first one (a connection runs its
 * commands in order) — and again on every connection opened later, e.g. after a server restart
 * replaced the lost ones. Should one fail, the connection is failed as a whole (every command
 * queued behind it gets the error, the pool drops it): no statement runs under the server's mode.
 * Takes no locks.
 */
export function setupConnection(conn: CoreConnection): void {
  let failed = false;
  for (const sql of SESSION_SETUP) {
    conn.query(sql, (err) => {
      // Once: failing the connection calls back every queued command, this one and the next included.
      if (!err || failed) return;
      failed = true;
      const fatal = Object.assign(new Error(`cannot apply Orbit's session settings (${sql}): ${err.message}`), { code: (err as { code?: string }).code });
      // mysql2 3.x: _handleFatalError fails the queued commands and removes the connection from
      // the pool; destroy() alone would leave them waiting.
      if (typeof conn._handleFatalError === 'function') conn._handleFatalError(fatal);
      else conn.destroy();
    });
  }
}

/**
 * assertSessionSettings(pool): refuses to go on, with one line, when a pooled connection does not
 * run under ORBIT_SQL_MODE (e.g. a proxy in front of the server that does not keep session
 * variables). One SELECT of session variables; no locks.
 */
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
