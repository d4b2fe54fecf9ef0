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

/**
 * One pool per process. Every connection it opens first runs Orbit's session settings (sql_mode,
 * READ COMMITTED: db/session-setup.ts), whatever the server's defaults. uint64 columns (tokens, revisions, sequences) come back as decimal
 * strings (supportBigNumbers + bigNumberStrings) so they never pass through a float; DATETIME
 * columns come back as strings and are formatted as RFC 3339 by `toIso`. Every time the database
 * stores is UTC_TIMESTAMP(3), so the session time zone does not matter.
 */
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
    // Transactions send their unread writes with their next statement (db/pipeline.ts). Every
    // value still goes through mysql2's escaping (query with values, or format): no statement
    // text is built from input.
    multipleStatements: true,
    // mysql2's promise wrapper captures a stack trace per query for nicer async errors, a large
    // share of the gateway's CPU under load. SQL errors still carry the statement.
    trace: false,
    // Prepared statements (readFixedShape, the `execute` calls) stay cached per connection, by
    // text. mysql2's default (16 000 per connection) could, over 16 connections and several
    // nodes, exhaust the server's max_prepared_stmt_count (16 382 by default, server-wide): past
    // 256 the least recently used is closed. Orbit's fixed-shape texts number in the dozens.
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

/** Tries of one transaction (the first run and its retries) on a retryable error: a deadlock
 * victim, a Galera certification failure or a lock wait timeout. Enough for a multi-writer Galera
 * cluster's bursts of certification failures; more would only hold a request longer. */
export const TRANSACTION_TRIES = 8;

/** Which kind of transaction this is. Its START TRANSACTION names it in a trailing SQL comment, so
 * whatever sees the statements — the server's general query log, a client-side wrapper of the pool
 * (the retry tests fail one kind of transaction through one) — tells a claim round from a frame
 * batch or a sweep without reading their SQL. */
export type TxPath = 'command' | 'submit' | 'frames' | 'claim' | 'sweep' | 'hello' | 'fire' | 'other';

/** Process totals read by /metrics (orbit_db_transaction_retries_total): transactions InnoDB rolled
 * back on a deadlock (1213) or a lock-wait timeout (1205, also a NOWAIT lock that was held) and
 * transactionOn ran again. The fixed lock order (docs/design.md) keeps deadlocks out; a retry
 * hides one from the caller, this count does not. */
export const transactionRetries = { deadlock: 0, lockWait: 0 };

/**
 * Runs `fn` as one transaction on `conn`. A retryable error (db/errors.ts: deadlock, Galera
 * certification failure, lock wait timeout) runs it again, at most TRANSACTION_TRIES times in all,
 * after a jittered pause: the server rolled the whole transaction back (transactionOn rolls back
 * what a lock wait timeout left), so a retry cannot double an effect. Never after commitWithAll(): a
 * committed transaction is not run again, whatever failed after it. A failure whose outcome is
 * unknown (connection lost, possibly during COMMIT) is not a retryable error and is rethrown. A
 * connection whose ROLLBACK fails is marked broken (see releaseConnection) and the error
 * rethrown — except a ROLLBACK answered with a retryable error, which Galera sends after a
 * certification failure (mysql-wsrep#39): that transaction is gone and the connection is fine.
 */
export async function transactionOn<T>(conn: PooledConn, path: TxPath, fn: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    // START TRANSACTION goes with the first statement, the unread writes with the COMMIT
    // (db/pipeline.ts): a transaction of n read statements costs n + 1 round trips, not n + 2+.
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

/** savepoint(name): marks a point of the running transaction that rollbackToSavepoint returns to
 * (one item of a batched transaction undone alone). `name` is a constant identifier. */
export async function savepoint(tx: Tx, name: string): Promise<void> {
  await tx.query(`SAVEPOINT ${name}`);
}

/** rollbackToSavepoint(name): undoes what the transaction did since savepoint(name); the row locks
 * it took meanwhile stay held to the end of the transaction (InnoDB). */
export async function rollbackToSavepoint(tx: Tx, name: string): Promise<void> {
  await tx.query(`ROLLBACK TO SAVEPOINT ${name}`);
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

/** True when the database, not the code, refused: unreachable, or a deadlock, certification
 * failure or lock wait timeout that outlasted transactionOn's retries (db/errors.ts). Nothing of
 * the refused transaction committed (or its outcome is unknown), so the caller may retry
 * (UNAVAILABLE), and it is no bug. */
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
