import mysql from 'mysql2/promise';
import { isRetryableDbError, MYSQL_ERRNO } from './errors.js';
import { Tx, transactionStats, write, type Conn, type PooledConn } from './pipeline.js';
import { setupConnection } from './session-setup.js';
import { queryFormat } from './sql-format.js';
import { trackPacketBudget } from './packet-budget.js';

export type Pool = mysql.Pool;
/** Conn: runs on either; PooledConn: where a transaction starts; Tx: a transaction (db/pipeline.ts). */
export type { Conn, PooledConn, Tx };

/** Parses `mysql://user:pass@host:port/db` into mysql2 options. Throws a one-line error. */
export function parseDsn(dsn: string): mysql.PoolOptions {
  let u: URL;
  try {
    u = new URL(dsn);
  } catch {
    throw new Error(`ORBIT_MYSQL_DSN is not a URL: expected mysql://user:pass@host:port/db`);
  }
  if (u.protocol !== 'mysql:') throw new Error(`ORBIT_MYSQL_DSN must start with mysql://`);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!database) throw new Error('ORBIT_MYSQL_DSN names no database: expected mysql://user:pass@host:port/db');
  const opts: mysql.PoolOptions = {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password || ''),
    database,
  };
  const socketPath = u.searchParams.get('socket');
  if (socketPath) opts.socketPath = socketPath;
  const limit = u.searchParams.get('connectionLimit');
  if (limit !== null) {
    // A typo here would otherwise reach mysql2 as connectionLimit NaN instead of stopping the start.
    if (!/^[1-9][0-9]{0,3}$/.test(limit)) throw new Error(`ORBIT_MYSQL_DSN connectionLimit must be an integer in 1..9999, got ${JSON.stringify(limit)}`);
    opts.connectionLimit = Number(limit);
  }
  return opts;
}

/** One pool per process; every connection first runs Orbit's session settings (db/session-setup.ts).
 * uint64 columns come back as decimal strings, so they never pass through a float; DATETIME columns
 * as strings (RFC 3339 by `toIso`). Every stored time is UTC_TIMESTAMP(3): the session zone does not matter. */
export function createPool(dsn: string, extra: Partial<mysql.PoolOptions> = {}): Pool {
  const pool = mysql.createPool({
    ...parseDsn(dsn),
    supportBigNumbers: true,
    bigNumberStrings: true,
    dateStrings: true,
    timezone: 'Z',
    charset: 'utf8mb4_general_ci',
    waitForConnections: true,
    connectionLimit: 16,
    maxIdle: 16,
    idleTimeout: 60_000,
    enableKeepAlive: true,
    // Transactions send their unread writes with their next statement (db/pipeline.ts); every
    // value still goes through mysql2's escaping: no statement text is built from input.
    multipleStatements: true,
    // A stack trace captured per query costs much of the gateway's CPU; SQL errors carry the statement.
    trace: false,
    // mysql2's default cache (16 000 per connection) could exhaust the server-wide
    // max_prepared_stmt_count over several nodes; Orbit's fixed-shape texts number in the dozens.
    maxPreparedStatements: 256,
    // mysql2's own format, without walking a text already formatted once more (db/sql-format.ts).
    queryFormat: queryFormat as unknown as mysql.PoolOptions['queryFormat'],
    ...extra,
  });
  // mysql2 hands this event its core (callback) connection, whatever the promise pool's typing says.
  pool.on('connection', (conn) => setupConnection(conn as unknown as Parameters<typeof setupConnection>[0]));
  // Statement texts stay within the server's max_allowed_packet (db/packet-budget.ts).
  trackPacketBudget(pool);
  return pool;
}

/** DATETIME(3) ↔ RFC 3339 (db/time.ts), where most db modules import them from. */
export { fromIso, toIso } from './time.js';

/** Connections whose ROLLBACK failed: dead (server restarted or connection lost). */
const brokenConnections = new WeakSet<PooledConn>();

/** Marks a connection as unusable (e.g. it may still hold a named lock): destroyed on release. */
export function markBroken(conn: PooledConn): void {
  brokenConnections.add(conn);
}

/** Gives a pooled connection back, or destroys it when a transaction found it dead. */
export function releaseConnection(conn: PooledConn): void {
  if (brokenConnections.has(conn)) conn.destroy();
  else conn.release();
}

/** Tries of one transaction on a retryable error (db/errors.ts): enough for a multi-writer Galera
 * cluster's bursts of certification failures; more would only hold a request longer. */
export const TRANSACTION_TRIES = 8;

/** The kind of transaction, named in a comment on its START TRANSACTION, so whatever sees the
 * statements (the general query log, a wrapper of the pool) tells them apart without reading their SQL. */
export type TxPath = 'command' | 'submit' | 'frames' | 'claim' | 'sweep' | 'hello' | 'fire' | 'other';

/** Transactions rolled back on a deadlock or a lock-wait timeout and run again, for /metrics
 * (orbit_db_transaction_retries_total): a retry hides a deadlock from the caller, this count does not. */
export const transactionRetries = { deadlock: 0, lockWait: 0 };

/** Runs `fn` as one transaction on `conn`, again after a jittered pause on a retryable error (the
 * whole transaction was rolled back, so a retry cannot double an effect), but never once committed
 * (commitWithAll). An unknown outcome (connection lost) is rethrown. A connection whose ROLLBACK
 * fails is marked broken, unless the ROLLBACK's error is retryable: Galera answers so after a
 * certification failure (mysql-wsrep#39), and the connection is fine. */
export async function transactionOn<T>(conn: PooledConn, path: TxPath, fn: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    // START TRANSACTION goes with the first statement, the unread writes with the COMMIT (db/pipeline.ts).
    const tx = new Tx(conn);
    try {
      transactionStats.transactions++;
      await write(tx, `START TRANSACTION /* ${path} */`);
      const out = await fn(tx);
      if (!tx.committed) await tx.query('COMMIT');
      return out;
    } catch (err) {
      let broken = false;
      await conn.query('ROLLBACK').catch((e: unknown) => {
        if (isRetryableDbError(e)) return;
        broken = true;
        brokenConnections.add(conn);
      });
      if (isRetryableDbError(err) && attempt < TRANSACTION_TRIES && !broken && !tx.committed) {
        if (err.errno === MYSQL_ERRNO.DEADLOCK) transactionRetries.deadlock++;
        else transactionRetries.lockWait++;
        // Up to 5 ms × attempt: spreads the retries of transactions that collided on one row.
        await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
        continue;
      }
      throw err;
    }
  }
}

/** One transaction on a pooled connection (see transactionOn); `path` names its kind (default
 * 'other'). */
export async function withTransaction<T>(pool: Pool, fn: (tx: Tx) => Promise<T>): Promise<T>;
export async function withTransaction<T>(pool: Pool, path: TxPath, fn: (tx: Tx) => Promise<T>): Promise<T>;
export async function withTransaction<T>(pool: Pool, a: TxPath | ((tx: Tx) => Promise<T>), b?: (tx: Tx) => Promise<T>): Promise<T> {
  const [path, fn] = typeof a === 'function' ? (['other', a] as const) : ([a, b!] as const);
  const conn = await pool.getConnection();
  try {
    return await transactionOn(conn, path, fn);
  } finally {
    releaseConnection(conn);
  }
}

/** True when the database, not the code, refused (unreachable, or a retryable error that outlasted
 * transactionOn's retries): nothing committed or the outcome is unknown, so the caller may retry. */
export function isDatabaseRefusal(err: unknown): boolean {
  return isConnectionError(err) || isRetryableDbError(err);
}

/** True for errors that mean the database is unreachable or restarting (answer 503). */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; errno?: number; fatal?: boolean };
  if (e.fatal) return true;
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'PROTOCOL_CONNECTION_LOST', 'ETIMEDOUT', 'EPIPE', 'ER_SERVER_SHUTDOWN', 'ER_CON_COUNT_ERROR'].includes(e.code ?? '') ||
    e.errno === 1053 ||
    e.errno === 2006 ||
    e.errno === 2013
  );
}
