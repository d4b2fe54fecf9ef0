// A tap on a mysql2 pool, for tests that fail or watch a transaction at one of its statements: it
// wraps the connections the pool hands out (query and execute), so the server code runs as it
// does in production and sees the database's own answers. Two uses:
//   - setHook(hook): the hook is offered every statement of a transaction — from its START
//     TRANSACTION to its COMMIT and what the caller reads after it, until a ROLLBACK or the
//     connection goes back to the pool; prepared ones formatted — with the connection's thread id;
//     a statement it returns is sent right before that one, in the same text: a failing one aborts
//     the transaction there, a ROLLBACK undoes what came before while the rest of the text runs;
//   - failTransactions(path, errno, n): the next n transactions of that kind (db/pool.ts TxPath,
//     named in their START TRANSACTION) fail right after it with that MariaDB error, raised by the
//     server (SIGNAL), so a retry path meets the real error packet, not an object made up here.
// Compiled with the server (dist/bench/), because the fault gateway (bench/fault-gateway.ts) runs
// it in a gateway process; in-process tests import it as source.
import type { FieldPacket, PoolConnection, QueryResult } from 'mysql2/promise';
import type { Pool } from '../server/db/pool.js';

/** See the module comment: null sends the statement as it is. */
export type StatementHook = (statement: string, threadId: number) => string | null;

/** The pipeline (db/pipeline.ts) joins the statements of one round trip with this; a formatted
 * value never holds a raw newline (mysql2 escapes it), so it splits them back. */
const JOIN = ';\n';
const START = /^START TRANSACTION \/\* ([a-z]+) \*\/$/;

export class PoolTap {
  private hook: StatementHook | null = null;
  /** path → the error number and how many more transactions of that path fail with it. */
  private readonly failing = new Map<string, { errno: number; left: number }>();

  /** Offers every statement of a transaction to `hook` from now on (null: to none). */
  setHook(hook: StatementHook | null): void {
    this.hook = hook;
  }

  /** The next `n` transactions of `path` fail with MariaDB error `errno` (n = 0 disarms). */
  failTransactions(path: string, errno: number, n: number): void {
    if (!Number.isInteger(errno) || !Number.isInteger(n)) throw new Error(`not an error number and count: ${errno}, ${n}`);
    this.failing.set(path, { errno, left: n });
  }

  /** Taps the connections `pool` hands out from now on (the same pool object, so what the server
   * keys by it — its packet budget — stays its own). */
  attach(pool: Pool): Pool {
    const getConnection = pool.getConnection.bind(pool);
    pool.getConnection = async () => this.wrap(await getConnection());
    return pool;
  }

  /** The SIGNAL that fails a transaction of `path` now, or null (counts the armed ones down). */
  private failure(path: string): string | null {
    const f = this.failing.get(path);
    if (!f || f.left <= 0) return null;
    f.left--;
    return `SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = ${f.errno}, MESSAGE_TEXT = 'failed by the pool tap'`;
  }

  private wrap(conn: PoolConnection): PoolConnection {
    const query = conn.query.bind(conn) as (sql: unknown, values?: unknown) => Promise<[unknown, unknown]>;
    const execute = conn.execute.bind(conn) as (...a: unknown[]) => Promise<unknown>;
    /** After a START TRANSACTION, until a ROLLBACK (this wrapper is the connection's until its
     * release: the next checkout gets a new one). */
    let inTx = false;
    /** The error a failing transaction's next statement is preceded by. */
    let failNext: string | null = null;
    /** The statement to send before `s`, if any (and the transaction state after it). */
    const before = (s: string): string | null => {
      const text = s.trim();
      const start = START.exec(text);
      if (!inTx && !start) return null;
      if (text === 'ROLLBACK') {
        inTx = false;
        failNext = null;
        return null;
      }
      inTx = true;
      const failing = failNext;
      failNext = start ? this.failure(start[1]!) : null;
      return failing ?? this.hook?.(s, conn.threadId) ?? null;
    };
    conn.query = (async (sql: unknown, values?: unknown) => {
      if (typeof sql !== 'string' || (values !== undefined && !inTx)) return query(sql, values);
      const statements = (values === undefined ? sql : conn.format(sql, values as unknown[])).split(JOIN);
      const sent: string[] = [];
      /** Indices in `sent` of the caller's statements. */
      const own: number[] = [];
      for (const s of statements) {
        const injected = before(s);
        if (injected !== null) sent.push(injected);
        own.push(sent.push(s) - 1);
      }
      if (sent.length === statements.length) return query(sql, values);
      const [results, fields] = (await query(sent.join(JOIN))) as [QueryResult[], FieldPacket[][]];
      if (results.length !== sent.length) throw new Error(`pool tap: ${sent.length} statements sent, ${results.length} results`);
      if (statements.length === 1) return [results[own[0]!], fields[own[0]!]];
      return [own.map((i) => results[i]), own.map((i) => fields[i])];
    }) as PoolConnection['query'];
    conn.execute = (async (sql: string, values?: unknown[]) => {
      if (!inTx) return execute(sql, values);
      const injected = before(conn.format(sql, values ?? []));
      if (injected !== null) await query(injected);
      return execute(sql, values);
    }) as PoolConnection['execute'];
    return conn;
  }
}
